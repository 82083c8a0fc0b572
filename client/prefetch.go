package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/wire"
)

// Ahead-of-wave prefetch, the client side (the server side and the design
// are in nomad/prefetch): the client long-polls its node's prefetch
// directives, pulls each directive's images through the driver's prepare
// step (no container is created), reports done or failed, and cancels the
// pull of a directive that disappears (its deployment failed, was
// cancelled or ended). An image pulled ahead is leased
// (imagegc.LeaseAhead) while its directive is listed. Each pull is logged
// and shown as Driver events on the node's running allocation of the job,
// which keeps serving throughout.

// aheadProgressEvery is the least time between two progress log lines of
// one pull ahead.
const aheadProgressEvery = 5 * time.Second

// aheadPulls is the client's pulls ahead of the wave, by deployment ID.
type aheadPulls struct {
	mu   sync.Mutex
	jobs map[string]*aheadPull // guarded by mu

	// Counters since the client started (see PrefetchStats).
	started, finished, failed, cancelled atomic.Int64
}

// aheadPull is one directive being pulled or pulled.
type aheadPull struct {
	dir    *structs.PrefetchDirective // immutable
	cancel context.CancelFunc
	done   chan struct{} // closed when the pull goroutine returns

	// Guarded by aheadPulls.mu.
	state    string    // structs.PrefetchState*
	err      string    // why it failed
	imageIDs []string  // the pulled images' IDs, once done
	resentAt time.Time // when the result was last sent again to a server that lists it as pulling
}

// PrefetchStats counts the client's pulls ahead of the wave.
type PrefetchStats struct {
	Started, Finished, Failed, Cancelled int64
}

// PrefetchStats returns the counts of pulls ahead of the wave since the
// client started.
func (c *Client) PrefetchStats() PrefetchStats {
	p := &c.ahead
	return PrefetchStats{Started: p.started.Load(), Finished: p.finished.Load(), Failed: p.failed.Load(), Cancelled: p.cancelled.Load()}
}

// prefetchLoop long-polls the node's prefetch directives once the node is
// registered and applies each list, until ctx ends; then it cancels every
// pull in flight.
func (c *Client) prefetchLoop(ctx context.Context) {
	defer c.applyPrefetch(ctx, nil)
	c.pollLoop(ctx, hclog.Debug, "failed to fetch prefetch directives; retrying", func(pctx context.Context, index uint64) (uint64, error) {
		out, err := c.rpc.prefetchDirectives(pctx, c.NodeID(), index, c.cfg.timing.allocWait)
		if err != nil {
			return 0, err
		}
		c.applyPrefetch(ctx, out.Directives)
		return out.Index, nil
	})
}

// applyPrefetch starts the pulls of new directives, cancels those whose
// directive is gone, and reports again a finished pull the server still
// lists as pulling (a new leader).
func (c *Client) applyPrefetch(ctx context.Context, dirs []*structs.PrefetchDirective) {
	p := &c.ahead
	want := make(map[string]*structs.PrefetchDirective, len(dirs))
	for _, d := range dirs {
		if d != nil && d.DeploymentID != "" {
			want[d.DeploymentID] = d
		}
	}
	p.mu.Lock()
	if p.jobs == nil {
		p.jobs = map[string]*aheadPull{}
	}
	var resend []*aheadPull
	for id, j := range p.jobs {
		if _, ok := want[id]; !ok {
			j.cancel()
			delete(p.jobs, id)
		}
	}
	for id, d := range want {
		j, ok := p.jobs[id]
		switch {
		case !ok && ctx.Err() == nil:
			jctx, cancel := context.WithCancel(ctx)
			j = &aheadPull{dir: d, cancel: cancel, done: make(chan struct{}), state: structs.PrefetchStatePulling}
			p.jobs[id] = j
			c.loops.Add(1)
			go func() {
				defer c.loops.Done()
				c.runAheadPull(jctx, j)
			}()
		case ok && d.State == structs.PrefetchStatePulling && j.state != structs.PrefetchStatePulling &&
			time.Since(j.resentAt) >= c.cfg.timing.maxRetry:
			// At most once per maxRetry: a server that keeps listing it
			// must not make the client spin.
			j.resentAt = time.Now()
			resend = append(resend, j)
		}
	}
	p.mu.Unlock()
	for _, j := range resend {
		c.loops.Add(1)
		go func() {
			defer c.loops.Done()
			c.reportAheadPull(ctx, j)
		}()
	}
	c.kickImages()
}

// aheadImages returns the IDs of the images pulled ahead for directives
// still listed.
func (c *Client) aheadImages() []string {
	p := &c.ahead
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, j := range p.jobs {
		if j.state == structs.PrefetchStateDone {
			out = append(out, j.imageIDs...)
		}
	}
	sort.Strings(out)
	return out
}

// runAheadPull pulls j's images in order, then reports the result until
// the server takes it or ctx ends. A cancelled ctx (the directive is gone)
// ends it without a report.
func (c *Client) runAheadPull(ctx context.Context, j *aheadPull) {
	defer close(j.done)
	p := &c.ahead
	d := j.dir
	log := c.logger.Named("prefetch").With("deployment_id", d.DeploymentID, "job", d.JobID, "version", d.JobVersion)
	p.started.Add(1)
	var ids []string
	var err error
	for _, t := range d.Tasks {
		var id string
		id, err = c.pullAhead(ctx, d, t, log)
		if err != nil {
			break
		}
		if id != "" {
			ids = append(ids, id)
		}
	}
	if ctx.Err() != nil {
		p.cancelled.Add(1)
		log.Info("pull ahead of the wave cancelled: its directive is gone (the deployment ended) or the client is stopping")
		c.emitAhead(d, "", "Pull ahead of the wave cancelled (deployment "+shortID(d.DeploymentID)+")")
		return
	}
	p.mu.Lock()
	if err != nil {
		j.state, j.err = structs.PrefetchStateFailed, err.Error()
	} else {
		j.state, j.imageIDs = structs.PrefetchStateDone, ids
	}
	p.mu.Unlock()
	if err != nil {
		p.failed.Add(1)
	} else {
		p.finished.Add(1)
	}
	c.kickImages()
	c.reportAheadPull(ctx, j)
}

// pullAhead pulls one task's image through its driver's prepare step and
// returns the image's ID when the client can resolve it (for the lease).
func (c *Client) pullAhead(ctx context.Context, d *structs.PrefetchDirective, t *structs.PrefetchTask, log interface {
	Info(string, ...any)
	Warn(string, ...any)
}) (string, error) {
	drv, err := c.drivers.Get(t.Driver)
	if err != nil {
		return "", err
	}
	prep, ok := drv.(drivers.Preparer)
	if !ok {
		return "", nil // nothing a driver without a prepare step could fetch
	}
	cfg := &drivers.TaskConfig{
		ID: "prefetch-" + shortID(d.DeploymentID) + "/" + t.Task, TaskName: t.Task, TaskGroup: t.Group,
		JobName: d.JobID, Namespace: d.Namespace, Config: t.Config,
	}
	start := time.Now()
	log.Info("pulling ahead of the wave", "task", t.Task, "image", t.Image)
	c.emitAhead(d, t.Task, "Pulling image "+t.Image+" ahead of the wave (deployment "+shortID(d.DeploymentID)+")")
	var last time.Time
	progress := func(pr drivers.PrepareProgress) {
		if now := time.Now(); now.Sub(last) >= aheadProgressEvery {
			last = now
			log.Info("pull ahead of the wave in progress", "task", t.Task, "progress", pr.Message, "percent", fmt.Sprintf("%.0f", pr.Percent()))
		}
	}
	if err := prep.PrepareTask(ctx, cfg, progress); err != nil {
		if ctx.Err() == nil {
			log.Warn("pull ahead of the wave failed; the task's own prepare step will try again in its wave", "task", t.Task, "image", t.Image, "error", err)
			c.emitAhead(d, t.Task, fmt.Sprintf("Pull of image %s ahead of the wave failed: %v", t.Image, err))
		}
		return "", fmt.Errorf("task %q: %w", t.Task, err)
	}
	log.Info("pulled ahead of the wave", "task", t.Task, "image", t.Image, "duration", time.Since(start).Round(time.Millisecond))
	c.emitAhead(d, t.Task, "Pulled image "+t.Image+" ahead of the wave in "+time.Since(start).Round(time.Millisecond).String())
	if c.images == nil {
		return "", nil
	}
	if ref, _ := t.Config[dockerImageKey].(string); ref != "" {
		rctx, cancel := context.WithTimeout(ctx, imageIDTimeout)
		defer cancel()
		if id, err := c.images.drv.ImageID(rctx, ref); err == nil {
			return id, nil
		}
	}
	return "", nil
}

// emitAhead appends a Driver event to task (every task when "") of the
// node's live allocations of d's job at another version: the allocations
// that keep serving while the node pulls.
func (c *Client) emitAhead(d *structs.PrefetchDirective, task, msg string) {
	c.allocsMu.Lock()
	var runners []*allocEntry
	for _, e := range c.allocs {
		runners = append(runners, e)
	}
	c.allocsMu.Unlock()
	for _, e := range runners {
		if e.runner == nil {
			continue
		}
		a := e.runner.Alloc()
		if a.Namespace != d.Namespace || a.JobID != d.JobID || a.JobVersion == d.JobVersion || a.Terminal() {
			continue
		}
		for _, t := range dockerOrAllTasks(a) {
			if task == "" || t == task {
				e.runner.EmitDriverEvent(t, msg)
			}
		}
	}
}

// dockerOrAllTasks names the tasks of a's group.
func dockerOrAllTasks(a *structs.Allocation) []string {
	if a.Job == nil {
		return nil
	}
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	if tg == nil {
		return nil
	}
	out := make([]string, 0, len(tg.Tasks))
	for _, t := range tg.Tasks {
		out = append(out, t.Name)
	}
	return out
}

// reportAheadPull sends j's result until the server takes it, the
// directive goes or ctx ends.
func (c *Client) reportAheadPull(ctx context.Context, j *aheadPull) {
	p := &c.ahead
	p.mu.Lock()
	r := &structs.PrefetchReport{DeploymentID: j.dir.DeploymentID, State: j.state, Error: j.err}
	p.mu.Unlock()
	for failures := 0; ctx.Err() == nil; {
		err := c.rpc.prefetchReport(ctx, c.NodeID(), &wire.PrefetchReportRequest{Reports: []*structs.PrefetchReport{r}})
		if err == nil || isStatus(err, http.StatusBadRequest) {
			return
		}
		p.mu.Lock()
		_, listed := p.jobs[j.dir.DeploymentID]
		p.mu.Unlock()
		if !listed {
			return
		}
		failures++
		sleepCtx(ctx, backoff(c.cfg.timing.retry, c.cfg.timing.maxRetry, failures))
	}
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// prefetchDirectives is the blocking query for the node's prefetch
// directives.
func (s *serverConn) prefetchDirectives(ctx context.Context, nodeID string, index uint64, wait time.Duration) (*wire.PrefetchDirectives, error) {
	ctx, cancel := context.WithTimeout(ctx, wait+wait/16+callTimeout)
	defer cancel()
	q := url.Values{"index": {strconv.FormatUint(index, 10)}, "wait": {formatWait(wait)}}
	var out wire.PrefetchDirectives
	_, err := s.call(ctx, http.MethodGet, wire.NodePath(wire.RouteNodePrefetch, nodeID), q, nil, &out)
	return &out, err
}

func (s *serverConn) prefetchReport(ctx context.Context, nodeID string, req *wire.PrefetchReportRequest) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := s.call(ctx, http.MethodPut, wire.NodePath(wire.RouteNodePrefetch, nodeID), nil, req, nil)
	return err
}
