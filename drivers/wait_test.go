package drivers

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWaitResult(t *testing.T) {
	done := make(chan struct{})
	ch := WaitResult(context.Background(), done, func() *ExitResult { return &ExitResult{ExitCode: 3} })
	close(done)
	res, ok := <-ch
	require.True(t, ok)
	require.Equal(t, 3, res.ExitCode)
	_, ok = <-ch
	require.False(t, ok, "exactly one result, then closed")

	ctx, cancel := context.WithCancel(context.Background())
	ch = WaitResult(ctx, make(chan struct{}), func() *ExitResult { return &ExitResult{} })
	cancel()
	_, ok = <-ch
	require.False(t, ok, "a cancelled wait closes without a result")
}
