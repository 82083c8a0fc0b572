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
// while it is not running. For "" (a group service check without a task,
// whose check_restart restarts the whole allocation) it is the latest
// start of the running tasks, zero when none runs.
func (h *healthHook) taskStarted(task string) time.Time {
	var latest time.Time
	for _, tr := range h.ar.tasks {
		if task != "" && tr.Name() != task {
			continue
		}
		if st := tr.State(); st != nil && st.State == taskrunner.StateRunning && st.StartedAt.After(latest) {
			latest = st.StartedAt
		}
	}
	return latest
}

// restartUnhealthy carries out check_restart's decision for def's task,
// or for every running task of the allocation when def has none.
func (h *healthHook) restartUnhealthy(def health.CheckDef, reason string) {
	trs, err := h.ar.selectTasks(def.Task)
	if err != nil {
		h.ar.logger.Warn("check_restart: not restarting", "task", def.Task, "check", def.Name, "error", err)
		return
	}
	for _, tr := range trs {
		if err := tr.RestartUnhealthy(reason); err != nil {
			h.ar.logger.Warn("check_restart: not restarting the task", "task", tr.Name(), "check", def.Name, "error", err)
			continue
		}
		h.ar.logger.Info("check_restart: restarting the task", "task", tr.Name(), "check", def.Name)
	}
}
