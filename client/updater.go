package client

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/helper/apiconv"
	"github.com/drover-project/drover/nomad/structs"
)

// pendingUpdates coalesces the alloc runners' status updates by alloc ID
// until the flush loop sends them. Updates are converted to their wire form
// as they arrive, so nothing is shared with the runner that sent them. Safe
// for concurrent use.
type pendingUpdates struct {
	mu   sync.Mutex
	byID map[string]*api.Allocation // latest update per alloc; guarded by mu
	// health: a pending update carries a deployment-health verdict;
	// guarded by mu.
	health bool

	// kick has room for one token: a flush is wanted.
	kick chan struct{}
}

func newPendingUpdates() *pendingUpdates {
	return &pendingUpdates{byID: map[string]*api.Allocation{}, kick: make(chan struct{}, 1)}
}

// add records what u reports (see apiconv.AllocUpdateToAPI), replacing an unsent
// update of the same allocation. It is the alloc runners' StateUpdater.
func (p *pendingUpdates) add(u *structs.Allocation) {
	p.addAPI(apiconv.AllocUpdateToAPI(u))
}

func (p *pendingUpdates) addAPI(u *api.Allocation) {
	p.mu.Lock()
	p.byID[u.ID] = u
	if u.DeploymentStatus != nil && u.DeploymentStatus.Healthy != nil {
		p.health = true
	}
	p.mu.Unlock()
	p.wake()
}

// takeHealth reports whether a health verdict was added since the last
// call, and clears the mark.
func (p *pendingUpdates) takeHealth() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.health
	p.health = false
	return h
}

func (p *pendingUpdates) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// take removes and returns every pending update, sorted by alloc ID.
func (p *pendingUpdates) take() []*api.Allocation {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*api.Allocation, 0, len(p.byID))
	for _, u := range p.byID {
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	p.byID = map[string]*api.Allocation{}
	return out
}

// requeue puts back the updates of a batch that failed to send, except
// those superseded by a newer add meanwhile and those keep rejects. It
// reports how many were put back.
func (p *pendingUpdates) requeue(failed []*api.Allocation, keep func(allocID string) bool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, u := range failed {
		if _, newer := p.byID[u.ID]; newer || (keep != nil && !keep(u.ID)) {
			continue
		}
		p.byID[u.ID] = u
		n++
	}
	return n
}

// len returns the number of pending updates.
func (p *pendingUpdates) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.byID)
}

// flushLoop sends pending updates, at most once per flushInterval, retrying
// failed batches with backoff until ctx ends. A deployment-health verdict
// is sent without waiting for the interval: it is what lets the next wave
// of a rollout go.
func (c *Client) flushLoop(ctx context.Context) {
	var last time.Time
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.updates.kick:
		}
		wait := c.cfg.timing.flushInterval - time.Since(last)
		if c.updates.takeHealth() {
			wait = 0
		}
		if failures > 0 {
			wait = max(wait, backoff(c.cfg.timing.retry, c.cfg.timing.maxRetry, failures))
		}
		if !sleepCtx(ctx, wait) {
			return
		}
		last = time.Now()
		if err := c.flushOnce(ctx); err != nil {
			failures++
			c.logger.Warn("failed to send allocation updates; will retry", "error", err, "failures", failures)
			continue
		}
		failures = 0
	}
}

// flushOnce sends every pending update in one call. On failure the updates
// of allocations the client still tracks are put back and a retry is
// kicked; updates of allocations the client has forgotten (collected by the
// server) are dropped, since the server would refuse them forever.
func (c *Client) flushOnce(ctx context.Context) error {
	b := c.updates.take()
	if len(b) == 0 {
		return nil
	}
	if _, err := c.rpc.updateAllocs(ctx, c.NodeID(), b); err != nil {
		if c.updates.requeue(b, c.tracks) > 0 {
			c.updates.wake()
		}
		return err
	}
	c.logger.Trace("sent allocation updates", "count", len(b))
	return nil
}

// backoff returns first × 2^(failures-1), capped at most.
func backoff(first, most time.Duration, failures int) time.Duration {
	d := first
	for i := 1; i < failures && d < most; i++ {
		d *= 2
	}
	return min(d, most)
}

// sleepCtx waits d (nothing when d <= 0); it reports false if ctx ended.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
