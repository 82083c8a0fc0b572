package client

import (
	"context"

	"github.com/hashicorp/go-hclog"
)

// pollLoop waits for the node's first registration, then long-polls until
// ctx ends: poll is given the index its last success returned (0 at
// first) and returns the next. A failure is logged at level as failMsg
// and retried after a growing backoff.
func (c *Client) pollLoop(ctx context.Context, level hclog.Level, failMsg string, poll func(ctx context.Context, index uint64) (uint64, error)) {
	select {
	case <-ctx.Done():
		return
	case <-c.registered:
	}
	var index uint64
	failures := 0
	for ctx.Err() == nil {
		next, err := poll(ctx, index)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			wait := backoff(c.cfg.timing.retry, c.cfg.timing.maxRetry, failures)
			c.logger.Log(level, failMsg, "error", err, "retry_in", wait)
			sleepCtx(ctx, wait)
			continue
		}
		failures = 0
		index = next
	}
}
