package taskrunner

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/client/allocrunner/allocdir"
	"github.com/drover-project/drover/client/allocrunner/restarts"
	"github.com/drover-project/drover/client/allocrunner/taskrunner/getter"
	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/nomad/structs"
)

// StateDB is the part of the alloc runner's state database a task runner
// uses. A nil handle clears the stored one (GetTaskHandle may then return
// nil or a handle with an empty TaskID; both mean none).
type StateDB interface {
	PutTaskHandle(allocID, task string, h *drivers.TaskHandle) error
	GetTaskHandle(allocID, task string) (*drivers.TaskHandle, error)
	PutTaskState(allocID, task string, st *structs.TaskState) error
	GetTaskState(allocID, task string) (*structs.TaskState, error)
}

// Defaults.
const (
	DefaultKillTimeout    = 5 * time.Second
	DefaultPrepareTimeout = 5 * time.Minute
	// PrefetchKey is the driver config key ("prefetch = false") that turns
	// prefetch before kill off for a task. The task runner consumes it; the
	// driver never sees it.
	PrefetchKey = drivers.PrefetchKey
)

// progressEvery is the least time between two prepare progress events.
const progressEvery = time.Second

// Config configures a TaskRunner.
type Config struct {
	Alloc    *structs.Allocation // with Job; the group and the task must exist
	TaskName string
	Node     *structs.Node      // for the environment; may be nil
	Driver   drivers.Driver     // nil when the client lacks the task's driver: the task fails
	AllocDir *allocdir.AllocDir // built by the alloc runner before Prepare
	StateDB  StateDB            // required
	Logger   hclog.Logger       // default: null logger
	Now      func() time.Time   // default: time.Now
	// Gate, when set, holds every start of the task until it is open (the
	// alloc runner's lifecycle ordering); nil starts at once.
	Gate *Gate
	// KeepAfterDone keeps Run waiting after the task completed successfully
	// (dead, not failed), until Kill or Shutdown, so that ForceRestart can
	// run it again (`alloc restart -all-tasks`). The alloc runner kills such
	// runners once every task is dead.
	KeepAfterDone bool
	// PrepareTimeout bounds one Prepare call; 0 means DefaultPrepareTimeout.
	PrepareTimeout time.Duration
	// OnStateChange is called after every change of the task's state,
	// without locks held; it must not block for long.
	OnStateChange func()
	// HostEnv is the client's environment less env.denylist. Tasks of a
	// driver that inherits the host environment (drivers.HostEnvInheritor)
	// start from it; others never see it.
	HostEnv map[string]string
	// Templates renders the task's template blocks; nil: a task with
	// templates fails before it starts.
	Templates *TemplateConfig
	// TaskAPIAddr is the task API's address (unix://<secrets>/api.sock)
	// when the alloc runner serves one; the task gets it as
	// NOMAD_UNIX_ADDR if its driver runs it on the host's filesystem
	// (drivers.HostEnvInheritor), where that path is the task's too.
	TaskAPIAddr string
	// RenewIdentities has the servers sign again the task's identities
	// with a ttl before they expire; nil: they are not renewed.
	RenewIdentities RenewFunc

	// Artifact is the client's artifact {} settings; nil means the
	// defaults.
	Artifact *getter.Config

	// Network returns the allocation's own namespace (nil in the host's
	// network) and its network status (nil until known), read at each
	// start; nil means the host's network.
	Network func() (*drivers.NetworkIsolation, *structs.AllocNetworkStatus)
}

// TaskRunner runs one task of an allocation. See the package doc for its
// lifecycle. Create it with New.
type TaskRunner struct {
	// Immutable after New.
	allocID        string
	name           string
	taskID         string // "<allocID>/<task>"
	jobType        string
	driverName     string
	driver         drivers.Driver // or nil
	node           *structs.Node
	allocDir       *allocdir.AllocDir
	db             StateDB
	logger         hclog.Logger
	now            func() time.Time
	prepareTimeout time.Duration
	onStateChange  func()
	hostEnv        map[string]string                                               // nil unless the driver inherits it
	unixAddr       string                                                          // NOMAD_UNIX_ADDR, or ""
	renew          RenewFunc                                                       // or nil
	identityCh     chan struct{}                                                   // buffered(1): Update wakes the identity renewal
	templates      *templateHook                                                   // immutable pointer; see template_hook.go
	prestart       []prestartHook                                                  // run before every start, in order; owned by Run
	network        func() (*drivers.NetworkIsolation, *structs.AllocNetworkStatus) // or nil

	killCh     chan struct{}   // closed by Kill
	shutdownCh chan struct{}   // closed by Shutdown
	restartCh  chan struct{}   // buffered(1): Restart asks the running task to restart
	waitCh     chan struct{}   // closed when Run returns
	ctx        context.Context // cancelled on Kill and Shutdown
	cancel     context.CancelFunc
	killOnce   sync.Once
	shutOnce   sync.Once

	// Lifecycle ordering (immutable after New): see Config.Gate and
	// Config.KeepAfterDone.
	gate          *Gate // or nil
	keepAfterDone bool
	rerunCh       chan struct{} // buffered(1): ForceRestart asks a completed task to run again

	// tracker is owned by Restore, then by the Run goroutine.
	tracker *restarts.Tracker

	// persistMu serializes state changes with their persistence, so the
	// state DB never sees an older state after a newer one.
	persistMu sync.Mutex

	mu            sync.Mutex // guards the fields below
	alloc         *structs.Allocation
	task          *structs.Task
	state         *structs.TaskState
	handle        *drivers.TaskHandle // the attached (started or recovered) task, or nil
	prepared      bool
	killReason    *structs.TaskEvent // why Kill was called, or nil
	noDelay       bool               // kill without the task's shutdown_delay
	runStarted    bool
	recoverErr    error                  // RecoverTask failed at Restore; Run handles it
	lastPrepare   time.Time              // when the last prepare progress event was emitted
	pendingPolicy *structs.RestartPolicy // from Update, for the tracker; or nil
	checkRestart  string                 // reason of a pending RestartUnhealthy, or ""
	restartReason string                 // reason of a pending restart other than the user's, or ""
	tokens        map[string]string      // renewed identities by structs.IdentityKey
	templateEnv   map[string]string      // variables of the env = true templates, or nil
}

// New returns a task runner for cfg.TaskName of cfg.Alloc; the task is
// pending until Run.
func New(cfg *Config) (*TaskRunner, error) {
	if cfg == nil || cfg.Alloc == nil || cfg.Alloc.Job == nil {
		return nil, errors.New("taskrunner: an allocation with its job is required")
	}
	if cfg.StateDB == nil || cfg.AllocDir == nil {
		return nil, errors.New("taskrunner: StateDB and AllocDir are required")
	}
	tg := cfg.Alloc.Job.LookupTaskGroup(cfg.Alloc.TaskGroup)
	if tg == nil {
		return nil, fmt.Errorf("taskrunner: task group %q not in job %q", cfg.Alloc.TaskGroup, cfg.Alloc.JobID)
	}
	task := tg.LookupTask(cfg.TaskName)
	if task == nil {
		return nil, fmt.Errorf("taskrunner: task %q not in group %q", cfg.TaskName, tg.Name)
	}
	tr := &TaskRunner{
		allocID:        cfg.Alloc.ID,
		name:           task.Name,
		taskID:         cfg.Alloc.ID + "/" + task.Name,
		jobType:        cfg.Alloc.Job.Type,
		driverName:     task.Driver,
		driver:         cfg.Driver,
		node:           cfg.Node,
		allocDir:       cfg.AllocDir,
		db:             cfg.StateDB,
		logger:         cfg.Logger,
		now:            cfg.Now,
		prepareTimeout: cfg.PrepareTimeout,
		onStateChange:  cfg.OnStateChange,
		hostEnv:        hostEnvFor(cfg.Driver, cfg.HostEnv),
		unixAddr:       unixAddrFor(cfg.Driver, cfg.TaskAPIAddr),
		renew:          cfg.RenewIdentities,
		identityCh:     make(chan struct{}, 1),
		network:        cfg.Network,
		killCh:         make(chan struct{}),
		shutdownCh:     make(chan struct{}),
		restartCh:      make(chan struct{}, 1),
		waitCh:         make(chan struct{}),
		alloc:          cfg.Alloc,
		task:           task,
		state:          &structs.TaskState{State: StatePending},
	}
	if tr.logger == nil {
		tr.logger = hclog.NewNullLogger()
	}
	tr.logger = tr.logger.With("task", task.Name)
	if tr.now == nil {
		tr.now = time.Now
	}
	if tr.prepareTimeout <= 0 {
		tr.prepareTimeout = DefaultPrepareTimeout
	}
	if tr.onStateChange == nil {
		tr.onStateChange = func() {}
	}
	tr.ctx, tr.cancel = context.WithCancel(context.Background())
	tr.gate, tr.keepAfterDone, tr.rerunCh = cfg.Gate, cfg.KeepAfterDone, make(chan struct{}, 1)
	tr.templates = newTemplateHook(tr, cfg.Templates)
	tr.prestart = tr.prestartHooks(cfg)
	tr.tracker = restarts.NewTaskTracker(restartPolicy(tg, task, tr.jobType), tr.jobType, task.Lifecycle, nil)
	return tr, nil
}

// restartPolicy is the task's policy, else the group's, else the default.
func restartPolicy(tg *structs.TaskGroup, t *structs.Task, jobType string) structs.RestartPolicy {
	switch {
	case t.RestartPolicy != nil:
		return *t.RestartPolicy
	case tg.RestartPolicy != nil:
		return *tg.RestartPolicy
	}
	return restarts.DefaultPolicy(jobType)
}

// Name returns the task's name.
func (tr *TaskRunner) Name() string { return tr.name }

// Task returns the task definition in use (the latest in-place update).
func (tr *TaskRunner) Task() *structs.Task {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.task
}

// State returns a copy of the task's state.
func (tr *TaskRunner) State() *structs.TaskState {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return copyState(tr.state)
}

// IsLeader reports whether the task is its group's leader.
func (tr *TaskRunner) IsLeader() bool { return tr.Task().Leader }

// WaitCh is closed when Run returns.
func (tr *TaskRunner) WaitCh() <-chan struct{} { return tr.waitCh }

// Prefetch reports whether the task may be prepared before the previous
// allocation stops: true unless its config says prefetch = false.
func (tr *TaskRunner) Prefetch() bool {
	b, ok, err := drivers.ConfigBool(tr.Task().Config, PrefetchKey)
	return !ok || err != nil || b
}

// NeedsPrepare reports whether the task's driver has a prepare step.
func (tr *TaskRunner) NeedsPrepare() bool {
	_, ok := tr.driver.(drivers.Preparer)
	return ok
}

// HasStarted reports whether the task ever started (in this client process
// or, per its restored state, before it).
func (tr *TaskRunner) HasStarted() bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return !tr.state.StartedAt.IsZero() || tr.handle != nil
}

// Update adopts a newer version of the allocation (an in-place update): the
// running task is kept; the new task definition is used from its next
// start, and the new restart policy from its next exit.
func (tr *TaskRunner) Update(alloc *structs.Allocation) {
	if alloc == nil || alloc.Job == nil {
		return
	}
	tg := alloc.Job.LookupTaskGroup(alloc.TaskGroup)
	if tg == nil {
		return
	}
	task := tg.LookupTask(tr.name)
	if task == nil {
		return
	}
	tr.mu.Lock()
	tr.alloc, tr.task = alloc, task
	tr.mu.Unlock()

	// The tracker belongs to the Run goroutine: it picks the policy up at
	// the next decision.
	p := restartPolicy(tg, task, tr.jobType)
	tr.mu.Lock()
	tr.pendingPolicy = &p
	tr.mu.Unlock()
	select {
	case tr.identityCh <- struct{}{}:
	default:
	}
}

// Kill asks the task to stop: a running task is stopped with its kill
// signal and kill timeout, a pending one never starts. reason (or nil) is
// recorded as an event first, e.g. EventSiblingFailed. It does not block;
// WaitCh closes when the task is dead. The first reason wins.
func (tr *TaskRunner) Kill(reason *structs.TaskEvent) {
	tr.mu.Lock()
	if tr.killReason == nil {
		tr.killReason = reason
	}
	tr.mu.Unlock()
	tr.killOnce.Do(func() {
		close(tr.killCh)
		tr.cancel()
	})
}

// SkipShutdownDelay makes the next kill skip the task's shutdown_delay
// (the operator stopped the allocation with no_shutdown_delay).
func (tr *TaskRunner) SkipShutdownDelay() {
	tr.mu.Lock()
	tr.noDelay = true
	tr.mu.Unlock()
}

// Shutdown stops supervising the task and leaves it running, for a client
// restart. Run returns soon after; the state is left as it is.
func (tr *TaskRunner) Shutdown() {
	tr.shutOnce.Do(func() {
		close(tr.shutdownCh)
		tr.cancel()
	})
}

// Destroy forgets the task in its driver, killing it if it still runs.
// Call it after Run returned (or when Run never ran).
func (tr *TaskRunner) Destroy() error {
	if tr.driver == nil {
		return nil
	}
	err := tr.driver.DestroyTask(tr.taskID, true)
	if err != nil && !errors.Is(err, drivers.ErrTaskNotFound) {
		return fmt.Errorf("destroying task %s: %w", tr.taskID, err)
	}
	return nil
}

// LogPath returns the first log file of the task's stream ("stdout" or
// "stderr").
func (tr *TaskRunner) LogPath(stream string) (string, error) {
	return tr.allocDir.LogPath(tr.name, stream)
}

// Fail marks a task that has not started dead and failed with event (a
// Setup Failure when the alloc cannot be set up). It does nothing to a task
// that is already dead.
func (tr *TaskRunner) Fail(event *structs.TaskEvent) {
	tr.update(func(st *structs.TaskState) bool {
		if st.State == StateDead {
			return false
		}
		tr.setDead(st, true, event)
		return true
	})
}

// Note records a Task Setup event with msg, such as the alloc runner
// stopping the previous allocation.
func (tr *TaskRunner) Note(msg string) {
	tr.emit(eventSetup(tr.now(), msg))
}

// AddEvent records e, an event from outside the task runner (such as
// NewAllocUnhealthy), in the task's state.
func (tr *TaskRunner) AddEvent(e *structs.TaskEvent) {
	if e != nil {
		tr.emit(e)
	}
}

// MarkReceived records the Received event of a new task (not of a restored
// one that already has events).
func (tr *TaskRunner) MarkReceived() {
	tr.update(func(st *structs.TaskState) bool {
		if len(st.Events) > 0 {
			return false
		}
		appendEvent(st, eventReceived(tr.now()))
		return true
	})
}

// Restore loads the task's state and handle and reattaches to a task left
// running by a previous client process, instead of starting it again. If
// the task cannot be recovered, Run treats it as a failed exit and applies
// the restart policy. The error is for state DB failures only.
func (tr *TaskRunner) Restore() error {
	st, err := tr.db.GetTaskState(tr.allocID, tr.name)
	if err != nil {
		return fmt.Errorf("restoring state of task %s: %w", tr.name, err)
	}
	if st == nil {
		return nil
	}
	tr.restoreIdentities()
	h, err := tr.db.GetTaskHandle(tr.allocID, tr.name)
	if err != nil {
		return fmt.Errorf("restoring handle of task %s: %w", tr.name, err)
	}
	tr.mu.Lock()
	tr.state = copyState(st)
	tr.tracker = restarts.NewTaskTracker(tr.currentPolicy(), tr.jobType, tr.task.Lifecycle, restartHistory(st))
	tr.mu.Unlock()
	if st.State != StateRunning || h == nil || h.TaskID == "" {
		return nil
	}
	if tr.driver == nil {
		tr.setRecoverErr(fmt.Errorf("%w: %q", drivers.ErrDriverNotFound, tr.driverName))
		return nil
	}
	if err := tr.driver.RecoverTask(h); err != nil {
		tr.logger.Warn("could not recover task; applying the restart policy", "error", err)
		tr.setRecoverErr(err)
		return nil
	}
	tr.mu.Lock()
	tr.handle = h
	tr.prepared = true
	tr.mu.Unlock()
	tr.logger.Info("reattached to task", "task_id", h.TaskID)
	return nil
}

func (tr *TaskRunner) setRecoverErr(err error) {
	tr.mu.Lock()
	tr.recoverErr = err
	tr.mu.Unlock()
	tr.update(func(st *structs.TaskState) bool {
		appendEvent(st, eventRestoreFailed(tr.now(), err))
		return true
	})
}

func (tr *TaskRunner) currentPolicy() structs.RestartPolicy {
	tg := tr.alloc.Job.LookupTaskGroup(tr.alloc.TaskGroup)
	return restartPolicy(tg, tr.task, tr.jobType)
}

// restartHistory rebuilds the restart times from the Restarting events of
// a restored state (events beyond the last maxEvents are lost).
func restartHistory(st *structs.TaskState) []time.Time {
	var out []time.Time
	for _, e := range st.Events {
		if e.Type != EventRestarting {
			continue
		}
		delay, _ := strconv.ParseInt(e.Details[DetailStartDelay], 10, 64)
		out = append(out, time.Unix(0, e.Time).Add(time.Duration(delay)))
	}
	return out
}

// update applies fn to the task state under the lock; when fn reports a
// change, the new state is persisted and OnStateChange called.
func (tr *TaskRunner) update(fn func(st *structs.TaskState) bool) {
	tr.persistMu.Lock()
	tr.mu.Lock()
	st := copyState(tr.state)
	changed := fn(st)
	if changed {
		tr.state = st
	}
	tr.mu.Unlock()
	if changed {
		if err := tr.db.PutTaskState(tr.allocID, tr.name, st); err != nil {
			tr.logger.Error("persisting task state", "error", err)
		}
	}
	tr.persistMu.Unlock()
	if changed {
		tr.onStateChange()
	}
}

// emit appends events to the task state.
func (tr *TaskRunner) emit(events ...*structs.TaskEvent) {
	tr.update(func(st *structs.TaskState) bool {
		for _, e := range events {
			appendEvent(st, e)
		}
		return len(events) > 0
	})
}

// setDead marks st dead (failed or not) after appending events.
func (tr *TaskRunner) setDead(st *structs.TaskState, failed bool, events ...*structs.TaskEvent) {
	for _, e := range events {
		if e != nil {
			appendEvent(st, e)
		}
	}
	st.State = StateDead
	st.Failed = st.Failed || failed
	st.FinishedAt = tr.now()
}

func (tr *TaskRunner) isDead() bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.state.State == StateDead
}

func (tr *TaskRunner) killed() bool {
	select {
	case <-tr.killCh:
		return true
	default:
		return false
	}
}

func (tr *TaskRunner) shuttingDown() bool {
	select {
	case <-tr.shutdownCh:
		return true
	default:
		return false
	}
}

// hostEnvFor is env when d's tasks inherit the host environment, else nil.
// unixAddrFor keeps the task API's address for drivers whose tasks see
// the host's paths of their task dir (raw_exec; exec, which rewrites it to
// its chroot's path) or their secrets dir (drivers.TaskAPIReacher).
func unixAddrFor(d drivers.Driver, addr string) string {
	if h, ok := d.(drivers.HostEnvInheritor); ok && h.InheritsHostEnv() {
		return addr
	}
	if r, ok := d.(drivers.TaskAPIReacher); ok && r.ReachesTaskAPI() {
		return addr // docker, which rewrites it to its container's path
	}
	return ""
}

func hostEnvFor(d drivers.Driver, env map[string]string) map[string]string {
	if h, ok := d.(drivers.HostEnvInheritor); ok && h.InheritsHostEnv() {
		return env
	}
	return nil
}
