package taskrunner

import (
	"context"
	"errors"
	"fmt"

	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/nomad/structs"
)

// Events of operator actions (Nomad's types and wording).
const (
	EventSignaling     = "Signaling"
	EventRestartSignal = "Restart Signaled"
)

// ErrTaskNotRunning is returned by Signal and Restart when the task has no
// running process (pending, between restarts, or dead).
var ErrTaskNotRunning = errors.New("Task not running")

// errUserRestart marks the exit of a task stopped by Restart: Run starts it
// again at once, outside the restart policy.
var errUserRestart = errors.New("task restarted by the user")

// Signal sends sig (a name such as "SIGHUP") to the running task and
// records it as an event.
func (tr *TaskRunner) Signal(sig string) error {
	tr.mu.Lock()
	h := tr.handle
	tr.mu.Unlock()
	if h == nil || tr.killed() {
		return ErrTaskNotRunning
	}
	if _, err := drivers.ParseSignal(sig); err != nil {
		return err
	}
	e := newEvent(EventSignaling, tr.now(), fmt.Sprintf("Task being sent signal %s: User requested signal", sig))
	e.Details[DetailSignal] = sig
	tr.emit(e)
	if err := tr.driver.SignalTask(h.TaskID, sig); err != nil {
		return fmt.Errorf("signalling task %s: %w", tr.name, err)
	}
	return nil
}

// Restart asks for the running task to be stopped (kill signal, kill
// timeout) and started again at once; the restart does not count against
// the restart policy. It does not block.
func (tr *TaskRunner) Restart() error { return tr.requestRestart(nil) }

// requestRestart asks the running task's wait loop to restart it; mark,
// when not nil, runs under tr.mu first, only when a task runs. It gives
// ErrTaskNotRunning when none does, and does not block (a pending restart
// absorbs another).
func (tr *TaskRunner) requestRestart(mark func()) error {
	tr.mu.Lock()
	h := tr.handle
	if h != nil && mark != nil {
		mark()
	}
	tr.mu.Unlock()
	if h == nil || tr.killed() {
		return ErrTaskNotRunning
	}
	select {
	case tr.restartCh <- struct{}{}:
	default: // a restart is already pending
	}
	return nil
}

// ForceRestart restarts the task whether it runs (as Restart) or has
// completed successfully and its runner keeps it (KeepAfterDone): then it
// runs again, once its gate is open. A task that failed, was killed or has
// not started gives ErrTaskNotRunning. It does not block.
func (tr *TaskRunner) ForceRestart() error {
	err := tr.Restart()
	if !errors.Is(err, ErrTaskNotRunning) {
		return err
	}
	st := tr.State()
	if !tr.keepAfterDone || tr.killed() || st.State != StateDead || st.Failed || st.StartedAt.IsZero() {
		return ErrTaskNotRunning
	}
	select {
	case tr.rerunCh <- struct{}{}:
	default: // a re-run is already pending
	}
	return nil
}

// stopForRestart stops the attached task for Restart and records the
// restart; Run then starts it again.
func (tr *TaskRunner) stopForRestart(h *drivers.TaskHandle, ch <-chan *drivers.ExitResult) *drivers.ExitResult {
	task := tr.Task()
	why, restarting := "User requested task to restart", "User requested restart"
	tr.mu.Lock()
	if tr.restartWhy != "" {
		why, restarting = tr.restartWhy, tr.restartWhy
		tr.restartWhy = ""
	}
	tr.mu.Unlock()
	tr.emit(newEvent(EventRestartSignal, tr.now(), why))
	timeout := task.KillTimeout
	if timeout <= 0 {
		timeout = DefaultKillTimeout
	}
	tr.emit(eventKilling(tr.now(), timeout, why))
	var res *drivers.ExitResult
	if err := tr.driver.StopTask(h.TaskID, timeout, task.KillSignal); err != nil {
		tr.logger.Warn("stopping task for a restart", "error", err)
		if !errors.Is(err, drivers.ErrTaskNotFound) {
			_ = tr.driver.DestroyTask(h.TaskID, true)
		}
	} else if r, ok := <-ch; ok {
		res = r
	}
	tr.detach()
	now := tr.now()
	tr.update(func(st *structs.TaskState) bool {
		if res != nil {
			appendEvent(st, eventTerminated(now, res))
		}
		appendEvent(st, eventRestarting(now, 0, restarting))
		st.State = StatePending
		st.Restarts++
		st.LastRestart = now
		return true
	})
	return &drivers.ExitResult{Err: errUserRestart}
}

// Exec runs a command in the running task through its driver (alloc
// exec). A driver without exec gives drivers.ErrExecNotSupported; a task
// without a running process, ErrTaskNotRunning.
func (tr *TaskRunner) Exec(ctx context.Context, opts *drivers.ExecOptions) (*drivers.ExitResult, error) {
	tr.mu.Lock()
	h := tr.handle
	tr.mu.Unlock()
	ex, ok := tr.driver.(drivers.Execer)
	if tr.driver != nil && !ok {
		return nil, drivers.ErrExecNotSupported
	}
	if h == nil || tr.killed() || !ok {
		return nil, ErrTaskNotRunning
	}
	return ex.ExecTask(ctx, h.TaskID, opts)
}
