package taskrunner

import (
	"context"
	"errors"

	"github.com/drover-project/drover/client/allocrunner/taskenv"
	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/nomad/structs"
)

// prestartHook runs before every start of the task (after Prepare). A
// hook returns the event reporting its failure with the error; nil, nil
// means done. Hooks run in order; the first failure stops the start.
type prestartHook interface {
	Name() string
	Prestart(ctx context.Context, env *taskenv.Env, task *structs.Task) (*structs.TaskEvent, error)
}

// prestartHooks builds the task's hooks, in their order: artifacts first
// (templates may read what they fetched).
func (tr *TaskRunner) prestartHooks(cfg *Config) []prestartHook {
	return []prestartHook{newArtifactsHook(tr, cfg.Artifact)}
}

// runPrestart runs the prestart hooks. A failure is returned as the exit
// of the attempt (recoverable: the restart policy decides) with its event;
// stop is set when the task was killed or the runner shuts down meanwhile.
func (tr *TaskRunner) runPrestart() (exit *drivers.ExitResult, ev *structs.TaskEvent, stop bool) {
	alloc, task := tr.currentAlloc()
	env := tr.buildEnv(alloc, task)
	for _, h := range tr.prestart {
		ev, err := h.Prestart(tr.ctx, env, task)
		if err == nil {
			continue
		}
		if tr.ctx.Err() != nil || errors.Is(err, context.Canceled) {
			if tr.killed() && !tr.shuttingDown() {
				tr.finishKilled()
			}
			return nil, nil, true
		}
		tr.logger.Warn("prestart hook failed", "hook", h.Name(), "error", err)
		return &drivers.ExitResult{Err: drivers.NewRecoverableError(err, true)}, ev, false
	}
	return nil, nil, false
}
