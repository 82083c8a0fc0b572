package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"github.com/drover-project/drover/drivers"
)

// waitRetry is the pause before waiting on a container again after the
// daemon could not be reached.
var waitRetry = time.Second

// task is one container known to the driver. cfg, state and startedAt are
// set before the task is published; result and completedAt are written
// once, before done is closed, and read only after it is.
type task struct {
	id        string
	cfg       *drivers.TaskConfig
	state     State
	startedAt time.Time
	tty       bool // the container has a TTY (its logs are one raw stream)

	signalled atomic.Bool // a signal was sent: an exit code 128+n means signal n
	logs      *logStreamer
	cancel    context.CancelFunc // stops watching the container

	done        chan struct{}
	result      *drivers.ExitResult
	completedAt time.Time
}

func newTask(cfg *drivers.TaskConfig, st State, startedAt time.Time) *task {
	if startedAt.IsZero() {
		startedAt = time.Now()
	}
	return &task{id: cfg.ID, cfg: cfg, state: st, startedAt: startedAt, done: make(chan struct{})}
}

func (t *task) exited() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

func (t *task) resultCopy() *drivers.ExitResult {
	r := *t.result
	return &r
}

func (t *task) handle() (*drivers.TaskHandle, error) {
	b, err := json.Marshal(t.state)
	if err != nil {
		return nil, err
	}
	return &drivers.TaskHandle{Driver: Name, TaskID: t.id, Config: t.cfg.Copy(), DriverState: b, StartedAt: t.startedAt}, nil
}

// attach starts following the task's logs (from since; zero: from the
// start) and watching its container for the exit.
func (d *Driver) attach(cli containerLogger, t *task, since time.Time) {
	t.logs = startLogStreamer(d.logger, cli, t.state.ContainerID, logPosDir(t.cfg), logFiles{within: t.cfg.AllocDir, stdout: t.cfg.StdoutPath, stderr: t.cfg.StderrPath, limits: t.cfg.LogLimits, tty: t.tty}, since)
	ctx, cancel := context.WithCancel(context.Background())
	t.cancel = cancel
	go d.watch(ctx, t)
}

// watch waits for the container to stop, lets its logs drain and records
// the exit.
func (d *Driver) watch(ctx context.Context, t *task) {
	for {
		cli, err := d.client()
		if err != nil {
			d.finish(t, &drivers.ExitResult{ExitCode: -1, Err: err})
			return
		}
		okCh, errCh := cli.ContainerWait(ctx, t.state.ContainerID, container.WaitConditionNotRunning)
		select {
		case r := <-okCh:
			d.finish(t, d.exitResult(ctx, t, r))
			return
		case err := <-errCh:
			if ctx.Err() != nil {
				return
			}
			if cerrdefs.IsNotFound(err) {
				d.finish(t, &drivers.ExitResult{ExitCode: -1, Err: fmt.Errorf("docker: container %s is gone", shortID(t.state.ContainerID))})
				return
			}
			d.logger.Warn("waiting for container; retrying", "container", t.state.ContainerID, "error", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(waitRetry):
			}
		}
	}
}

// exitResult turns a wait response and the container's state into an exit
// result.
func (d *Driver) exitResult(ctx context.Context, t *task, r container.WaitResponse) *drivers.ExitResult {
	res := &drivers.ExitResult{ExitCode: int(r.StatusCode)}
	if r.Error != nil && r.Error.Message != "" {
		res.Err = errors.New(r.Error.Message)
	}
	if cli, err := d.client(); err == nil {
		if ins, err := cli.ContainerInspect(ctx, t.state.ContainerID); err == nil && ins.ContainerJSONBase != nil && ins.State != nil {
			res.ExitCode = ins.State.ExitCode
			res.OOMKilled = ins.State.OOMKilled
			if ins.State.Error != "" && res.Err == nil {
				res.Err = errors.New(ins.State.Error)
			}
		}
	}
	if n := res.ExitCode - 128; n > 0 && n <= 64 && (t.signalled.Load() || res.OOMKilled) {
		res.Signal = n
	}
	return res
}

// finish records the exit once the logs drained.
func (d *Driver) finish(t *task, r *drivers.ExitResult) {
	if t.logs != nil {
		t.logs.wait(logDrainTimeout)
	}
	t.result = r
	t.completedAt = time.Now()
	close(t.done)
	d.logger.Debug("task exited", "task", t.id, "result", r.String())
}

// WaitTask returns a channel yielding the task's exit result.
func (d *Driver) WaitTask(ctx context.Context, taskID string) (<-chan *drivers.ExitResult, error) {
	t, err := d.get(taskID)
	if err != nil {
		return nil, err
	}
	return drivers.WaitResult(ctx, t.done, t.resultCopy), nil
}

// kill sends sig to the container; a container that is gone or not running
// is not an error.
func (d *Driver) kill(t *task, sig syscall.Signal) error {
	cli, err := d.client()
	if err != nil {
		return err
	}
	t.signalled.Store(true)
	err = cli.ContainerKill(context.Background(), t.state.ContainerID, drivers.SignalName(sig))
	if err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
		return daemonError(fmt.Errorf("docker: signalling container %s: %w", shortID(t.state.ContainerID), cleanDaemonError(err)))
	}
	return nil
}

// StopTask sends signal (default SIGTERM) to the container, SIGKILL after
// timeout, and returns once the task has exited.
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
	escalated, err := drivers.StopEscalating(t.done, sig, timeout, killWait, func(s syscall.Signal) error { return d.kill(t, s) })
	if escalated {
		d.logger.Debug("container did not exit in time; killing", "task", taskID, "timeout", timeout)
	}
	if errors.Is(err, drivers.ErrStillRunning) {
		return fmt.Errorf("docker: task %s did not exit %s after SIGKILL", taskID, killWait)
	}
	return err
}

// DestroyTask removes the task's container and forgets the task; a running
// task is an error unless force, which kills it first.
func (d *Driver) DestroyTask(taskID string, force bool) error {
	t, err := d.get(taskID)
	if err != nil {
		return err
	}
	if !t.exited() {
		if !force {
			return fmt.Errorf("docker: task %s is still running; stop it first or force", taskID)
		}
		if err := d.StopTask(taskID, 0, "SIGKILL"); err != nil {
			return err
		}
	}
	cli, err := d.client()
	if err != nil {
		return err
	}
	err = cli.ContainerRemove(context.Background(), t.state.ContainerID, container.RemoveOptions{Force: force, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return daemonError(fmt.Errorf("docker: removing container %s: %w", shortID(t.state.ContainerID), cleanDaemonError(err)))
	}
	t.cancel()
	t.logs.stop()
	d.mu.Lock()
	if d.tasks[taskID] == t {
		delete(d.tasks, taskID)
	}
	d.mu.Unlock()
	return nil
}

// InspectTask reports the task's state with container_id, image_id and
// image attributes.
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
			"container_id": t.state.ContainerID,
			"image_id":     t.state.ImageID,
			"image":        t.state.Image,
		},
	}
	if t.exited() {
		st.State = drivers.TaskStateExited
		st.CompletedAt = t.completedAt
		st.ExitResult = t.resultCopy()
	}
	return st, nil
}

// SignalTask sends signal to the container.
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
		return fmt.Errorf("docker: task %s has exited", taskID)
	}
	return d.kill(t, sig)
}

// RecoverTask reattaches to the container of a task started by a previous
// client process (by the container ID in the handle's DriverState) and
// resumes its logs after the last line copied. A container that is gone
// gives an error wrapping drivers.ErrTaskNotFound; one that exited
// meanwhile is recovered as exited, with its exit code.
func (d *Driver) RecoverTask(handle *drivers.TaskHandle) error {
	if handle == nil || handle.Config == nil {
		return errors.New("docker: handle with a task config is required")
	}
	if handle.Driver != "" && handle.Driver != Name {
		return fmt.Errorf("docker: handle is for driver %q", handle.Driver)
	}
	id := handle.TaskID
	if id == "" {
		id = handle.Config.ID
	}
	var st State
	if err := json.Unmarshal(handle.DriverState, &st); err != nil {
		return fmt.Errorf("docker: decoding driver state: %w", err)
	}
	if st.ContainerID == "" {
		return fmt.Errorf("%w: %s (no container ID in the driver state)", drivers.ErrTaskNotFound, id)
	}
	cli, err := d.client()
	if err != nil {
		return err
	}
	ins, err := cli.ContainerInspect(context.Background(), st.ContainerID)
	if cerrdefs.IsNotFound(err) {
		return fmt.Errorf("%w: %s (container %s is gone)", drivers.ErrTaskNotFound, id, shortID(st.ContainerID))
	}
	if err != nil {
		return daemonError(fmt.Errorf("docker: inspecting container %s: %w", shortID(st.ContainerID), cleanDaemonError(err)))
	}
	cfg := handle.Config.Copy()
	cfg.ID = id
	startedAt := handle.StartedAt
	if ins.ContainerJSONBase != nil && ins.State != nil {
		if s := parseDockerTime(ins.State.StartedAt); !s.IsZero() {
			startedAt = s
		}
	}
	since := readLogPos(logPosDir(cfg)) // zero (no line copied yet): from the start
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.tasks[id]; ok {
		return nil // already attached
	}
	t := newTask(cfg, st, startedAt)
	t.tty = ins.Config != nil && ins.Config.Tty
	d.tasks[id] = t
	d.attach(cli, t, since)
	return nil
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
