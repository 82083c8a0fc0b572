package allocrunner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/client/allocrunner/allocdir"
	"github.com/drover-project/drover/client/allocrunner/health"
	"github.com/drover-project/drover/client/allocrunner/taskenv"
	"github.com/drover-project/drover/client/allocrunner/taskrunner"
	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/nomad/structs"
)

// AllocRunner runs one allocation on the client: its hooks and a task
// runner per task. See the package doc for its lifecycle. Create it with
// NewAllocRunner; every method is safe for concurrent use.
type AllocRunner struct {
	// Immutable after NewAllocRunner.
	id             string
	logger         hclog.Logger
	now            func() time.Time
	stateDB        StateDB
	stateUpdater   func(*structs.Allocation) // or nil
	servicesUpd    func(*structs.Allocation) // or nil
	prevAlloc      PrevAllocController       // or nil
	allocDir       *allocdir.AllocDir
	tasks          []*taskrunner.TaskRunner // in the group's order
	hooks          []RunnerHook
	healthHook     *healthHook
	migrateHook    *diskMigrateHook // or nil (nothing to inherit)
	taskAPI        *taskAPIHook     // or nil (no task API)
	prepareTimeout time.Duration
	lc             *lifecycleState // lifecycle ordering: gates, phase, stop

	runCtx    context.Context // cancelled on kill and shutdown; aborts prerun
	runCancel context.CancelFunc

	killCh        chan struct{} // closed by requestKill
	shutdownCh    chan struct{} // closed by Shutdown
	waitCh        chan struct{} // closed when Run returns
	exitedCh      chan struct{} // closed when every task is dead
	killOnce      sync.Once
	killTasksOnce sync.Once
	shutOnce      sync.Once
	exitedOnce    sync.Once
	destroyOnce   sync.Once

	publishMu sync.Mutex // serializes StateUpdater calls

	// maxRunUpdated (buffered 1) wakes enforceMaxRun after an update;
	// maxRunHit is the max_run_duration that was exceeded (0: none was).
	maxRunUpdated chan struct{}
	maxRunHit     atomic.Int64

	// network is the allocation's network status: in the host's network
	// the node's address, known from the start; in bridge mode the
	// address of its own namespace (netIso), set by the network hook.
	netMu   sync.Mutex
	network *structs.AllocNetworkStatus
	netIso  *drivers.NetworkIsolation

	mu         sync.Mutex // guards the fields below
	alloc      *structs.Allocation
	runStarted bool
	restored   bool // restored with started tasks
	// health is the client's decided health in alloc's current deployment
	// (see healthHook), or nil; reported as alloc's DeploymentStatus.
	health *health.Record
	// stopHolds counts local replacements that hold this runner's desired
	// stop (see LocalPrevAlloc); stopDeferred records a stop they deferred.
	stopHolds    int
	stopDeferred bool
	// noShutdownDelay makes the kill skip shutdown delays whatever the
	// allocation's desired transition says (SkipShutdownDelays).
	noShutdownDelay bool
}

// NewAllocRunner returns a runner for cfg.Alloc; nothing runs until Run.
func NewAllocRunner(cfg *Config) (*AllocRunner, error) {
	if cfg == nil {
		return nil, errors.New("allocrunner: config is required")
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("allocrunner: invalid config: %w", err)
	}
	alloc := cfg.Alloc.Copy()
	dir, err := allocdir.New(cfg.AllocRootDir, alloc.ID)
	if err != nil {
		return nil, fmt.Errorf("allocrunner: %w", err)
	}
	ar := &AllocRunner{
		network:      hostNetworkStatus(cfg.Node),
		id:           alloc.ID,
		logger:       cfg.Logger,
		now:          cfg.Now,
		stateDB:      cfg.StateDB,
		stateUpdater: cfg.StateUpdater,
		servicesUpd:  cfg.ServicesUpdater,
		prevAlloc:    cfg.PrevAlloc,
		allocDir:     dir,
		killCh:       make(chan struct{}),
		shutdownCh:   make(chan struct{}),
		waitCh:       make(chan struct{}),
		exitedCh:     make(chan struct{}),
		alloc:        alloc,

		maxRunUpdated: make(chan struct{}, 1),
	}
	if ar.logger == nil {
		ar.logger = hclog.NewNullLogger()
	}
	ar.logger = ar.logger.With("alloc_id", alloc.ID)
	if ar.now == nil {
		ar.now = time.Now
	}
	ar.runCtx, ar.runCancel = context.WithCancel(context.Background())
	tg := alloc.Job.LookupTaskGroup(alloc.TaskGroup)
	ar.prepareTimeout = prepareTimeout(alloc.Job, tg)
	ar.lc = newLifecycleState(tg)
	if err := ar.newTaskRunners(cfg, tg); err != nil {
		return nil, err
	}
	ar.initHooks(cfg.Node, cfg.PrevData, cfg.TaskAPI)
	if h := newNetworkHook(ar, cfg.Network, cfg.Drivers, tg, cfg.Node); h != nil {
		ar.addNetworkHook(h)
		ar.network = nil // its own address, once the namespace exists
	}
	if l, ok := ar.prevAlloc.(*localPrevAlloc); ok {
		l.hold()
	}
	return ar, nil
}

// newTaskRunners builds a task runner per task of tg, in order.
func (ar *AllocRunner) newTaskRunners(cfg *Config, tg *structs.TaskGroup) error {
	for _, task := range tg.Tasks {
		tr, err := taskrunner.New(&taskrunner.Config{
			Alloc:           ar.alloc,
			TaskName:        task.Name,
			Node:            cfg.Node,
			Driver:          cfg.Drivers[task.Driver], // nil when missing: the task fails
			AllocDir:        ar.allocDir,
			Gate:            ar.lc.gates[task.Name],
			KeepAfterDone:   true,
			StateDB:         cfg.StateDB,
			Logger:          ar.logger,
			Now:             ar.now,
			PrepareTimeout:  ar.prepareTimeout,
			OnStateChange:   ar.taskStateChanged,
			HostEnv:         cfg.HostEnv,
			TaskAPIAddr:     taskAPIAddr(cfg.TaskAPI, ar.allocDir.TaskDir(task.Name).SecretsDir),
			RenewIdentities: cfg.RenewIdentities,
			Templates:       cfg.Templates,
			Artifact:        cfg.Artifact,
			Network:         ar.networkInfo,
		})
		if err != nil {
			return fmt.Errorf("allocrunner: %w", err)
		}
		ar.tasks = append(ar.tasks, tr)
	}
	return nil
}

// prepareTimeout bounds each task's prepare step: the group's (else the
// job's) update healthy_deadline, since a replacement not started by then
// is unhealthy anyway; else taskrunner.DefaultPrepareTimeout.
func prepareTimeout(job *structs.Job, tg *structs.TaskGroup) time.Duration {
	if tg.Update != nil && tg.Update.HealthyDeadline > 0 {
		return tg.Update.HealthyDeadline
	}
	if job.Update.HealthyDeadline > 0 {
		return job.Update.HealthyDeadline
	}
	return taskrunner.DefaultPrepareTimeout
}

func (ar *AllocRunner) taskNames() []string {
	names := make([]string, len(ar.tasks))
	for i, tr := range ar.tasks {
		names[i] = tr.Name()
	}
	return names
}

// Restore loads the task states and handles persisted by a previous client
// process and reattaches to tasks left running (driver.RecoverTask) instead
// of starting them; a task whose recovery fails is restarted per its
// restart policy. Call it before Run; restore every runner before running
// any, since a replacement may stop its previous allocation.
func (ar *AllocRunner) Restore() error {
	var errs []error
	started := false
	for _, tr := range ar.tasks {
		if err := tr.Restore(); err != nil {
			errs = append(errs, err)
		}
		started = started || tr.HasStarted()
	}
	ar.mu.Lock()
	ar.restored = started
	ar.mu.Unlock()
	if err := joinErrs(errs); err != nil {
		return fmt.Errorf("allocrunner: restoring %s: %w", ar.id, err)
	}
	return nil
}

// Run runs the allocation: prerun hooks (directories, prefetch before
// kill), then the task runners, until every task is dead (then postrun
// hooks) or the runner shuts down. It blocks; call it in a goroutine. A
// second call waits for the first.
func (ar *AllocRunner) Run() {
	ar.mu.Lock()
	if ar.runStarted {
		ar.mu.Unlock()
		<-ar.waitCh
		return
	}
	ar.runStarted = true
	restored, alloc := ar.restored, ar.alloc
	ar.mu.Unlock()
	defer close(ar.waitCh)
	if ar.isShutdown() {
		return
	}
	for _, tr := range ar.tasks {
		tr.MarkReceived()
	}
	ar.publish()
	if alloc.ServerTerminal() && !ar.maybeDeferStop() {
		ar.requestKill()
	}
	if !ar.isKilled() {
		go ar.enforceMaxRun(maxRunStart(ar.taskStates(), restored, ar.now()))
	}
	if !ar.isKilled() {
		err := runHooks(ar, "prerun", true, func(h Prerunner) error {
			return h.Prerun(ar.runCtx, &PrerunRequest{Restored: restored})
		})
		if err != nil {
			ar.prerunFailed(err)
		}
	}
	if ar.isShutdown() {
		return
	}
	ar.resumeLifecycle()
	if ar.isKilled() {
		ar.killTasks() // before the task runners start, so none starts its task
	}
	ar.applyLifecycle() // opens the gates of the first phase
	for _, tr := range ar.tasks {
		go tr.Run()
	}
	if !ar.supervise() {
		return
	}
	ar.closeExited()
	_ = runHooks(ar, "postrun", false, func(h Postrunner) error { return h.Postrun() })
	ar.logger.Debug("allocation finished", "client_status", ar.Alloc().ClientStatus)
}

// prerunFailed handles a prerun error: nothing when the runner was
// interrupted or a task already failed (its siblings are killed by
// taskStateChanged); otherwise every task fails with a Setup Failure.
func (ar *AllocRunner) prerunFailed(err error) {
	if ar.isKilled() || ar.isShutdown() {
		ar.logger.Debug("prerun interrupted", "error", err)
		return
	}
	ar.logger.Error("allocation failed before its tasks started", "error", err)
	for _, tr := range ar.tasks {
		if st := tr.State(); st.State == taskrunner.StateDead && st.Failed {
			return
		}
	}
	for _, tr := range ar.tasks {
		tr.Fail(taskrunner.NewSetupFailure(ar.now(), err))
	}
}

// supervise waits until every task runner returns, relaying kill and
// shutdown to them. It reports whether every task is dead (false after a
// shutdown that left tasks running).
func (ar *AllocRunner) supervise() bool {
	allDone := make(chan struct{})
	go func() {
		for _, tr := range ar.tasks {
			<-tr.WaitCh()
		}
		close(allDone)
	}()
	killCh := ar.killCh
	for {
		select {
		case <-allDone:
			return ar.allDead()
		case <-killCh:
			killCh = nil
			ar.killTasks()
		case <-ar.shutdownCh:
			for _, tr := range ar.tasks {
				tr.Shutdown()
			}
			<-allDone
			return ar.allDead()
		}
	}
}

// killTasks runs the prekill hooks, then stops the tasks in lifecycle
// order (see package lifecycle: sidecars after the others, then the
// poststop tasks run). It runs once. Shutdown delays are skipped when the
// allocation's desired transition says so.
func (ar *AllocRunner) killTasks() {
	ar.killTasksOnce.Do(func() {
		started := false
		for _, tr := range ar.tasks {
			started = started || tr.HasStarted()
		}
		ar.mu.Lock()
		noDelay := ar.alloc.DesiredTransition.NoShutdownDelay || ar.noShutdownDelay
		ar.mu.Unlock()
		_ = runHooks(ar, "prekill", false, func(h PreKiller) error {
			h.PreKill(&PreKillRequest{TasksStarted: started, NoShutdownDelay: noDelay})
			return nil
		})
		for _, tr := range ar.tasks {
			if noDelay {
				tr.SkipShutdownDelay()
			}
		}
		ar.stopLifecycle(true, false)
	})
}

func (ar *AllocRunner) allDead() bool {
	for _, tr := range ar.tasks {
		if tr.State().State != taskrunner.StateDead {
			return false
		}
	}
	return true
}

// taskStateChanged is every task runner's OnStateChange: it carries out
// the lifecycle decision (start gates; the siblings of a failed task, or
// of a dead leader, or sidecars left alone are killed), tells the hooks,
// then publishes.
func (ar *AllocRunner) taskStateChanged() {
	ar.applyLifecycle()
	for _, h := range ar.hooks {
		if w, ok := h.(TaskStateWatcher); ok {
			w.TaskStateChanged()
		}
	}
	ar.publish()
}

func (ar *AllocRunner) taskStates() map[string]*structs.TaskState {
	states := make(map[string]*structs.TaskState, len(ar.tasks))
	for _, tr := range ar.tasks {
		states[tr.Name()] = tr.State()
	}
	return states
}

// publish hands the current client state to the StateUpdater. Its
// DeploymentStatus is the client's health decision in the allocation's
// current deployment, or nil (the server keeps what it has): the client
// never echoes the server's deployment status back, which could undo a
// health set through the API, and stops sending its decision once the
// server's version of the allocation has a health.
func (ar *AllocRunner) publish() {
	if ar.stateUpdater == nil {
		return
	}
	ar.publishMu.Lock()
	defer ar.publishMu.Unlock()
	ar.stateUpdater(ar.snapshot(true))
	if ar.servicesUpd != nil {
		ar.servicesUpd(ar.snapshot(false))
	}
}

// publishServices hands the allocation to the ServicesUpdater alone: a
// server update (a stop, new tags) changes what it advertises at once,
// before any task state changes.
func (ar *AllocRunner) publishServices() {
	if ar.servicesUpd == nil {
		return
	}
	ar.publishMu.Lock()
	defer ar.publishMu.Unlock()
	ar.servicesUpd(ar.snapshot(false))
}

// Alloc returns a copy of the allocation (the latest server version) with
// the current client state: ClientStatus, ClientDescription, TaskStates,
// and the DeploymentStatus the client decided (else the server's).
func (ar *AllocRunner) Alloc() *structs.Allocation { return ar.snapshot(false) }

// snapshot is Alloc; for the server (forServer), DeploymentStatus is the
// client's decision, or nil when there is none or the server's version
// already has a health.
func (ar *AllocRunner) snapshot(forServer bool) *structs.Allocation {
	ar.mu.Lock()
	a := ar.alloc.Copy()
	rec := ar.health
	ar.mu.Unlock()
	a.TaskStates = ar.taskStates()
	a.ClientStatus, a.ClientDescription = ClientStatus(a.TaskStates)
	if a.ClientStatus == structs.AllocClientStatusComplete && ar.maxRunHit.Load() != 0 {
		a.ClientDescription = DescMaxRunExceeded
	}
	if _, ns := ar.networkInfo(); ns != nil {
		a.NetworkStatus = ns
	}
	var ds *structs.AllocDeploymentStatus
	if rec != nil && rec.DeploymentID == a.DeploymentID {
		ds = rec.Status(a.DeploymentStatus != nil && a.DeploymentStatus.Canary)
	}
	switch {
	case forServer && a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil:
		a.DeploymentStatus = nil
	case ds != nil || forServer:
		a.DeploymentStatus = ds
	}
	return a
}

// hostNetworkStatus is the network status of an allocation in the host's
// network on node: the node's fingerprinted address (empty when unknown).
func hostNetworkStatus(node *structs.Node) *structs.AllocNetworkStatus {
	ns := &structs.AllocNetworkStatus{}
	if node != nil {
		ns.Address = node.Attributes[taskenv.NodeIPAttribute]
	}
	return ns
}

// networkInfo returns the allocation's own namespace (nil in the host's
// network) and a copy of its network status.
func (ar *AllocRunner) networkInfo() (*drivers.NetworkIsolation, *structs.AllocNetworkStatus) {
	ar.netMu.Lock()
	defer ar.netMu.Unlock()
	if ar.network == nil {
		return ar.netIso.Copy(), nil
	}
	ns := *ar.network
	return ar.netIso.Copy(), &ns
}

// setNetwork records the allocation's namespace and its address.
func (ar *AllocRunner) setNetwork(iso *drivers.NetworkIsolation, ns *structs.AllocNetworkStatus) {
	ar.netMu.Lock()
	ar.netIso, ar.network = iso, ns
	ar.netMu.Unlock()
}

// serverAlloc returns a copy of the latest server version of the
// allocation, without client state.
func (ar *AllocRunner) serverAlloc() *structs.Allocation {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	return ar.alloc.Copy()
}

// setHealth records the client's health decision (nil: none).
func (ar *AllocRunner) setHealth(r *health.Record) {
	ar.mu.Lock()
	ar.health = r
	ar.mu.Unlock()
}

// HoldsIdentity reports whether token is one of the workload identities
// the servers signed for the allocation's tasks.
func (ar *AllocRunner) HoldsIdentity(token string) bool {
	if token == "" {
		return false
	}
	ar.mu.Lock()
	for _, t := range ar.alloc.SignedIdentities {
		if t == token {
			ar.mu.Unlock()
			return true
		}
	}
	tasks := ar.tasks
	ar.mu.Unlock()
	for _, tr := range tasks {
		if tr.HoldsIdentity(token) {
			return true
		}
	}
	return false
}

// CheckResults returns the latest results of the allocation's
// Nomad-native service checks, sorted by check ID; nil when it has none.
func (ar *AllocRunner) CheckResults() []health.CheckResult { return ar.healthHook.checkResults() }

// Update adopts a newer server version of the allocation. A desired stop
// (or evict) kills the tasks (kill_timeout, kill_signal, shutdown delays),
// unless a local replacement holds the stop (see LocalPrevAlloc): then the
// replacement stops this allocation once it is prepared. Otherwise it is an
// in-place update: tasks keep running and the new job version is adopted (a
// task's new definition applies from its next start).
// A version the server marked unknown (its node was disconnected) makes
// the runner report its state again. Stale versions (a lower, non-zero
// AllocModifyIndex) are ignored. It does not block.
func (ar *AllocRunner) Update(update *structs.Allocation) {
	if update == nil || update.ID != ar.id {
		return
	}
	ar.mu.Lock()
	cur := ar.alloc
	if update.AllocModifyIndex != 0 && update.AllocModifyIndex < cur.AllocModifyIndex {
		ar.mu.Unlock()
		ar.logger.Debug("ignoring stale allocation update", "index", update.AllocModifyIndex, "have", cur.AllocModifyIndex)
		return
	}
	next := update.Copy()
	if next.Job == nil || next.Job.LookupTaskGroup(next.TaskGroup) == nil {
		next.Job = cur.Job
	}
	// The server marked it unknown (its node was disconnected): report the
	// state again so that it learns what runs here.
	markedUnknown := update.ClientStatus == structs.AllocClientStatusUnknown
	next.TaskStates, next.ClientStatus, next.ClientDescription = nil, "", ""
	ar.alloc = next
	ar.mu.Unlock()

	_ = runHooks(ar, "update", false, func(h Updater) error { return h.Update(&UpdateRequest{Alloc: next}) })
	for _, tr := range ar.tasks {
		tr.Update(next)
	}
	if markedUnknown {
		ar.publish()
	} else {
		ar.publishServices()
	}
	ar.noteMaxRunUpdate()
	switch {
	case !next.ServerTerminal():
	case ar.maybeDeferStop():
		ar.logger.Debug("desired stop deferred to the local replacement", "next_alloc", next.NextAllocation)
	default:
		ar.logger.Debug("desired status is stop; killing tasks", "desired", next.DesiredStatus)
		ar.requestKill()
	}
}

// StopTasks stops the tasks (kill_timeout, kill_signal): used by a
// replacement through PrevAllocController. It does not block; see
// TasksExitedCh. A runner that was not running yet is run to stop its
// (restored) tasks.
func (ar *AllocRunner) StopTasks() {
	ar.requestKill()
	ar.ensureRun()
}

// WaitCh is closed when Run returns.
func (ar *AllocRunner) WaitCh() <-chan struct{} { return ar.waitCh }

// TasksExitedCh is closed when every task has exited (used by
// PrevAllocController.Wait). It never closes after a Shutdown that left
// tasks running.
func (ar *AllocRunner) TasksExitedCh() <-chan struct{} { return ar.exitedCh }

// Shutdown stops supervising for a client shutdown and LEAVES TASKS
// RUNNING, for Restore by the next client process. It waits for Run to
// return if it was running.
func (ar *AllocRunner) Shutdown() {
	ar.shutOnce.Do(func() {
		close(ar.shutdownCh)
		ar.runCancel()
	})
	defer ar.taskAPI.closeAll() // after Run returned: the sockets die with the client process
	ar.mu.Lock()
	started := ar.runStarted
	ar.mu.Unlock()
	if started {
		<-ar.waitCh
	}
}

// SkipShutdownDelays makes the coming kill of the tasks skip the group's
// and the tasks' shutdown_delay, as a stop with no_shutdown_delay does.
// The dev agent calls it before Destroy when it stops its allocations on
// exit. It has no effect on a kill already under way.
func (ar *AllocRunner) SkipShutdownDelays() {
	ar.mu.Lock()
	ar.noShutdownDelay = true
	ar.mu.Unlock()
}

// Destroy stops the tasks if they are running, forgets them in their
// drivers, and deletes the alloc dir and the persisted state. It blocks
// until done and is idempotent. Tasks left by a previous client process
// are only known to their drivers after Restore.
func (ar *AllocRunner) Destroy() {
	ar.destroyOnce.Do(func() {
		ar.stopLifecycle(false, true) // poststop tasks do not run
		ar.requestKill()
		ar.ensureRun()
		<-ar.waitCh
		for _, tr := range ar.tasks {
			if err := tr.Destroy(); err != nil {
				ar.logger.Warn("destroying task", "error", err)
			}
		}
		_ = runHooks(ar, "destroy", false, func(h Destroyer) error { return h.Destroy() })
		ar.closeExited()
	})
}

// LogPath returns the first log file of a task's stream ("stdout" or
// "stderr"), for `alloc logs`.
func (ar *AllocRunner) LogPath(task, stream string) (string, error) {
	for _, tr := range ar.tasks {
		if tr.Name() == task {
			return tr.LogPath(stream)
		}
	}
	return "", fmt.Errorf("allocrunner: allocation %s has no task %q", ar.id, task)
}

// requestKill asks Run to kill the tasks (and aborts prerun). It releases
// the previous allocation, if this runner held its stop.
func (ar *AllocRunner) requestKill() {
	ar.killOnce.Do(func() {
		close(ar.killCh)
		ar.runCancel()
	})
	ar.releasePrev()
}

// ensureRun starts Run in a goroutine unless it was started.
func (ar *AllocRunner) ensureRun() {
	ar.mu.Lock()
	started := ar.runStarted
	ar.mu.Unlock()
	if !started {
		go ar.Run()
	}
}

func (ar *AllocRunner) closeExited() { ar.exitedOnce.Do(func() { close(ar.exitedCh) }) }

func (ar *AllocRunner) isKilled() bool { return isClosed(ar.killCh) }

func (ar *AllocRunner) isShutdown() bool { return isClosed(ar.shutdownCh) }

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func joinErrs(errs []error) error { return errors.Join(errs...) }

// EmitDriverEvent appends a Driver event with msg to task's state; it
// reports whether the allocation has that task.
func (ar *AllocRunner) EmitDriverEvent(task, msg string) bool {
	for _, tr := range ar.tasks {
		if tr.Name() == task {
			tr.EmitDriverEvent(msg)
			return true
		}
	}
	return false
}
