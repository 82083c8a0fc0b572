package allocrunner

import (
	"context"
	"errors"
	"fmt"

	"github.com/drover-project/drover/client/allocrunner/lifecycle"
	"github.com/drover-project/drover/client/allocrunner/taskrunner"
	"github.com/drover-project/drover/drivers"
)

// ErrUnknownTask is returned for a task name the allocation does not have.
var ErrUnknownTask = errors.New("unknown task")

// Restart restarts the running task named task. With task "" it restarts
// the allocation as Nomad does: the lifecycle starts over at prestart (the
// main tasks wait for the prestart sidecars to run again), and every
// running task is restarted; with all, the tasks that completed are run
// again too (ephemeral prestart tasks before the main tasks, poststart
// ones after), while poststop tasks that have not run are left alone.
// Restarts do not count against the restart policy. ErrTaskNotRunning when
// nothing was restarted.
func (ar *AllocRunner) Restart(task string, all bool) error {
	if task != "" {
		trs, err := ar.selectTasks(task)
		if err != nil {
			return err
		}
		if err := trs[0].Restart(); err != nil {
			return fmt.Errorf("task %q: %w", task, err)
		}
		return nil
	}
	if ar.isKilled() {
		return taskrunner.ErrTaskNotRunning
	}
	marks := map[string]lifecycle.RestartMark{}
	var targets []*taskrunner.TaskRunner
	for _, tr := range ar.tasks {
		st := tr.State()
		switch {
		case st.State == taskrunner.StateRunning:
			marks[tr.Name()] = lifecycle.RestartMark{Restarts: st.Restarts}
		case all && st.State == taskrunner.StateDead && !st.Failed && !st.StartedAt.IsZero():
			marks[tr.Name()] = lifecycle.RestartMark{Restarts: st.Restarts, WasDead: true}
		default:
			continue
		}
		targets = append(targets, tr)
	}
	if len(targets) == 0 {
		return taskrunner.ErrTaskNotRunning
	}
	// Invariants: the gates of the later phases are closed before any task
	// restarts, so a restarted main task waits for the prestart tasks.
	if !ar.restartLifecycle(marks) {
		all = false // only poststop tasks are left: restart those running
	}
	defer ar.applyLifecycle()
	restarted := 0
	for _, tr := range targets {
		var err error
		if all {
			err = tr.ForceRestart()
		} else {
			err = tr.Restart()
		}
		switch {
		case err == nil:
			restarted++
		case errors.Is(err, taskrunner.ErrTaskNotRunning):
			ar.forgetRestart(tr.Name()) // it ended meanwhile
		default:
			ar.forgetRestart(tr.Name())
			return fmt.Errorf("task %q: %w", tr.Name(), err)
		}
	}
	if restarted == 0 {
		return taskrunner.ErrTaskNotRunning
	}
	return nil
}

// Signal sends sig to the task named task, or with task "" to every
// running task.
func (ar *AllocRunner) Signal(task, sig string) error {
	trs, err := ar.selectTasks(task)
	if err != nil {
		return err
	}
	sent := 0
	for _, tr := range trs {
		err := tr.Signal(sig)
		switch {
		case err == nil:
			sent++
		case errors.Is(err, taskrunner.ErrTaskNotRunning) && task == "":
		default:
			return fmt.Errorf("task %q: %w", tr.Name(), err)
		}
	}
	if sent == 0 {
		return taskrunner.ErrTaskNotRunning
	}
	return nil
}

// selectTasks returns the task runner named task, or all when task is "".
func (ar *AllocRunner) selectTasks(task string) ([]*taskrunner.TaskRunner, error) {
	if task == "" {
		return ar.tasks, nil
	}
	for _, tr := range ar.tasks {
		if tr.Name() == task {
			return []*taskrunner.TaskRunner{tr}, nil
		}
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownTask, task)
}

// Exec runs a command in the running task named task (see
// taskrunner.TaskRunner.Exec); an empty or unknown name is ErrUnknownTask.
func (ar *AllocRunner) Exec(ctx context.Context, task string, opts *drivers.ExecOptions) (*drivers.ExitResult, error) {
	if task == "" {
		return nil, fmt.Errorf("%w %q", ErrUnknownTask, task)
	}
	trs, err := ar.selectTasks(task)
	if err != nil {
		return nil, err
	}
	return trs[0].Exec(ctx, opts)
}
