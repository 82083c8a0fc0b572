package drivers

import (
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

func TestStopEscalating(t *testing.T) {
	t.Run("exits on the first signal", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			done := make(chan struct{})
			var sent []syscall.Signal
			escalated, err := StopEscalating(done, syscall.SIGINT, 5*time.Second, time.Second, func(s syscall.Signal) error {
				sent = append(sent, s)
				close(done)
				return nil
			})
			require.NoError(t, err)
			require.False(t, escalated)
			require.Equal(t, []syscall.Signal{syscall.SIGINT}, sent)
		})
	})
	t.Run("escalates to SIGKILL after the timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			done := make(chan struct{})
			start := time.Now()
			var sent []syscall.Signal
			escalated, err := StopEscalating(done, syscall.SIGTERM, 5*time.Second, time.Second, func(s syscall.Signal) error {
				sent = append(sent, s)
				if s == syscall.SIGKILL {
					close(done)
				}
				return nil
			})
			require.NoError(t, err)
			require.True(t, escalated)
			require.Equal(t, []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL}, sent)
			require.Equal(t, 5*time.Second, time.Since(start))
		})
	})
	t.Run("a task that survives SIGKILL", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			_, err := StopEscalating(make(chan struct{}), syscall.SIGTERM, time.Second, time.Second, func(syscall.Signal) error { return nil })
			require.ErrorIs(t, err, ErrStillRunning)
		})
	})
}
