package allocrunner

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/drover-project/drover/nomad/structs"
)

// RunnerHook is one part of an alloc runner's lifecycle. A hook implements
// any of the phase interfaces below, discovered by type assertion; the
// order of hooks is set in one place, initHooks. Hooks must be idempotent,
// and Postrun, PreKill and Destroy must be safe without Prerun (a runner
// may be destroyed without ever running).
type RunnerHook interface {
	Name() string
}

// Prerunner runs before any task starts. An error stops the remaining
// prerun hooks; the alloc then fails unless it was killed or shut down
// (ctx is cancelled then).
type Prerunner interface {
	RunnerHook
	Prerun(ctx context.Context, req *PrerunRequest) error
}

// PrerunRequest is the input of Prerun.
type PrerunRequest struct {
	// Restored is set when the runner was restored after a client restart
	// and some of its tasks had already started.
	Restored bool
}

// Postrunner runs once every task is dead (not on Shutdown).
type Postrunner interface {
	RunnerHook
	Postrun() error
}

// Updater sees every newer server version of the allocation. It must not
// block.
type Updater interface {
	RunnerHook
	Update(req *UpdateRequest) error
}

// UpdateRequest is the input of Update.
type UpdateRequest struct {
	Alloc *structs.Allocation // the new version, with its Job
}

// PreKiller runs before the runner kills its tasks (desired stop, StopTasks,
// Destroy). It may block (a shutdown delay) but must return promptly once
// the runner shuts down.
type PreKiller interface {
	RunnerHook
	PreKill(req *PreKillRequest)
}

// PreKillRequest is the input of PreKill.
type PreKillRequest struct {
	TasksStarted bool // whether any task has started
	// NoShutdownDelay: the operator asked for the kill to skip shutdown
	// delays (DesiredTransition.NoShutdownDelay).
	NoShutdownDelay bool
}

// TaskStateWatcher is told after any task's state changed. It must not
// block.
type TaskStateWatcher interface {
	RunnerHook
	TaskStateChanged()
}

// Destroyer cleans up after the runner is done, when it is destroyed.
type Destroyer interface {
	RunnerHook
	Destroy() error
}

// runHooks calls fn on every hook implementing H, in order, timing and
// logging each call. With stopOnErr the first error ends the loop; otherwise
// every hook runs and the errors are joined.
func runHooks[H RunnerHook](ar *AllocRunner, phase string, stopOnErr bool, fn func(H) error) error {
	var errs []error
	for _, hook := range ar.hooks {
		h, ok := hook.(H)
		if !ok {
			continue
		}
		start := time.Now()
		err := fn(h)
		ar.logger.Trace("ran hook", "phase", phase, "hook", h.Name(), "duration", time.Since(start), "error", err)
		if err != nil {
			err = fmt.Errorf("%s hook %q: %w", phase, h.Name(), err)
			if stopOnErr {
				return err
			}
			ar.logger.Error("hook failed", "phase", phase, "hook", h.Name(), "error", err)
			errs = append(errs, err)
		}
	}
	return joinErrs(errs)
}

// initHooks builds the runner's hooks, in the order they run. The health
// hook runs first: healthy_deadline counts the whole set-up (the prepare
// step, a data migration), and an allocation whose set-up fails in any
// later hook is tracked, so its deployment learns at once that it is
// unhealthy.
func (ar *AllocRunner) initHooks(node *structs.Node, prevData PrevDataFetcher, taskAPI func(string, string) (io.Closer, error)) {
	ar.healthHook = newHealthHook(ar, node)
	ar.hooks = []RunnerHook{
		ar.healthHook,
		&allocDirHook{dir: ar.allocDir, tasks: ar.taskNames()},
		&dispatchPayloadHook{dir: ar.allocDir, alloc: ar.alloc},
	}
	if taskAPI != nil {
		ar.taskAPI = newTaskAPIHook(ar, taskAPI)
		ar.hooks = append(ar.hooks, ar.taskAPI)
	}
	ar.hooks = append(ar.hooks, newPrepareHook(ar))
	// After prepare: the previous allocation has stopped by then.
	if h := newDiskMigrateHook(ar, prevData); h != nil {
		ar.migrateHook = h
		ar.hooks = append(ar.hooks, h)
	}
	ar.hooks = append(ar.hooks,
		newShutdownDelayHook(ar),
		&stateHook{db: ar.stateDB, allocID: ar.id},
	)
}

// addNetworkHook puts the network hook before the prepare hook: the
// namespace (pause container, CNI ADD, port mappings) is built while the
// previous allocation still serves, so the node's dark time is its stop
// and the tasks' start only. The portmap plugin appends a new
// allocation's rules after the previous one's, so a static port keeps
// reaching the previous allocation until its namespace goes. The
// namespace goes only after every task is dead (Postrun).
func (ar *AllocRunner) addNetworkHook(h *networkHook) {
	for i, hook := range ar.hooks {
		if _, ok := hook.(*prepareHook); ok {
			ar.hooks = append(ar.hooks[:i], append([]RunnerHook{h}, ar.hooks[i:]...)...)
			return
		}
	}
	ar.hooks = append(ar.hooks, h)
}
