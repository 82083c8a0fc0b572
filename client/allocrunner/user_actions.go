package allocrunner

import (
	"context"
	"errors"
	"fmt"

	"github.com/drover-project/drover/client/allocrunner/taskrunner"
	"github.com/drover-project/drover/drivers"
)

// ErrUnknownTask is returned for a task name the allocation does not have.
var ErrUnknownTask = errors.New("unknown task")

// Restart restarts the running task named task, or with task "" every
// running task (all: every task, an error if one is not running). Restarts
// do not count against the restart policy.
func (ar *AllocRunner) Restart(task string, all bool) error {
	trs, err := ar.selectTasks(task)
	if err != nil {
		return err
	}
	restarted := 0
	for _, tr := range trs {
		err := tr.Restart()
		switch {
		case err == nil:
			restarted++
		case errors.Is(err, taskrunner.ErrTaskNotRunning) && task == "" && !all:
			// restarting "the running tasks": skip the others
		default:
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
