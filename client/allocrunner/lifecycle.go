package allocrunner

import (
	"sync"

	"github.com/drover-project/drover/client/allocrunner/lifecycle"
	"github.com/drover-project/drover/client/allocrunner/taskrunner"
	"github.com/drover-project/drover/nomad/structs"
)

// lifecycleState is what the runner remembers between the decisions of
// package lifecycle: the phase reached, whether the allocation is
// stopping, and the tasks an operator's restart is restarting. Every task
// runner starts behind its gate; applyLifecycle opens the gates the phase
// allows.
type lifecycleState struct {
	roles      []lifecycle.Task                 // immutable, in the group's order
	gates      map[string]*taskrunner.Gate      // by task name; immutable map
	mu         sync.Mutex                       // guards the fields below; held while a decision is carried out
	phase      lifecycle.Phase                  // the phase reached
	stopping   bool                             // the allocation is stopping (after the prekill hooks)
	noPoststop bool                             // Destroy: poststop tasks must not run
	marks      map[string]lifecycle.RestartMark // tasks an operator's restart is restarting
}

// newLifecycleState returns the state of a group's tasks, every gate
// closed.
func newLifecycleState(tg *structs.TaskGroup) *lifecycleState {
	ls := &lifecycleState{roles: lifecycle.Tasks(tg), gates: map[string]*taskrunner.Gate{}}
	for _, r := range ls.roles {
		ls.gates[r.Name] = taskrunner.NewGate()
	}
	return ls
}

// resumeLifecycle sets the phase the allocation starts from: the
// restored task states say how far it had gone (prestart for a new one).
func (ar *AllocRunner) resumeLifecycle() {
	ls := ar.lc
	states := ar.taskStates()
	ls.mu.Lock()
	ls.phase = lifecycle.ResumePhase(ls.roles, states)
	ls.mu.Unlock()
}

// applyLifecycle decides on the current task states (lifecycle.Decide)
// and carries the decision out: it opens the gates the phase allows (and
// closes the others), kills what must die with the reason as the task's
// event, and, once every task is dead, releases the task runners that wait
// after their task completed. Safe to call at any time, from any goroutine.
func (ar *AllocRunner) applyLifecycle() {
	ls := ar.lc
	ls.mu.Lock()
	defer ls.mu.Unlock()
	d := lifecycle.Decide(lifecycle.Input{
		Tasks: ls.roles, States: ar.taskStates(), Phase: ls.phase,
		Stopping: ls.stopping, NoPoststop: ls.noPoststop, Restarting: ls.marks,
	})
	if d.Phase != ls.phase {
		ar.logger.Debug("lifecycle phase", "from", ls.phase, "to", d.Phase)
	}
	ls.phase, ls.marks = d.Phase, d.Restarting
	for _, r := range ls.roles {
		if d.Phase.Allows(r) {
			ls.gates[r.Name].Open()
		} else {
			ls.gates[r.Name].Close()
		}
	}
	for _, k := range d.Kill {
		if tr := ar.taskRunner(k.Task); tr != nil {
			tr.Kill(ar.killEvent(k))
		}
	}
	if d.Done {
		for _, tr := range ar.tasks {
			tr.Kill(nil) // the task is dead: this only ends a runner kept for a restart
		}
	}
}

// killEvent is the event recorded on a task killed for k's reason, or nil
// for a stop.
func (ar *AllocRunner) killEvent(k lifecycle.Kill) *structs.TaskEvent {
	switch k.Reason {
	case lifecycle.KillSiblingFailed:
		return taskrunner.NewSiblingFailed(ar.now(), k.Cause)
	case lifecycle.KillLeaderDead:
		return taskrunner.NewLeaderDead(ar.now())
	case lifecycle.KillMainDead:
		return taskrunner.NewMainDead(ar.now())
	}
	return ar.maxRunKillEvent() // a stop: nil unless max_run_duration was exceeded
}

// stopLifecycle marks the allocation stopping (noPoststop: poststop tasks
// must not run either) and carries it out.
func (ar *AllocRunner) stopLifecycle(stop, noPoststop bool) {
	ar.lc.mu.Lock()
	ar.lc.stopping = ar.lc.stopping || stop
	ar.lc.noPoststop = ar.lc.noPoststop || noPoststop
	ar.lc.mu.Unlock()
	ar.applyLifecycle()
}

// restartLifecycle starts the lifecycle over at prestart for an
// operator's restart of the allocation; marks are the tasks being
// restarted. It reports false (and does nothing) when the allocation is
// stopping or only its poststop tasks are left.
func (ar *AllocRunner) restartLifecycle(marks map[string]lifecycle.RestartMark) bool {
	ls := ar.lc
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.stopping || ls.phase == lifecycle.PhasePoststop {
		return false
	}
	ls.phase = lifecycle.PhasePrestart
	ls.marks = marks
	for _, r := range ls.roles {
		if !ls.phase.Allows(r) {
			ls.gates[r.Name].Close()
		}
	}
	return true
}

// forgetRestart drops task from the tasks being restarted (its restart was
// refused).
func (ar *AllocRunner) forgetRestart(task string) {
	ar.lc.mu.Lock()
	delete(ar.lc.marks, task)
	ar.lc.mu.Unlock()
}

// taskRunner returns the runner of the task named name, or nil.
func (ar *AllocRunner) taskRunner(name string) *taskrunner.TaskRunner {
	for _, tr := range ar.tasks {
		if tr.Name() == name {
			return tr
		}
	}
	return nil
}
