package allocrunner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/drover-project/drover/client/allocrunner/health"
	"github.com/drover-project/drover/client/allocrunner/taskrunner"
	"github.com/drover-project/drover/drivers"
)

// What the health hook's checks need from the allocation's tasks: script
// checks run in a task through its driver's exec, and check_restart
// restarts a task through its runner (see package health).

// execInTask runs a script check's command in the named task (a
// health.TaskExec).
func (h *healthHook) execInTask(ctx context.Context, task string, command []string, out io.Writer) (health.ScriptExit, error) {
	res, err := h.ar.Exec(ctx, task, &drivers.ExecOptions{Command: command, Stdout: out, Stderr: out})
	switch {
	case errors.Is(err, taskrunner.ErrTaskNotRunning):
		return health.ScriptExit{}, fmt.Errorf("task %q: %w", task, health.ErrTaskNotRunning)
	case err != nil:
		return health.ScriptExit{}, err
	case res == nil:
		return health.ScriptExit{}, errors.New("the driver gave no exit result")
	case res.Err != nil:
		return health.ScriptExit{}, res.Err
	}
	return health.ScriptExit{ExitCode: res.ExitCode, Signal: res.Signal}, nil
}

// taskStarted returns when the named task last started, or the zero time
// while it is not running.
func (h *healthHook) taskStarted(task string) time.Time {
	for _, tr := range h.ar.tasks {
		if tr.Name() != task {
			continue
		}
		if st := tr.State(); st != nil && st.State == taskrunner.StateRunning {
			return st.StartedAt
		}
	}
	return time.Time{}
}

// restartUnhealthy carries out check_restart's decision for def's task.
func (h *healthHook) restartUnhealthy(def health.CheckDef, reason string) {
	trs, err := h.ar.selectTasks(def.Task)
	if err == nil && def.Task != "" {
		err = trs[0].RestartUnhealthy(reason)
	}
	if err != nil {
		h.ar.logger.Warn("check_restart: not restarting the task", "task", def.Task, "check", def.Name, "error", err)
		return
	}
	h.ar.logger.Info("check_restart: restarting the task", "task", def.Task, "check", def.Name)
}
