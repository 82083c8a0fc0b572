package mock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/drivers"
)

// Name is the driver name used in job specs.
const Name = "mock"

// CompatName is the same driver under the name Nomad's test jobs use. The
// only difference: a task without run_for (or run_for = 0) exits with
// exit_code once it has written its stdout (stdout_string and its
// repeats), instead of running until stopped.
const CompatName = "mock_driver"

// Simulated download size reported by PrepareTask.
const prepareBytesTotal = 100 << 20

// prepareTick is how often PrepareTask reports progress.
const prepareTick = 100 * time.Millisecond

func init() {
	drivers.Register(Name, func(l hclog.Logger) drivers.Driver { return New(l) })
	drivers.Register(CompatName, func(l hclog.Logger) drivers.Driver { return NewCompat(l) })
}

// State is the driver state persisted in TaskHandle.DriverState (JSON).
type State struct {
	StartedAt time.Time
	Config    map[string]any // the task's mock config block
}

// Driver is the mock driver. Create it with New.
type Driver struct {
	logger hclog.Logger
	name   string // Name or CompatName
	// exitWhenDone: a task without run_for exits once its stdout is
	// written (CompatName) rather than running until stopped.
	exitWhenDone bool

	mu       sync.Mutex
	enabled  bool
	tasks    map[string]*task
	prepared map[string]int
}

var (
	_ drivers.Driver   = (*Driver)(nil)
	_ drivers.Preparer = (*Driver)(nil)
)

// New returns an enabled mock driver.
func New(logger hclog.Logger) *Driver {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &Driver{logger: logger, name: Name, enabled: true, tasks: map[string]*task{}, prepared: map[string]int{}}
}

// NewCompat returns an enabled mock driver named CompatName.
func NewCompat(logger hclog.Logger) *Driver {
	d := New(logger)
	d.name, d.exitWhenDone = CompatName, true
	return d
}

// Name returns "mock" (or "mock_driver" for NewCompat).
func (d *Driver) Name() string { return d.name }

// SetConfig applies plugin "mock" { config { enabled = false } }.
func (d *Driver) SetConfig(plugin map[string]any) error {
	if err := drivers.CheckFields(plugin, "enabled"); err != nil {
		return err
	}
	enabled, ok, err := drivers.ConfigBool(plugin, "enabled")
	if err != nil {
		return err
	}
	if ok {
		d.mu.Lock()
		d.enabled = enabled
		d.mu.Unlock()
	}
	return nil
}

func (d *Driver) isEnabled() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.enabled
}

// Fingerprint reports the driver detected, and healthy when enabled.
func (d *Driver) Fingerprint(context.Context) *drivers.Fingerprint {
	if !d.isEnabled() {
		return &drivers.Fingerprint{Detected: true, HealthDescription: "disabled", Attributes: map[string]string{}}
	}
	return &drivers.Fingerprint{
		Detected:          true,
		Healthy:           true,
		HealthDescription: "Healthy",
		Attributes:        map[string]string{"driver." + d.name: "1"},
	}
}

// ValidateTaskConfig checks the mock config keys and their types.
func (d *Driver) ValidateTaskConfig(config map[string]any) error {
	_, err := parseTaskConfig(config)
	return err
}

// PrepareTask takes prepare_for, reporting progress every 100ms as if
// downloading 100MB, then fails with prepare_error if set.
func (d *Driver) PrepareTask(ctx context.Context, cfg *drivers.TaskConfig, progress func(drivers.PrepareProgress)) error {
	if cfg == nil {
		return errors.New("mock: task config is required")
	}
	mc, err := parseTaskConfig(cfg.Config)
	if err != nil {
		return fmt.Errorf("invalid mock config: %w", err)
	}
	d.mu.Lock()
	d.prepared[cfg.ID]++
	d.mu.Unlock()
	report := func(done int64, msg string) {
		if progress != nil {
			progress(drivers.PrepareProgress{Message: msg, BytesDone: done, BytesTotal: prepareBytesTotal})
		}
	}
	if total := mc.PrepareFor; total > 0 {
		began := time.Now()
		ticker := time.NewTicker(prepareTick)
		deadline := time.NewTimer(total)
		defer ticker.Stop()
		defer deadline.Stop()
	loop:
		for {
			select {
			case <-ctx.Done():
				return fmt.Errorf("mock: preparing task %s: %w", cfg.ID, ctx.Err())
			case <-deadline.C:
				break loop
			case <-ticker.C:
				elapsed := time.Since(began)
				if elapsed >= total {
					break loop // the deadline fired at the same instant
				}
				done := int64(float64(prepareBytesTotal) * float64(elapsed) / float64(total))
				report(done, fmt.Sprintf("Preparing mock task: %d%%", done*100/prepareBytesTotal))
			}
		}
	}
	if mc.PrepareError != "" {
		return fmt.Errorf("mock: preparing task %s: %w", cfg.ID, errors.New(mc.PrepareError))
	}
	report(prepareBytesTotal, "Prepared mock task")
	return nil
}

// Prepared returns how many times PrepareTask was called for taskID.
func (d *Driver) Prepared(taskID string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.prepared[taskID]
}

// StartTask blocks for start_block_for, fails with start_error if set, else
// writes stdout_string and starts the simulated task.
func (d *Driver) StartTask(cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	if cfg == nil || cfg.ID == "" {
		return nil, errors.New("mock: task config with an ID is required")
	}
	if !d.isEnabled() {
		return nil, fmt.Errorf("%w: mock", drivers.ErrDisabled)
	}
	mc, err := parseTaskConfig(cfg.Config)
	if err != nil {
		return nil, fmt.Errorf("invalid mock config: %w", err)
	}
	mc.ExitWhenDone = d.exitWhenDone
	d.mu.Lock()
	if _, ok := d.tasks[cfg.ID]; ok {
		d.mu.Unlock()
		return nil, fmt.Errorf("%w: %s", drivers.ErrTaskExists, cfg.ID)
	}
	d.tasks[cfg.ID] = nil // reserved while starting; get ignores it
	d.mu.Unlock()

	if mc.StartBlockFor > 0 {
		time.Sleep(mc.StartBlockFor)
	}
	if mc.StartError != "" {
		d.mu.Lock()
		delete(d.tasks, cfg.ID)
		d.mu.Unlock()
		return nil, drivers.NewRecoverableError(errors.New(mc.StartError), mc.StartErrorRecoverable)
	}
	cfg = cfg.Copy()
	now := time.Now()
	state, err := json.Marshal(State{StartedAt: now, Config: cfg.Config})
	if err != nil {
		d.mu.Lock()
		delete(d.tasks, cfg.ID)
		d.mu.Unlock()
		return nil, fmt.Errorf("mock: encoding state: %w", err)
	}
	t := newTask(cfg, mc, now, d.logger)
	t.writeStdout()
	d.mu.Lock()
	d.tasks[cfg.ID] = t
	d.mu.Unlock()
	go t.run(mc.RunFor, mc.StdoutRepeat)
	return &drivers.TaskHandle{Driver: d.name, TaskID: cfg.ID, Config: cfg.Copy(), DriverState: state, StartedAt: now}, nil
}

// RecoverTask re-creates a task from its handle: it keeps running for what
// is left of run_for, or has exited with exit_code if that has elapsed.
// recover_error makes it fail with an error wrapping drivers.ErrTaskNotFound.
func (d *Driver) RecoverTask(handle *drivers.TaskHandle) error {
	if handle == nil || handle.Config == nil {
		return errors.New("mock: handle with a task config is required")
	}
	if handle.Driver != "" && handle.Driver != d.name {
		return fmt.Errorf("mock: handle is for driver %q", handle.Driver)
	}
	var st State
	if err := json.Unmarshal(handle.DriverState, &st); err != nil {
		return fmt.Errorf("mock: decoding driver state: %w", err)
	}
	mc, err := parseTaskConfig(st.Config)
	if err != nil {
		return fmt.Errorf("mock: invalid config in driver state: %w", err)
	}
	mc.ExitWhenDone = d.exitWhenDone
	cfg := handle.Config.Copy()
	if handle.TaskID != "" {
		cfg.ID = handle.TaskID
	}
	if mc.RecoverError != "" {
		return fmt.Errorf("%w: %s: %s", drivers.ErrTaskNotFound, cfg.ID, mc.RecoverError)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.tasks[cfg.ID]; ok {
		return nil // already attached
	}
	t := newTask(cfg, mc, st.StartedAt, d.logger)
	d.tasks[cfg.ID] = t
	elapsed := time.Since(st.StartedAt)
	if (mc.RunFor > 0 || mc.ExitWhenDone) && elapsed >= mc.RunFor {
		t.finish(&drivers.ExitResult{ExitCode: mc.ExitCode}, st.StartedAt.Add(mc.RunFor))
		return nil
	}
	go t.run(mc.RunFor-elapsed, 0)
	return nil
}

// WaitTask returns a channel yielding the task's exit result.
func (d *Driver) WaitTask(ctx context.Context, taskID string) (<-chan *drivers.ExitResult, error) {
	t, err := d.get(taskID)
	if err != nil {
		return nil, err
	}
	return drivers.WaitResult(ctx, t.done, func() *drivers.ExitResult {
		res, _ := t.snapshot()
		return res
	}), nil
}

// StopTask "sends" signal: the task exits at once, or with kill_after after
// min(kill_after, timeout) (SIGKILL at the timeout). It returns once the
// task has exited.
func (d *Driver) StopTask(taskID string, timeout time.Duration, signal string) error {
	sig, err := drivers.ParseSignalDefault(signal)
	if err != nil {
		return err
	}
	t, err := d.get(taskID)
	if err != nil {
		return err
	}
	t.stop(killReq{sig: sig, timeout: timeout, now: sig == syscall.SIGKILL})
	return nil
}

// DestroyTask forgets a task; a running task is an error unless force.
func (d *Driver) DestroyTask(taskID string, force bool) error {
	t, err := d.get(taskID)
	if err != nil {
		return err
	}
	if !t.exited() {
		if !force {
			return fmt.Errorf("mock: task %s is still running; stop it first or force", taskID)
		}
		t.stop(killReq{sig: syscall.SIGKILL, now: true})
	}
	d.mu.Lock()
	if d.tasks[taskID] == t {
		delete(d.tasks, taskID)
	}
	d.mu.Unlock()
	return nil
}

// InspectTask reports the task's state.
func (d *Driver) InspectTask(taskID string) (*drivers.TaskStatus, error) {
	t, err := d.get(taskID)
	if err != nil {
		return nil, err
	}
	st := &drivers.TaskStatus{ID: taskID, State: drivers.TaskStateRunning, StartedAt: t.startedAt, Attributes: map[string]string{}}
	if t.exited() {
		st.State = drivers.TaskStateExited
		st.ExitResult, st.CompletedAt = t.snapshot()
	}
	return st, nil
}

// SignalTask records the signal (see Signals); SIGKILL kills the task.
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
		return fmt.Errorf("mock: task %s has exited", taskID)
	}
	t.mu.Lock()
	t.signals = append(t.signals, drivers.SignalName(sig))
	t.mu.Unlock()
	if sig == syscall.SIGKILL {
		t.stop(killReq{sig: sig, now: true})
	}
	return nil
}

// Signals returns the names of the signals SignalTask delivered to taskID
// ("SIGUSR1"), in order.
func (d *Driver) Signals(taskID string) []string {
	t, err := d.get(taskID)
	if err != nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.signals...)
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
