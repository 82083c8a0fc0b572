package taskrunner

import (
	"errors"

	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/nomad/structs"
)

// errUnhealthy is the exit of a task stopped by RestartUnhealthy whose
// stop gave no exit result.
var errUnhealthy = errors.New("task stopped: a health check is unhealthy")

// RestartUnhealthy asks for the running task to be stopped because a
// check with check_restart stayed unhealthy; reason is the check's
// (health.RestartReason). Unlike Restart, the stop counts as a failed exit:
// the restart policy decides whether and when the task starts again
// (Nomad's check_restart). It does not block.
func (tr *TaskRunner) RestartUnhealthy(reason string) error {
	return tr.requestRestart(func() { tr.checkRestart = reason })
}

// takeCheckRestart returns and clears the reason of a pending
// RestartUnhealthy ("" for none).
func (tr *TaskRunner) takeCheckRestart() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	r := tr.checkRestart
	tr.checkRestart = ""
	return r
}

// stopUnhealthy stops the attached task for RestartUnhealthy and returns
// its exit and Terminated event (nil when the stop gave no result) for
// the restart policy.
func (tr *TaskRunner) stopUnhealthy(h *drivers.TaskHandle, ch <-chan *drivers.ExitResult, reason string) (*drivers.ExitResult, *structs.TaskEvent) {
	task := tr.Task()
	signaled := newEvent(EventRestartSignal, tr.now(), reason)
	signaled.Details[DetailRestartReason] = reason
	tr.emit(signaled)
	timeout := task.KillTimeout
	if timeout <= 0 {
		timeout = DefaultKillTimeout
	}
	tr.emit(eventKilling(tr.now(), timeout, reason))
	var res *drivers.ExitResult
	if err := tr.driver.StopTask(h.TaskID, timeout, task.KillSignal); err != nil {
		tr.logger.Warn("stopping an unhealthy task", "error", err)
		if !errors.Is(err, drivers.ErrTaskNotFound) {
			_ = tr.driver.DestroyTask(h.TaskID, true)
		}
	} else if r, ok := <-ch; ok {
		res = r
	}
	tr.detach()
	if res == nil {
		return &drivers.ExitResult{Err: errUnhealthy}, nil
	}
	if res.Successful() { // a clean exit on the kill signal still counts as a failure
		res.Err = errUnhealthy
	}
	return res, eventTerminated(tr.now(), res)
}
