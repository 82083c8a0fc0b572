package nodesim

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/wire"
)

// node is one simulated client. Its long-poll goroutine is the only
// goroutine it keeps; heartbeats, task transitions and status flushes run
// from timers (a goroutine only while they work).
type node struct {
	sim    *Sim
	id     string
	secret string
	api    *api.Node

	mu         sync.Mutex
	server     int // index of the server it talks to; guarded by mu
	ttl        time.Duration
	lastBeat   time.Time
	registered chan struct{} // closed on the first successful registration
	regOnce    sync.Once
	allocs     map[string]*simAlloc
	wake       *time.Timer // next task transition or health decision; or nil
	wakeAt     time.Time
	pending    map[string]*api.Allocation // reports not yet sent
	flushTimer *time.Timer                // a scheduled flush, or nil
	inFlight   bool                       // a flush is sending
	urgent     bool                       // a pending report carries a new health verdict
	stopped    bool
}

func (n *node) serverIdx() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.server
}

// failover moves the node to the next server after a network error or a 5xx.
func (n *node) failover(err error) {
	var se *wire.StatusError
	if errors.As(err, &se) && se.Code < 500 {
		return
	}
	n.mu.Lock()
	n.server++
	n.mu.Unlock()
}

// registerLoop registers the node, retrying with backoff, then arms its
// heartbeat.
func (n *node) registerLoop(ctx context.Context) {
	failures := 0
	for ctx.Err() == nil {
		resp, err := n.sim.conn.register(ctx, n.serverIdx(), n.api, n.secret)
		if err == nil {
			n.sim.stats.registered.Add(1)
			n.mu.Lock()
			n.ttl = n.sim.ttlOr(resp.HeartbeatTTL)
			n.lastBeat = time.Now()
			n.mu.Unlock()
			n.regOnce.Do(func() { close(n.registered) })
			n.armHeartbeat(ctx)
			return
		}
		if ctx.Err() != nil {
			return
		}
		n.failover(err)
		failures++
		n.sim.logger.Debug("registration failed; retrying", "node", n.api.Name, "error", err)
		sleepCtx(ctx, backoff(failures))
	}
}

// armHeartbeat schedules the next heartbeat at half the TTL less jitter,
// as the client agent does.
func (n *node) armHeartbeat(ctx context.Context) {
	n.mu.Lock()
	ttl := n.ttl
	n.mu.Unlock()
	half := ttl / 2
	d := half - time.Duration(float64(half)*n.sim.cfg.HeartbeatJitter*rand.Float64())
	time.AfterFunc(d, func() { n.heartbeat(ctx) })
}

func (n *node) heartbeat(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	start := time.Now()
	resp, err := n.sim.conn.heartbeat(ctx, n.serverIdx(), n.id, n.secret)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		n.sim.stats.heartbeatErrors.Add(1)
		n.sim.logger.Debug("heartbeat failed", "node", n.api.Name, "error", err)
		var se *wire.StatusError
		if errors.As(err, &se) && se.Code == http.StatusNotFound {
			n.sim.logger.Warn("server does not know the node; registering again", "node", n.api.Name)
			go n.registerLoop(ctx)
			return
		}
		n.failover(err)
		time.AfterFunc(time.Second, func() { n.heartbeat(ctx) })
		return
	}
	end := time.Now()
	n.mu.Lock()
	if late := end.Sub(n.lastBeat); late > n.ttl+n.sim.cfg.Grace {
		n.sim.stats.missed.Add(1)
	}
	n.lastBeat = end
	n.ttl = n.sim.ttlOr(resp.HeartbeatTTL)
	n.mu.Unlock()
	n.sim.stats.heartbeat(end.Sub(start))
	n.armHeartbeat(ctx)
}

// pollLoop long-polls the node's allocations and applies each list.
func (n *node) pollLoop(ctx context.Context) {
	select {
	case <-ctx.Done():
		return
	case <-n.registered:
	}
	var index uint64
	failures := 0
	for ctx.Err() == nil {
		list, idx, err := n.sim.conn.allocs(ctx, n.serverIdx(), n.id, n.secret, index, n.sim.cfg.AllocWait)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			n.failover(err)
			failures++
			sleepCtx(ctx, backoff(failures))
			continue
		}
		failures = 0
		index = idx
		n.apply(ctx, list, time.Now())
	}
}

// apply diffs the server's list with the node's allocations by ID and
// AllocModifyIndex, as the client agent does, then steps the simulation.
func (n *node) apply(ctx context.Context, list []*api.Allocation, now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	seen := make(map[string]bool, len(list))
	for _, a := range list {
		seen[a.ID] = true
		cur, ok := n.allocs[a.ID]
		switch {
		case !ok:
			n.allocs[a.ID] = newSimAlloc(a, now)
		case a.AllocModifyIndex > cur.modifyIndex:
			cur.update(a, now)
		}
	}
	for id := range n.allocs {
		if !seen[id] {
			delete(n.allocs, id) // collected by the servers
			delete(n.pending, id)
		}
	}
	n.stepLocked(ctx, now)
}

// stepLocked computes every allocation's report at now, queues the changed
// ones for the flusher, and arms the wake timer for the next transition.
func (n *node) stepLocked(ctx context.Context, now time.Time) {
	if n.stopped {
		return
	}
	var next time.Time
	for _, a := range n.allocs {
		if a.remembered {
			continue
		}
		rep, at := a.report(now)
		if sig := signature(rep); sig != a.lastSent {
			if rep.DeploymentStatus != nil && rep.DeploymentStatus.Healthy != nil &&
				!strings.Contains(a.lastSent, "|healthy=") {
				n.urgent = true
			}
			a.lastSent = sig
			n.pending[a.id] = rep
		}
		if !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	if !next.IsZero() && (n.wakeAt.IsZero() || !n.wakeAt.Equal(next)) {
		n.wakeAt = next
		d := max(next.Sub(now), 0)
		if n.wake == nil {
			n.wake = time.AfterFunc(d, func() { n.onWake(ctx) })
		} else {
			n.wake.Reset(d)
		}
	}
	n.scheduleFlushLocked(ctx)
}

// scheduleFlushLocked arranges for the pending reports to be sent after
// UpdateInterval, or at once when one carries a new deployment-health
// verdict (the client agent's flush does the same: a health change is what
// lets the next wave of a rollout go). While a send is in flight, the
// flush that ends it schedules the next.
func (n *node) scheduleFlushLocked(ctx context.Context) {
	if len(n.pending) == 0 || n.inFlight || ctx.Err() != nil {
		return
	}
	d := n.sim.cfg.UpdateInterval
	if n.urgent {
		d = 0
	}
	if n.flushTimer != nil {
		if d == 0 {
			n.flushTimer.Reset(0)
		}
		return
	}
	n.flushTimer = time.AfterFunc(d, func() { n.flush(ctx) })
}

func (n *node) onWake(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.wakeAt = time.Time{}
	n.stepLocked(ctx, time.Now())
}

// flush sends the pending reports in one call, putting them back (unless
// superseded) when the call fails.
func (n *node) flush(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	n.mu.Lock()
	if n.inFlight || len(n.pending) == 0 { // a timer reset after it fired
		n.mu.Unlock()
		return
	}
	n.flushTimer, n.inFlight, n.urgent = nil, true, false
	batch := make([]*api.Allocation, 0, len(n.pending))
	for _, a := range n.pending {
		batch = append(batch, a)
	}
	sort.Slice(batch, func(i, j int) bool { return batch[i].ID < batch[j].ID })
	n.pending = map[string]*api.Allocation{}
	n.mu.Unlock()

	err := n.sim.conn.updateAllocs(ctx, n.serverIdx(), n.id, n.secret, batch)
	if err == nil {
		n.sim.stats.updates.Add(1)
	} else if ctx.Err() == nil {
		n.sim.stats.updateErrors.Add(1)
		n.sim.logger.Debug("allocation update failed", "node", n.api.Name, "error", err)
		n.failover(err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.inFlight = false
	if err != nil && ctx.Err() == nil {
		for _, a := range batch {
			if _, newer := n.pending[a.ID]; !newer && n.allocs[a.ID] != nil {
				n.pending[a.ID] = a
			}
		}
		n.urgent = false // a failed send retries after the interval
	}
	n.scheduleFlushLocked(ctx)
}

// backoff is the retry delay after failures consecutive failures: 250ms
// doubling up to 10s, with jitter.
func backoff(failures int) time.Duration {
	d := 250 * time.Millisecond << min(failures-1, 6)
	d = min(d, 10*time.Second)
	return d/2 + rand.N(d/2+1)
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
