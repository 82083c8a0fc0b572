package allocrunner

import (
	"context"
	"reflect"
	"sync"
	"time"

	"github.com/drover-project/drover/client/allocrunner/health"
	"github.com/drover-project/drover/client/allocrunner/lifecycle"
	"github.com/drover-project/drover/client/allocrunner/restarts"
	"github.com/drover-project/drover/client/allocrunner/taskrunner"
	"github.com/drover-project/drover/nomad/structs"
)

// HealthDB is implemented by a StateDB that persists the client's
// deployment health records (the client's state DB and MemDB do). With it,
// a restarted client keeps the original healthy_deadline and re-reports a
// decision instead of deciding again; without it, a restored allocation is
// tracked from its earliest task event.
type HealthDB interface {
	// PutDeploymentHealth stores r; nil deletes the stored record.
	PutDeploymentHealth(allocID string, r *health.Record) error
	// GetDeploymentHealth returns the stored record, or nil, nil.
	GetDeploymentHealth(allocID string) (*health.Record, error)
}

// healthHook tracks the allocation's health in its deployment (see package
// health) and runs its Nomad-native service checks. While tracking, a
// goroutine evaluates health on every task state change, check status
// change and at the WakeAt the decision returns; the first decision is
// recorded, persisted, published through the StateUpdater as the
// allocation's DeploymentStatus, and final for the deployment. An update
// that moves the allocation to another deployment starts tracking afresh.
// Tracking and checks end when the runner is killed or shuts down (runCtx),
// or with Postrun (after a last evaluation, so a failed task is reported)
// and Destroy.
type healthHook struct {
	ar    *AllocRunner
	node  *structs.Node
	db    HealthDB      // or nil
	probe health.Prober // nil: health.Probe; tests set it before Run
	kick  chan struct{} // room for one token: an input changed
	wg    sync.WaitGroup

	mu          sync.Mutex // guards the fields below
	started     bool       // Prerun ran and Postrun/Destroy did not
	gen         int        // generation of the current watch goroutine
	record      *health.Record
	watchCancel context.CancelFunc // stops the current watch goroutine, or nil
	checker     *health.Checker    // or nil
	checkDefs   []health.CheckDef
}

var (
	_ Prerunner  = (*healthHook)(nil)
	_ Updater    = (*healthHook)(nil)
	_ Postrunner = (*healthHook)(nil)
	_ Destroyer  = (*healthHook)(nil)
)

// newHealthHook loads the persisted record of the allocation's current
// deployment; a decided one is reported from the runner's first publish.
func newHealthHook(ar *AllocRunner, node *structs.Node) *healthHook {
	h := &healthHook{ar: ar, node: node, kick: make(chan struct{}, 1)}
	h.db, _ = ar.stateDB.(HealthDB)
	if h.db == nil {
		return h
	}
	rec, err := h.db.GetDeploymentHealth(ar.id)
	if err != nil {
		ar.logger.Warn("reading the deployment health record; tracking health afresh", "error", err)
		return h
	}
	if rec != nil && rec.DeploymentID == ar.alloc.DeploymentID && rec.DeploymentID != "" {
		h.record = rec
		if rec.Decided() {
			ar.health = rec
		}
	}
	return h
}

func (*healthHook) Name() string { return "health" }

// Prerun starts the checks and, when the allocation's health is the
// client's to decide, tracking. It does not block.
func (h *healthHook) Prerun(_ context.Context, req *PrerunRequest) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.started = true
	a := h.ar.serverAlloc()
	h.syncChecksLocked(a)
	h.maybeTrackLocked(a, req.Restored)
	return nil
}

// Update follows a newer version: new checks, and tracking afresh in a new
// deployment.
func (h *healthHook) Update(req *UpdateRequest) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.started {
		return nil
	}
	a := req.Alloc
	h.syncChecksLocked(a)
	if h.record != nil && h.record.DeploymentID != a.DeploymentID {
		h.ar.logger.Debug("allocation moved to another deployment; tracking health afresh", "deployment_id", a.DeploymentID)
		h.stopWatchLocked()
		h.record = nil
		h.ar.setHealth(nil)
		h.persist(nil)
	}
	h.maybeTrackLocked(a, false)
	h.poke()
	return nil
}

// Postrun evaluates once more (a task that failed makes the allocation
// unhealthy) unless the runner was killed, then stops.
func (h *healthHook) Postrun() error {
	if h.ar.runCtx.Err() == nil {
		h.mu.Lock()
		gen := h.gen
		h.mu.Unlock()
		h.step(gen)
	}
	h.stop()
	return nil
}

// Destroy stops tracking and the checks.
func (h *healthHook) Destroy() error {
	h.stop()
	return nil
}

// TaskStateChanged wakes the tracking goroutine and the script checks
// waiting for their task. It does not block.
func (h *healthHook) TaskStateChanged() {
	h.poke()
	h.mu.Lock()
	c := h.checker
	h.mu.Unlock()
	if c != nil {
		c.Wake()
	}
}

func (h *healthHook) poke() {
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// stop ends tracking and the checks and waits for their goroutines; the
// last check results stay readable.
func (h *healthHook) stop() {
	h.mu.Lock()
	h.started = false
	h.stopWatchLocked()
	checker := h.checker
	h.mu.Unlock()
	if checker != nil {
		checker.Stop()
	}
	h.wg.Wait()
}

// stopWatchLocked cancels the tracking goroutine; it exits on its own.
func (h *healthHook) stopWatchLocked() {
	h.gen++
	if h.watchCancel != nil {
		h.watchCancel()
		h.watchCancel = nil
	}
}

// syncChecksLocked (re)starts the checks when their definitions changed.
// The old checker stops in the background.
func (h *healthHook) syncChecksLocked(a *structs.Allocation) {
	defs, skipped := health.ResolveChecks(a, h.node)
	for _, s := range skipped {
		h.ar.logger.Warn("service check not run", "reason", s)
	}
	if h.checker != nil && reflect.DeepEqual(defs, h.checkDefs) {
		return
	}
	if old := h.checker; old != nil {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			old.Stop()
		}()
	}
	h.checker, h.checkDefs = nil, defs
	if len(defs) == 0 {
		return
	}
	h.checker = health.NewChecker(health.CheckerConfig{
		Checks: defs, Probe: health.ProbeWith(h.execInTask, h.probe), Now: h.ar.now, OnChange: h.poke,
		TaskStarted: h.taskStarted, Restart: h.restartUnhealthy,
	}, h.ar.now())
	h.checker.Start(h.ar.runCtx)
}

// maybeTrackLocked starts tracking a when its health is the client's to
// decide and it is not tracked or decided yet.
func (h *healthHook) maybeTrackLocked(a *structs.Allocation, restored bool) {
	if !needsTracking(a) || h.watchCancel != nil {
		return
	}
	if h.record == nil {
		start := h.ar.now()
		if restored && h.db == nil {
			start = earliestEvent(h.ar.taskStates(), start)
		}
		h.record = &health.Record{DeploymentID: a.DeploymentID, Start: start}
		h.persist(h.record)
	}
	if h.record.Decided() {
		return
	}
	h.gen++
	gen := h.gen
	ctx, cancel := context.WithCancel(h.ar.runCtx)
	h.watchCancel = cancel
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		h.watch(ctx, gen)
	}()
}

// watch evaluates health after every change and at each WakeAt until it
// is decided, tracking stops or ctx ends. It only waits; step decides.
func (h *healthHook) watch(ctx context.Context, gen int) {
	for {
		wakeAt, done := h.step(gen)
		if done {
			return
		}
		var timer *time.Timer
		var timeout <-chan time.Time
		if !wakeAt.IsZero() {
			timer = time.NewTimer(wakeAt.Sub(h.ar.now()))
			timeout = timer.C
		}
		select {
		case <-ctx.Done():
		case <-h.kick:
		case <-timeout:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// step evaluates health once for the watch of generation gen and carries
// out a decision. done reports that tracking is over for gen.
func (h *healthHook) step(gen int) (wakeAt time.Time, done bool) {
	res, rec, done := h.decide(gen)
	if rec == nil {
		return res.WakeAt, done
	}
	h.ar.logger.Info("allocation health decided", "deployment_id", rec.DeploymentID, "healthy", res.Healthy, "reason", res.Reason)
	if !res.Healthy {
		ev := taskrunner.NewAllocUnhealthy(rec.Timestamp, res.Reason)
		for _, tr := range h.ar.tasks {
			tr.AddEvent(ev)
		}
	}
	h.ar.publish()
	return time.Time{}, true
}

// decide runs health.Evaluate; on a decision it records, persists and hands
// the record to the runner, and returns it (rec is nil otherwise).
func (h *healthHook) decide(gen int) (res health.Result, rec *health.Record, done bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	a := h.ar.serverAlloc()
	cur := h.record
	if !h.started || gen != h.gen || cur == nil || cur.Decided() || cur.DeploymentID != a.DeploymentID || !needsTracking(a) {
		return health.Result{}, nil, true
	}
	var checks []health.CheckResult
	if h.checker != nil {
		checks = h.checker.Results()
	}
	now := h.ar.now()
	res = health.Evaluate(healthInput(a, h.ar.taskStates(), checks, cur.Start), now)
	if !res.Decided {
		return res, nil, false
	}
	rec = cur.Decide(res, now)
	h.record = rec
	h.persist(rec)
	h.ar.setHealth(rec)
	return res, rec, true
}

func (h *healthHook) persist(r *health.Record) {
	if h.db == nil {
		return
	}
	if err := h.db.PutDeploymentHealth(h.ar.id, r); err != nil {
		h.ar.logger.Error("persisting the deployment health record", "error", err)
	}
}

// checkResults returns the latest check results, sorted by check ID.
func (h *healthHook) checkResults() []health.CheckResult {
	h.mu.Lock()
	c := h.checker
	h.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.Results()
}

// needsTracking reports whether the client decides a's health: its
// health policy (healthPolicy) is not "manual", the server has not set its
// health, and it is not stopping.
func needsTracking(a *structs.Allocation) bool {
	if a == nil || a.Job == nil || a.ServerTerminal() {
		return false
	}
	p, ok := healthPolicy(a)
	if !ok || p.Mode == structs.UpdateHealthCheckManual {
		return false
	}
	return a.DeploymentStatus == nil || a.DeploymentStatus.Healthy == nil
}

// healthPolicy returns how a's health is decided: by its group's update
// block when a runs in a deployment; else, for a service allocation, by
// its group's migrate block (a drain's next migration waits for it). ok is
// false when neither applies.
func healthPolicy(a *structs.Allocation) (health.Input, bool) {
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	switch {
	case tg == nil:
		return health.Input{}, false
	case a.DeploymentID != "":
		if u := tg.Update; u != nil {
			return health.Input{Mode: u.HealthCheck, MinHealthyTime: u.MinHealthyTime, HealthyDeadline: u.HealthyDeadline}, true
		}
	case a.Job.Type == structs.JobTypeService && tg.Migrate != nil:
		m := tg.Migrate
		return health.Input{Mode: m.HealthCheck, MinHealthyTime: m.MinHealthyTime, HealthyDeadline: m.HealthyDeadline}, true
	}
	return health.Input{}, false
}

// healthInput gathers what health.Evaluate needs (pure). Tasks without a
// state are pending; readiness checks do not count; a check passes when it
// is Healthy (success, or a warning with on_update "ignore_warnings").
func healthInput(a *structs.Allocation, states map[string]*structs.TaskState, checks []health.CheckResult, start time.Time) health.Input {
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	in, _ := healthPolicy(a)
	in.Start = start
	batch := restarts.IsBatch(a.Job.Type)
	for _, t := range tg.Tasks {
		// Lifecycle tasks: a poststop task does not count (it runs once the
		// allocation is done); an ephemeral prestart or poststart task that
		// completed need not run; a sidecar must run, as a main task.
		if lifecycle.TaskOf(t).IsPoststop() {
			continue
		}
		ht := health.Task{Name: t.Name, State: taskrunner.StatePending}
		if st := states[t.Name]; st != nil {
			ht.State, ht.Failed, ht.StartedAt = st.State, st.Failed, st.StartedAt
			ht.Restarts, ht.LastRestart = st.Restarts, st.LastRestart
		}
		ephemeral := lifecycle.TaskOf(t).IsEphemeral()
		ht.CompleteOK = ht.State == taskrunner.StateDead && !ht.Failed && (batch || ephemeral)
		in.Tasks = append(in.Tasks, ht)
	}
	for _, c := range checks {
		if c.Def.Mode == health.ModeReadiness {
			continue
		}
		in.Checks = append(in.Checks, health.Check{ID: c.Def.ID, Name: c.Def.Name, Passing: c.Healthy, Since: c.HealthySince})
	}
	return in
}

// earliestEvent returns the time of the earliest task event, or def.
func earliestEvent(states map[string]*structs.TaskState, def time.Time) time.Time {
	out := def
	for _, st := range states {
		if st == nil {
			continue
		}
		for _, e := range st.Events {
			if t := time.Unix(0, e.Time); e.Time > 0 && t.Before(out) {
				out = t
			}
		}
	}
	return out
}

// FinalHealth returns the deployment status to report for an allocation
// whose tasks all ended while no runner tracked it (a restarted client
// found them dead): the persisted decision of its deployment, else the
// decision health.Evaluate makes now from the task states (a failed task:
// unhealthy), recorded in db; nil when there is nothing to report.
func FinalHealth(db StateDB, a *structs.Allocation, states map[string]*structs.TaskState, now time.Time) (*structs.AllocDeploymentStatus, error) {
	hdb, _ := db.(HealthDB)
	var rec *health.Record
	if hdb != nil {
		var err error
		if rec, err = hdb.GetDeploymentHealth(a.ID); err != nil {
			return nil, err
		}
	}
	if rec != nil && rec.DeploymentID != a.DeploymentID {
		rec = nil
	}
	canary := a.DeploymentStatus != nil && a.DeploymentStatus.Canary
	if rec.Decided() {
		return rec.Status(canary), nil
	}
	if !needsTracking(a) {
		return nil, nil
	}
	if rec == nil {
		rec = &health.Record{DeploymentID: a.DeploymentID, Start: earliestEvent(states, now)}
	}
	res := health.Evaluate(healthInput(a, states, nil, rec.Start), now)
	if !res.Decided {
		return nil, nil
	}
	rec = rec.Decide(res, now)
	if hdb != nil {
		if err := hdb.PutDeploymentHealth(a.ID, rec); err != nil {
			return rec.Status(canary), err
		}
	}
	return rec.Status(canary), nil
}
