package deploymentwatcher

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// retryInterval is how long a deployment's goroutine waits, on the Clock,
// after a failed read or write before it rebuilds its machine from state.
const retryInterval = 5 * time.Second

// Backend is what the watcher needs from the server: raft writes and the
// state store. Writes return the raft index they were committed at.
type Backend interface {
	UpdateDeploymentStatus(req *structs.DeploymentStatusUpdateRequest) (uint64, error)
	PromoteDeployment(req *structs.DeploymentPromoteRequest) (uint64, error)
	CreateEvals(evals []*structs.Evaluation) (uint64, error)
	MarkJobStable(namespace, jobID string, version uint64) (uint64, error)
	State() *state.StateStore
	// Now is the time recorded in the requests the watcher sends.
	Now() time.Time
}

// Watcher drives one Machine per active deployment while enabled (on the
// leader). Each deployment has a goroutine that only waits, for a change of
// the deployment, its allocations or its job, or for the machine's wakeAt,
// then steps the machine and carries out its effects. A top-level goroutine
// starts those goroutines as deployments appear.
type Watcher struct {
	backend Backend
	logger  hclog.Logger
	clock   Clock
	gates   GateRunner // asks metric and webhook gates (gateio.go)

	toggleMu sync.Mutex // serialises SetEnabled

	mu      sync.Mutex
	cancel  context.CancelFunc // non-nil while enabled; guarded by mu
	watches map[string]*watch  // by deployment ID; guarded by mu
	wg      sync.WaitGroup     // every goroutine of the watcher
}

// watch is the goroutine of one deployment.
type watch struct {
	done chan struct{} // closed when the goroutine returns
}

func (w *watch) finished() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// New returns a disabled watcher.
func New(backend Backend, logger hclog.Logger, clock Clock) *Watcher {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &Watcher{backend: backend, logger: logger.Named("deployment_watcher"), clock: clock, gates: HTTPGates{}}
}

// SetGateRunner replaces the runner of metric and webhook gates (by
// default HTTPGates{}: no Prometheus, no webhook secret). Call it before
// SetEnabled.
func (w *Watcher) SetGateRunner(g GateRunner) { w.gates = g }

// SetEnabled starts (true) or stops (false) the watcher. Enabling rebuilds a
// machine from state for every active deployment, running or paused, with
// the progress deadlines state recorded, so that a new leader carries on
// where the old one stopped. Disabling returns once every goroutine of the
// watcher has returned. Both are idempotent.
func (w *Watcher) SetEnabled(enabled bool) {
	w.toggleMu.Lock()
	defer w.toggleMu.Unlock()
	w.mu.Lock()
	if enabled {
		if w.cancel == nil {
			ctx, cancel := context.WithCancel(context.Background())
			w.cancel, w.watches = cancel, map[string]*watch{}
			w.wg.Add(1)
			go func() {
				defer w.wg.Done()
				w.watchDeployments(ctx)
			}()
		}
		w.mu.Unlock()
		return
	}
	cancel := w.cancel
	w.cancel, w.watches = nil, nil
	w.mu.Unlock()
	if cancel != nil {
		cancel()
		w.wg.Wait()
	}
}

// watchDeployments starts a goroutine for every active deployment that has
// none, each time the deployments table changes.
func (w *Watcher) watchDeployments(ctx context.Context) {
	var index uint64
	for {
		res, idx, err := w.backend.State().BlockingQuery(ctx, index, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
			ds, err := snap.Deployments(ws, "*")
			return ds, snap.Index(state.TableDeployments), err
		})
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			w.logger.Error("failed to list deployments", "error", err)
			if !w.pause(ctx, retryInterval) {
				return
			}
			continue
		}
		w.sync(ctx, res.([]*structs.Deployment))
		index = idx
	}
}

// sync starts the goroutines of active deployments that have none, and
// forgets the finished goroutines of deployments that are no longer active.
// A finished goroutine of a deployment still active (its job moved on and
// the scheduler has yet to cancel it) is not restarted.
func (w *Watcher) sync(ctx context.Context, ds []*structs.Deployment) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watches == nil {
		return // disabled meanwhile
	}
	active := map[string]bool{}
	for _, d := range ds {
		active[d.ID] = d.Active()
		if !d.Active() || w.watches[d.ID] != nil {
			continue
		}
		wt := &watch{done: make(chan struct{})}
		w.watches[d.ID] = wt
		w.wg.Add(1)
		go func(id string) {
			defer w.wg.Done()
			defer close(wt.done)
			w.watchDeployment(ctx, id)
		}(d.ID)
	}
	for id, wt := range w.watches {
		if !active[id] && wt.finished() {
			delete(w.watches, id)
		}
	}
}

// watchDeployment runs the machine of deployment id until it stops or ctx
// ends. After an error it waits retryInterval and rebuilds the machine from
// state: the machine is level-triggered, so a rebuilt one redoes whatever
// did not happen.
func (w *Watcher) watchDeployment(ctx context.Context, id string) {
	log := w.logger.With("deployment_id", id)
	for {
		err := w.runMachine(ctx, id, log)
		if err == nil || ctx.Err() != nil {
			return
		}
		log.Warn("deployment watcher failed; retrying", "error", err)
		if !w.pause(ctx, retryInterval) {
			return
		}
	}
}

// runMachine builds the machine of deployment id from state and drives it.
// It returns nil when the machine stops or ctx ends.
func (w *Watcher) runMachine(ctx context.Context, id string, log hclog.Logger) error {
	obs, index, _, err := w.observe(ctx, id, 0, time.Time{})
	if err != nil || ctx.Err() != nil {
		return err
	}
	if obs.Deployment == nil {
		return nil
	}
	job := obs.Job
	m := NewMachine(obs.Deployment, job, w.clock.Now())
	effects, wakeAt := m.Step(Init{Allocs: obs.Allocs, Versions: obs.Versions}, w.clock.Now())
	for {
		for len(effects) > 0 {
			answers, err := w.execute(ctx, m.Deployment(), job, effects, log)
			if err != nil {
				return err
			}
			effects = nil
			for _, a := range answers {
				var out []Effect
				out, wakeAt = m.Step(a, w.clock.Now())
				effects = append(effects, out...)
			}
		}
		if m.Done() {
			return nil
		}
		var idx uint64
		var fired bool
		obs, idx, fired, err = w.observe(ctx, id, index, wakeAt)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		effects = nil
		if idx > index {
			index = idx
			for _, ev := range m.Events(obs) {
				var out []Effect
				out, wakeAt = m.Step(ev, w.clock.Now())
				effects = append(effects, out...)
			}
		}
		if fired {
			var out []Effect
			out, wakeAt = m.Step(Tick{Versions: obs.Versions}, w.clock.Now())
			effects = append(effects, out...)
		}
	}
}

// observe reads deployment id, its allocations, its job and the job's
// versions, blocking until that changes past index or until wakeAt (zero:
// no timer) passes on the clock; fired reports the latter.
func (w *Watcher) observe(ctx context.Context, id string, index uint64, wakeAt time.Time) (obs Observation, idx uint64, fired bool, err error) {
	qctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var rang atomic.Bool
	if !wakeAt.IsZero() {
		t := w.clock.AfterFunc(wakeAt.Sub(w.clock.Now()), func() {
			rang.Store(true)
			cancel()
		})
		defer t.Stop()
	}
	res, idx, err := w.backend.State().BlockingQuery(qctx, index, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
		return readObservation(ws, snap, id)
	})
	if err != nil {
		return Observation{}, 0, false, fmt.Errorf("read deployment: %w", err)
	}
	return res.(Observation), idx, rang.Load(), nil
}

// readObservation is the query behind observe. Its index is the highest
// ModifyIndex of what it read, so unrelated writes do not wake the machine.
func readObservation(ws memdb.WatchSet, snap *state.Snapshot, id string) (Observation, uint64, error) {
	d, err := snap.DeploymentByID(ws, id)
	if err != nil || d == nil {
		// Gone: the latest index is past any index seen before.
		return Observation{}, snap.LatestIndex(), err
	}
	obs := Observation{Deployment: d}
	if obs.Allocs, err = snap.AllocsByDeployment(ws, id); err != nil {
		return obs, 0, err
	}
	if obs.Job, err = snap.JobByID(ws, d.Namespace, d.JobID); err != nil {
		return obs, 0, err
	}
	if obs.Versions, err = snap.JobVersionsByID(ws, d.Namespace, d.JobID); err != nil {
		return obs, 0, err
	}
	idx := d.ModifyIndex
	for _, a := range obs.Allocs {
		idx = max(idx, a.ModifyIndex)
	}
	if obs.Job != nil {
		idx = max(idx, obs.Job.ModifyIndex)
	}
	for _, v := range obs.Versions {
		idx = max(idx, v.ModifyIndex)
	}
	return obs, idx, nil
}

// execute carries out effects for deployment d of job. A CreateEval right
// after an UpdateStatus or a Promote is committed with it, in one raft
// entry. Gate calls (QueryMetric, CallWebhook) are made in order and their
// answers returned, for the caller to step. It stops at the first error.
func (w *Watcher) execute(ctx context.Context, d *structs.Deployment, job *structs.Job, effects []Effect, log hclog.Logger) ([]Event, error) {
	now := w.backend.Now()
	var answers []Event
	for i := 0; i < len(effects); i++ {
		e := effects[i]
		switch g := e.(type) {
		case QueryMetric:
			a := w.gates.QueryMetric(ctx, g)
			if ctx.Err() != nil {
				return nil, ctx.Err() // stopping: a cancelled call is no answer
			}
			log.Debug("metric gate answered", "group", g.Group, "result", a.Result, "reason", a.Reason)
			answers = append(answers, a)
			continue
		case CallWebhook:
			g.Body.SentAt = w.clock.Now().Unix()
			a := w.gates.CallWebhook(ctx, g)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			log.Debug("webhook gate answered", "group", g.Group, "result", a.Result, "reason", a.Reason)
			answers = append(answers, a)
			continue
		}
		var eval *structs.Evaluation
		if ce, ok := attachedEval(effects, i); ok && job != nil {
			eval = NewEval(job, ce, now)
			i++
		}
		if err := w.carryOut(d, job, e, eval, now, log); err != nil {
			return nil, err
		}
	}
	return answers, nil
}

// attachedEval returns the CreateEval that belongs to effects[i]: the one
// right after it when it is an UpdateStatus or a Promote.
func attachedEval(effects []Effect, i int) (CreateEval, bool) {
	switch effects[i].(type) {
	case UpdateStatus, Promote:
	default:
		return CreateEval{}, false
	}
	if i+1 >= len(effects) {
		return CreateEval{}, false
	}
	ce, ok := effects[i+1].(CreateEval)
	return ce, ok
}

// carryOut carries out one effect, with eval (or nil) attached.
func (w *Watcher) carryOut(d *structs.Deployment, job *structs.Job, e Effect, eval *structs.Evaluation, now time.Time, log hclog.Logger) error {
	var err error
	switch e := e.(type) {
	case UpdateStatus:
		log.Info("deployment status changed", "status", e.Status, "description", e.Description)
		_, err = w.backend.UpdateDeploymentStatus(&structs.DeploymentStatusUpdateRequest{
			Update: &structs.DeploymentStatusUpdate{DeploymentID: d.ID, Status: e.Status, StatusDescription: e.Description, Gates: e.Gates},
			Job:    e.RevertJob, Eval: eval, UpdatedAt: now.UnixNano(),
		})
	case Promote:
		log.Info("auto-promoting canaries")
		_, err = w.backend.PromoteDeployment(&structs.DeploymentPromoteRequest{
			DeploymentID: d.ID, All: e.All, Eval: eval, UpdatedAt: now.UnixNano(),
		})
	case CreateEval:
		if job == nil {
			return errors.New("create evaluation: job not found")
		}
		_, err = w.backend.CreateEvals([]*structs.Evaluation{NewEval(job, e, now)})
	case MarkStable:
		_, err = w.backend.MarkJobStable(d.Namespace, d.JobID, e.Version)
	case Stop:
	}
	if err != nil {
		return fmt.Errorf("%T: %w", e, err)
	}
	return nil
}

// pause waits d on the clock; it reports false when ctx ended first.
func (w *Watcher) pause(ctx context.Context, d time.Duration) bool {
	ch := make(chan struct{})
	t := w.clock.AfterFunc(d, func() { close(ch) })
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	}
}
