package drivers

import "context"

// WaitResult is the channel every driver's WaitTask returns: it yields
// result() once done is closed, then closes; if ctx ends first it closes
// without a value.
func WaitResult(ctx context.Context, done <-chan struct{}, result func() *ExitResult) <-chan *ExitResult {
	ch := make(chan *ExitResult, 1)
	go func() {
		defer close(ch)
		select {
		case <-done:
			ch <- result()
		case <-ctx.Done():
		}
	}()
	return ch
}
