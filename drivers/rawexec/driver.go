package rawexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/drivers"
)

// Name is the driver name used in job specs.
const Name = "raw_exec"

// Timing knobs; variables so tests may shorten them.
var (
	// pollInterval is how often a recovered task's executor is checked.
	pollInterval = 200 * time.Millisecond
	// startTimeout bounds the executor's start handshake.
	startTimeout = 30 * time.Second
	// killWait bounds how long StopTask waits after SIGKILL.
	killWait = 30 * time.Second
)

func init() {
	drivers.Register(Name, func(l hclog.Logger) drivers.Driver { return New(l) })
}

// State is the driver state persisted in TaskHandle.DriverState (JSON).
type State struct {
	ExecutorPID   int
	TaskPID       int
	TaskPGID      int
	StartTime     uint64 // executor start time, /proc/<pid>/stat field 22
	TaskStartTime uint64 // task leader start time, same unit
	// ExitFile is where the executor records the task's exit, in the
	// task's private dir. Empty in the handles of clients that kept it in
	// the task dir: <TaskDir>/.drover-exit.json is read then.
	ExitFile string `json:",omitempty"`
}

// Driver is the raw_exec driver. Create it with New.
type Driver struct {
	logger hclog.Logger
	name   string // Name, or the isolating driver's name (NewIsolated)

	mu       sync.Mutex
	enabled  bool
	isolated bool // NewIsolated: tasks start only through StartIsolated
	tasks    map[string]*task
}

var (
	_ drivers.Driver = (*Driver)(nil)
)

// New returns a raw_exec driver. Like Nomad's, it is disabled until its
// plugin config sets enabled = true.
func New(logger hclog.Logger) *Driver {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &Driver{logger: logger, name: Name, tasks: map[string]*task{}}
}

// Name returns "raw_exec" (or the name given to NewIsolated).
func (d *Driver) Name() string { return d.name }

// SetConfig applies plugin "raw_exec" { config { enabled = true } }.
func (d *Driver) SetConfig(plugin map[string]any) error {
	if err := drivers.CheckFields(plugin, pluginFields...); err != nil {
		return err
	}
	enabled, _, err := drivers.ConfigBool(plugin, "enabled")
	if err != nil {
		return err
	}
	if _, _, err := drivers.ConfigBool(plugin, "no_cgroups"); err != nil {
		return err
	}
	d.mu.Lock()
	d.enabled = enabled
	d.mu.Unlock()
	return nil
}

func (d *Driver) isEnabled() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.enabled
}

// Fingerprint reports the driver detected and healthy when enabled; a
// disabled one is undetected with the description "disabled", as Nomad
// reports it, so jobs using it are not placed on the node ("missing
// drivers").
func (d *Driver) Fingerprint(context.Context) *drivers.Fingerprint {
	if !d.isEnabled() {
		return &drivers.Fingerprint{Detected: false, Healthy: false, HealthDescription: "disabled", Attributes: map[string]string{}}
	}
	return &drivers.Fingerprint{
		Detected:          true,
		Healthy:           true,
		HealthDescription: "Healthy",
		Attributes:        map[string]string{"driver.raw_exec": "1"},
	}
}

// ValidateTaskConfig checks command (required), args and work_dir.
func (d *Driver) ValidateTaskConfig(config map[string]any) error {
	_, err := parseTaskConfig(config)
	return err
}

// StartTask starts an executor for the task and returns once the task runs.
func (d *Driver) StartTask(cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	if cfg == nil || cfg.ID == "" {
		return nil, errors.New("raw_exec: task config with an ID is required")
	}
	if d.isolated {
		return nil, fmt.Errorf("%s: tasks start through StartIsolated", d.name)
	}
	if !d.isEnabled() {
		return nil, fmt.Errorf("%w: raw_exec (set enabled = true in plugin \"raw_exec\" config)", drivers.ErrDisabled)
	}
	tc, err := parseTaskConfig(cfg.Config)
	if err != nil {
		return nil, fmt.Errorf("invalid raw_exec config: %w", err)
	}
	spec, err := rawSpec(cfg, tc)
	if err != nil {
		return nil, err
	}
	return d.start(cfg, spec)
}

// rawSpec is the executor spec of a raw_exec task: the command resolved on
// the host, run from the task dir (or work_dir) as the task's user.
func rawSpec(cfg *drivers.TaskConfig, tc *taskConfig) (execSpec, error) {
	if cfg.TaskDir == "" {
		return execSpec{}, errors.New("raw_exec: task dir is required")
	}
	if err := os.MkdirAll(cfg.TaskDir, 0o755); err != nil {
		return execSpec{}, fmt.Errorf("raw_exec: creating task dir: %w", err)
	}
	path, err := resolveCommand(tc.Command, cfg.TaskDir, cfg.Env)
	if err != nil {
		return execSpec{}, fmt.Errorf("raw_exec: %w", err)
	}
	dir := cfg.TaskDir
	if tc.WorkDir != "" {
		dir = tc.WorkDir
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(cfg.TaskDir, dir)
		}
	}
	uid, gid, groups, err := lookupUser(cfg.User)
	if err != nil {
		return execSpec{}, fmt.Errorf("raw_exec: %w", err)
	}
	return execSpec{
		Path: path, Args: append([]string{tc.Command}, tc.Args...), Env: envList(cfg.Env), Dir: dir,
		StdoutPath: cfg.StdoutPath, StderrPath: cfg.StderrPath, LogLimits: cfg.LogLimits,
		UID: uid, GID: gid, Groups: groups,
	}, nil
}

// start reserves the task ID, starts the executor with spec and publishes
// the task once it runs.
func (d *Driver) start(cfg *drivers.TaskConfig, spec execSpec) (*drivers.TaskHandle, error) {
	d.mu.Lock()
	if _, ok := d.tasks[cfg.ID]; ok {
		d.mu.Unlock()
		return nil, fmt.Errorf("%w: %s", drivers.ErrTaskExists, cfg.ID)
	}
	d.tasks[cfg.ID] = nil // reserve the ID while starting; get ignores it
	d.mu.Unlock()

	if cfg.Network != nil {
		spec.NetNS = cfg.Network.Path
	}
	t := &task{id: cfg.ID, driver: d.name, cfg: cfg.Copy(), done: make(chan struct{})}
	cmd, err := d.startExecutor(t, spec)
	d.mu.Lock()
	if err != nil {
		delete(d.tasks, cfg.ID)
	} else {
		d.tasks[cfg.ID] = t
	}
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	d.logger.Debug("task started", "task", cfg.ID, "pid", t.state.TaskPID, "executor_pid", t.state.ExecutorPID)
	go t.watchChild(cmd)
	return t.handle()
}

func (d *Driver) startExecutor(t *task, spec execSpec) (*exec.Cmd, error) {
	cfg := t.cfg
	// The spec (the task's environment) and the exit record are the
	// driver's: they go in the private dir, which the task cannot reach.
	private := cfg.PrivateDir
	if private == "" {
		return nil, fmt.Errorf("%s: the task's private dir is required", d.name)
	}
	if err := os.MkdirAll(private, 0o700); err != nil {
		return nil, fmt.Errorf("%s: creating private dir: %w", d.name, err)
	}
	exitFile := filepath.Join(private, exitFileName)
	if err := os.Remove(exitFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: removing stale exit file: %w", d.name, err)
	}
	spec.ExitFile = exitFile
	spec.LogRoot = cfg.AllocDir
	specBytes, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	specFile := filepath.Join(private, specFileName)
	if err := writeNew(private, specFile, specBytes, 0o600); err != nil {
		return nil, fmt.Errorf("%s: writing executor spec: %w", d.name, err)
	}
	self, err := os.Executable()
	if err != nil {
		os.Remove(specFile)
		return nil, fmt.Errorf("%s: finding own executable: %w", d.name, err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		os.Remove(specFile)
		return nil, err
	}
	defer r.Close()
	cmd := exec.Command(self, ExecutorArg, specFile)
	cmd.Dir = cfg.TaskDir
	cmd.ExtraFiles = []*os.File{w} // fd 3
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	w.Close()
	if err != nil {
		os.Remove(specFile)
		return nil, fmt.Errorf("%s: starting executor: %w", d.name, err)
	}
	execStart := procStartTime(cmd.Process.Pid)

	_ = r.SetReadDeadline(time.Now().Add(startTimeout))
	var msg startMsg
	if err := json.NewDecoder(r).Decode(&msg); err != nil || msg.Error != "" || msg.TaskPID <= 0 {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		os.Remove(specFile)
		if err == nil && msg.Error != "" {
			err = errors.New(msg.Error)
		} else if err == nil {
			err = errors.New("no task PID reported")
		}
		return nil, fmt.Errorf("%s: starting task: %w", d.name, err)
	}
	t.state = State{
		ExecutorPID:   cmd.Process.Pid,
		TaskPID:       msg.TaskPID,
		TaskPGID:      msg.TaskPID,
		StartTime:     execStart,
		TaskStartTime: msg.TaskStartTime,
		ExitFile:      exitFile,
	}
	t.startedAt = time.Now()
	return cmd, nil
}

// WaitTask returns a channel yielding the task's exit result.
func (d *Driver) WaitTask(ctx context.Context, taskID string) (<-chan *drivers.ExitResult, error) {
	t, err := d.get(taskID)
	if err != nil {
		return nil, err
	}
	return drivers.WaitResult(ctx, t.done, t.resultCopy), nil
}

// StopTask signals the task's process group, then SIGKILLs it after timeout,
// and returns once the executor has recorded the exit.
func (d *Driver) StopTask(taskID string, timeout time.Duration, signal string) error {
	sig, err := drivers.ParseSignalDefault(signal)
	if err != nil {
		return err
	}
	t, err := d.get(taskID)
	if err != nil {
		return err
	}
	if t.exited() {
		return nil
	}
	escalated, err := drivers.StopEscalating(t.done, sig, timeout, killWait, t.signalGroup)
	if escalated {
		d.logger.Debug("task did not exit in time; killing", "task", taskID, "timeout", timeout)
	}
	if errors.Is(err, drivers.ErrStillRunning) {
		return fmt.Errorf("raw_exec: task %s did not exit %s after SIGKILL", taskID, killWait)
	}
	return err
}

// DestroyTask forgets a task; a running task is an error unless force, which
// kills it first.
func (d *Driver) DestroyTask(taskID string, force bool) error {
	t, err := d.get(taskID)
	if err != nil {
		return err
	}
	if !t.exited() {
		if !force {
			return fmt.Errorf("raw_exec: task %s is still running; stop it first or force", taskID)
		}
		if err := d.StopTask(taskID, 0, "SIGKILL"); err != nil {
			return err
		}
	}
	d.mu.Lock()
	if d.tasks[taskID] == t {
		delete(d.tasks, taskID)
	}
	d.mu.Unlock()
	return nil
}

// InspectTask reports the task's state, with pid, pgid and executor_pid
// attributes.
func (d *Driver) InspectTask(taskID string) (*drivers.TaskStatus, error) {
	t, err := d.get(taskID)
	if err != nil {
		return nil, err
	}
	st := &drivers.TaskStatus{
		ID:        taskID,
		State:     drivers.TaskStateRunning,
		StartedAt: t.startedAt,
		Attributes: map[string]string{
			"pid":          strconv.Itoa(t.state.TaskPID),
			"pgid":         strconv.Itoa(t.state.TaskPGID),
			"executor_pid": strconv.Itoa(t.state.ExecutorPID),
		},
	}
	if t.exited() {
		st.State = drivers.TaskStateExited
		st.CompletedAt = t.completedAt
		st.ExitResult = t.resultCopy()
	}
	return st, nil
}

// SignalTask sends signal to the task's process group.
func (d *Driver) SignalTask(taskID string, signal string) error {
	sig, err := drivers.ParseSignal(signal)
	if err != nil {
		return err
	}
	t, err := d.get(taskID)
	if err != nil {
		return err
	}
	if t.exited() {
		return fmt.Errorf("raw_exec: task %s has exited", taskID)
	}
	return t.signalGroup(sig)
}

// RecoverTask reattaches to a task started by a previous client process. It
// succeeds if the executor or the task is still alive (same start time), or
// if the executor recorded the task's exit; otherwise the error wraps
// drivers.ErrTaskNotFound.
func (d *Driver) RecoverTask(handle *drivers.TaskHandle) error {
	if handle == nil || handle.Config == nil {
		return errors.New("raw_exec: handle with a task config is required")
	}
	if handle.Driver != "" && handle.Driver != d.name {
		return fmt.Errorf("raw_exec: handle is for driver %q", handle.Driver)
	}
	id := handle.TaskID
	if id == "" {
		id = handle.Config.ID
	}
	var st State
	if err := json.Unmarshal(handle.DriverState, &st); err != nil {
		return fmt.Errorf("raw_exec: decoding driver state: %w", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.tasks[id]; ok {
		return nil // already attached
	}
	t := &task{id: id, driver: d.name, cfg: handle.Config.Copy(), state: st, startedAt: handle.StartedAt, done: make(chan struct{})}
	if rec, ok, err := readExitFile(t.exitFile()); err == nil && ok && t.ownsRecord(rec) {
		t.finish(rec.result(), rec.CompletedAt)
		d.tasks[id] = t
		return nil
	}
	if !processAlive(st.ExecutorPID, st.StartTime) && !processAlive(st.TaskPID, st.TaskStartTime) {
		return fmt.Errorf("%w: %s (executor %d and task %d are gone, no exit recorded)",
			drivers.ErrTaskNotFound, id, st.ExecutorPID, st.TaskPID)
	}
	d.tasks[id] = t
	go t.watchRecovered()
	return nil
}

func (d *Driver) get(taskID string) (*task, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.tasks[taskID]
	if t == nil {
		return nil, fmt.Errorf("%w: %s", drivers.ErrTaskNotFound, taskID)
	}
	return t, nil
}
