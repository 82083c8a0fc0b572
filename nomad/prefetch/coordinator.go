package prefetch

import (
	"context"
	"reflect"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// DefaultGrantTimeout bounds a grant the node never answers (a client
// without ahead-of-wave prefetch, say): its slot is freed after it.
const DefaultGrantTimeout = 10 * time.Minute

// Stats counts the leader's grants since the coordinator was created.
type Stats struct {
	// Started: grants made (a pull ahead of the wave began).
	Started int64
	// Finished: grants reported done.
	Finished int64
	// Failed: grants reported failed or timed out.
	Failed int64
	// Cancelled: grants withdrawn while pulling (the deployment ended, or
	// the node went down), so the node cancels the pull.
	Cancelled int64
}

// Coordinator publishes the prefetch directives of the active deployments
// while Run runs (on the leader). Its record is in memory only (see the
// package doc). Methods are safe for concurrent use.
type Coordinator struct {
	st           *state.StateStore
	logger       hclog.Logger
	now          func() time.Time
	grantTimeout time.Duration

	kick chan struct{} // room for one token: decide again

	mu        sync.Mutex
	progress  map[string]map[string]Progress // by deployment, node; guarded by mu
	byNode    map[string][]*structs.PrefetchDirective
	nodeIndex map[string]uint64 // index of each node's last change; guarded by mu
	index     uint64            // guarded by mu
	base      uint64            // the index a never-listed node has this term; guarded by mu
	wake      chan struct{}     // closed and replaced on every publication; guarded by mu
	stats     Stats             // guarded by mu
}

// NewCoordinator returns a coordinator over st; grantTimeout <= 0 is
// DefaultGrantTimeout.
func NewCoordinator(st *state.StateStore, logger hclog.Logger, now func() time.Time, grantTimeout time.Duration) *Coordinator {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	if grantTimeout <= 0 {
		grantTimeout = DefaultGrantTimeout
	}
	return &Coordinator{st: st, logger: logger.Named("prefetch"), now: now, grantTimeout: grantTimeout,
		kick: make(chan struct{}, 1), wake: make(chan struct{}), nodeIndex: map[string]uint64{}}
}

// Run decides and publishes until ctx ends: after every change of the
// deployments, the active deployments' allocations and jobs, or the nodes,
// after every report and when a grant times out. It starts with an empty
// record and clears the directives when it returns.
func (c *Coordinator) Run(ctx context.Context) {
	c.mu.Lock()
	c.progress = map[string]map[string]Progress{}
	// Indexes continue from the wall clock so that a client's index from
	// an earlier leader never equals a new one's.
	c.index = max(c.index, uint64(c.now().UnixNano()))
	c.base = c.index
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.progress = nil
		c.publishLocked(nil)
		c.mu.Unlock()
	}()
	for ctx.Err() == nil {
		ws := memdb.NewWatchSet()
		wakeAt, err := c.step(ws)
		if err != nil {
			c.logger.Error("reading state failed; retrying", "error", err)
			wakeAt = c.now().Add(5 * time.Second)
		}
		wctx, cancel := ctx, context.CancelFunc(func() {})
		if !wakeAt.IsZero() {
			wctx, cancel = context.WithDeadline(ctx, wakeAt)
		}
		ch := ws.WatchCh(wctx)
		select {
		case <-ctx.Done():
		case <-ch:
		case <-c.kick:
		}
		cancel()
	}
}

// step reads state, decides every deployment and publishes. A deployment
// whose job version prefetches nothing and that has no record is skipped
// without reading (or watching) its allocations: Decide would return
// nothing for it (Idle). The nodes are read once, and only when some
// deployment is decided.
func (c *Coordinator) step(ws memdb.WatchSet) (time.Time, error) {
	snap := c.st.Snapshot()
	deps, err := snap.Deployments(ws, "*")
	if err != nil {
		return time.Time{}, err
	}
	var nodes map[string]*structs.Node
	readNodes := func() error {
		if nodes != nil {
			return nil
		}
		nodeList, err := snap.Nodes(ws)
		if err != nil {
			return err
		}
		nodes = make(map[string]*structs.Node, len(nodeList))
		for _, n := range nodeList {
			nodes[n.ID] = n
		}
		return nil
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	var wakeAt time.Time
	var dirs []NodeDirective
	seen := map[string]bool{}
	for _, d := range deps {
		seen[d.ID] = true
		prog := c.progress[d.ID]
		if !d.Active() && prog == nil {
			continue
		}
		in := Input{Deployment: d, Progress: prog, GrantTimeout: c.grantTimeout}
		if d.Active() {
			if in.Job, err = snap.JobByIDAndVersion(ws, d.Namespace, d.JobID, d.JobVersion); err != nil {
				return time.Time{}, err
			}
		}
		if Idle(in) {
			delete(c.progress, d.ID)
			continue
		}
		if err := readNodes(); err != nil {
			return time.Time{}, err
		}
		in.Nodes = nodes
		if d.Active() {
			if in.Allocs, err = snap.AllocsByJob(ws, d.Namespace, d.JobID, false); err != nil {
				return time.Time{}, err
			}
		}
		res := Decide(in, now)
		c.account(d, prog, res)
		if len(res.Progress) == 0 {
			delete(c.progress, d.ID)
		} else {
			c.progress[d.ID] = res.Progress
		}
		dirs = append(dirs, res.Directives...)
		if !res.WakeAt.IsZero() && (wakeAt.IsZero() || res.WakeAt.Before(wakeAt)) {
			wakeAt = res.WakeAt
		}
	}
	for id, prog := range c.progress {
		if !seen[id] { // the deployment was deleted
			c.account(&structs.Deployment{ID: id}, prog, Result{})
			delete(c.progress, id)
		}
	}
	c.publishLocked(dirs)
	return wakeAt, nil
}

// account logs and counts what a decision changed.
func (c *Coordinator) account(d *structs.Deployment, before map[string]Progress, res Result) {
	for _, id := range res.Granted {
		c.stats.Started++
		c.logger.Info("node may pull ahead of its wave", "deployment_id", d.ID, "node_id", id, "parallel", res.Parallel)
	}
	for _, id := range res.TimedOut {
		c.stats.Failed++
		c.logger.Warn("no prefetch report within the grant timeout; freeing the slot", "deployment_id", d.ID, "node_id", id)
	}
	for id, p := range before {
		if _, kept := res.Progress[id]; !kept && p.State == structs.PrefetchStatePulling {
			c.stats.Cancelled++
			c.logger.Info("pull ahead of the wave withdrawn", "deployment_id", d.ID, "node_id", id, "deployment_status", d.Status)
		}
	}
}

// publishLocked replaces the directives by node, advancing the index of
// every node whose list changed, and wakes the waiting queries.
func (c *Coordinator) publishLocked(dirs []NodeDirective) {
	next := map[string][]*structs.PrefetchDirective{}
	for _, nd := range dirs {
		next[nd.NodeID] = append(next[nd.NodeID], nd.Directive)
	}
	changed := false
	for id := range unionKeys(c.byNode, next) {
		if !reflect.DeepEqual(c.byNode[id], next[id]) {
			if !changed {
				c.index++
				changed = true
			}
			c.nodeIndex[id] = c.index
		}
	}
	c.byNode = next
	if changed {
		close(c.wake)
		c.wake = make(chan struct{})
	}
}

func unionKeys[V any](a, b map[string]V) map[string]bool {
	out := make(map[string]bool, len(a)+len(b))
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// Directives answers a node's blocking query: it returns the node's
// directives and their index once the index differs from minIndex (a new
// leader's index differs from any earlier one), or when wait or ctx ends.
func (c *Coordinator) Directives(ctx context.Context, nodeID string, minIndex uint64, wait time.Duration) ([]*structs.PrefetchDirective, uint64) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		c.mu.Lock()
		idx, ch := c.nodeIndex[nodeID], c.wake
		if idx == 0 {
			idx = c.base
		}
		if idx != minIndex || minIndex == 0 {
			out := c.byNode[nodeID]
			c.mu.Unlock()
			return out, idx
		}
		c.mu.Unlock()
		select {
		case <-ch:
			continue
		case <-ctx.Done():
		case <-timer.C:
		}
		c.mu.Lock()
		out := c.byNode[nodeID]
		c.mu.Unlock()
		return out, idx
	}
}

// Report folds a node's reports into the record and decides again. A
// report for a deployment the coordinator has no record of is kept only
// when it says done (see ApplyReport); the next decision drops it if the
// deployment is not active.
func (c *Coordinator) Report(nodeID string, reports []*structs.PrefetchReport) {
	c.mu.Lock()
	if c.progress == nil { // not running: nothing to fold into
		c.mu.Unlock()
		return
	}
	for _, r := range reports {
		if r == nil || r.DeploymentID == "" {
			continue
		}
		before := c.progress[r.DeploymentID][nodeID]
		after := ApplyReport(c.progress[r.DeploymentID], nodeID, r)
		c.progress[r.DeploymentID] = after
		if before.State == structs.PrefetchStatePulling && after[nodeID].State != before.State {
			switch after[nodeID].State {
			case structs.PrefetchStateDone:
				c.stats.Finished++
				c.logger.Info("node pulled ahead of its wave", "deployment_id", r.DeploymentID, "node_id", nodeID)
			case structs.PrefetchStateFailed:
				c.stats.Failed++
				c.logger.Warn("node failed to pull ahead of its wave", "deployment_id", r.DeploymentID, "node_id", nodeID, "error", r.Error)
			}
		}
	}
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Stats returns the counts of grants.
func (c *Coordinator) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}
