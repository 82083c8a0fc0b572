package clock

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRealClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := Real(nil)
		start := c.Now()
		fired := make(chan time.Time, 1)
		c.AfterFunc(5*time.Second, func() { fired <- time.Now() })
		stopped := c.AfterFunc(time.Second, func() { t.Error("a stopped timer fired") })
		require.True(t, stopped.Stop())
		require.False(t, stopped.Stop(), "stopping twice reports false")
		at := <-fired
		require.Equal(t, 5*time.Second, at.Sub(start))
	})
	fixed := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	require.Equal(t, fixed, Real(func() time.Time { return fixed }).Now())
}
