package lifecycle

import (
	"sort"

	"github.com/drover-project/drover/nomad/structs"
)

// Hooks of a task's lifecycle block.
const (
	HookPrestart  = "prestart"
	HookPoststart = "poststart"
	HookPoststop  = "poststop"
)

// Task states, as the task runner reports them.
const (
	statePending = "pending"
	stateRunning = "running"
	stateDead    = "dead"
)

// Task is the role of one task in its group.
type Task struct {
	Name    string
	Hook    string // "" for a main task, else one of the Hook constants
	Sidecar bool
	Leader  bool
}

// IsMain reports whether t has no lifecycle block.
func (t Task) IsMain() bool { return t.Hook == "" }

// IsPoststop reports whether t runs after every other task is dead.
func (t Task) IsPoststop() bool { return t.Hook == HookPoststop }

// IsSidecar reports whether t is a lifecycle task that runs for the
// allocation's life (sidecar = true).
func (t Task) IsSidecar() bool { return t.Hook != "" && t.Sidecar }

// IsEphemeral reports whether t is a lifecycle task that runs to
// completion: it is not restarted after it exits successfully.
func (t Task) IsEphemeral() bool { return t.Hook != "" && !t.Sidecar }

// TaskOf returns the role of task.
func TaskOf(task *structs.Task) Task {
	t := Task{Name: task.Name, Leader: task.Leader}
	if l := task.Lifecycle; l != nil {
		t.Hook, t.Sidecar = l.Hook, l.Sidecar
	}
	return t
}

// Tasks returns the roles of tg's tasks, in the group's order.
func Tasks(tg *structs.TaskGroup) []Task {
	out := make([]Task, 0, len(tg.Tasks))
	for _, task := range tg.Tasks {
		out = append(out, TaskOf(task))
	}
	return out
}

// Phase is how far an allocation's lifecycle has gone. Each phase lets
// the tasks of the earlier ones start too.
type Phase int

// Phases, in order.
const (
	PhasePrestart  Phase = iota // prestart tasks may start
	PhaseMain                   // and main tasks
	PhasePoststart              // and poststart tasks
	PhasePoststop               // every other task is dead: poststop tasks may start
)

func (p Phase) String() string {
	switch p {
	case PhasePrestart:
		return "prestart"
	case PhaseMain:
		return "main"
	case PhasePoststart:
		return "poststart"
	case PhasePoststop:
		return "poststop"
	}
	return "unknown"
}

// Allows reports whether t may start (or restart) in phase p.
func (p Phase) Allows(t Task) bool {
	switch t.Hook {
	case HookPrestart:
		return true
	case HookPoststart:
		return p >= PhasePoststart
	case HookPoststop:
		return p == PhasePoststop
	}
	return p >= PhaseMain
}

// RestartMark records a task an operator's restart of the allocation is
// restarting, as its state was when the restart began.
type RestartMark struct {
	Restarts uint64 // the task's Restarts count then
	WasDead  bool   // it had completed (a restart of every task re-runs it)
}

// Input is what Decide decides on.
type Input struct {
	Tasks  []Task
	States map[string]*structs.TaskState // by task name; missing or nil: pending
	// Phase is the phase reached so far (PhasePrestart for a new
	// allocation; see ResumePhase after a client restart).
	Phase Phase
	// Stopping: the allocation is being stopped (a desired stop, a local
	// replacement stopping it, Destroy). Every task but the poststop ones
	// is killed; the phase no longer moves to main or poststart.
	Stopping bool
	// NoPoststop: poststop tasks must not run (Destroy): they are killed,
	// and a stop kills the sidecars together with the other tasks, so the
	// stop takes no longer than the longest kill_timeout.
	NoPoststop bool
	// Restarting holds the tasks an operator's restart is restarting. Until
	// its restart shows in its state (Restarts grows), such a task counts
	// as neither running nor dead, so nothing moves on its old state.
	Restarting map[string]RestartMark
}

// Kill reasons.
const (
	KillStop          = "stop"           // the allocation is stopping: no reason event
	KillSiblingFailed = "sibling failed" // Cause failed for good
	KillLeaderDead    = "leader dead"    // Cause is the dead leader
	KillMainDead      = "main dead"      // only sidecars are left alive
)

// Kill orders one task killed.
type Kill struct {
	Task   string
	Reason string // one of the Kill constants
	Cause  string // the failed sibling or the dead leader; else ""
}

// Decision is what the alloc runner must do now. Carrying it out twice
// is harmless: kills and gate openings are idempotent.
type Decision struct {
	Phase Phase  // the phase now; never behind Input.Phase
	Kill  []Kill // tasks to kill now, in the group's order
	// Restarting is Input.Restarting without the tasks whose restart has
	// shown, or that died or are killed meanwhile.
	Restarting map[string]RestartMark
	// Done: every task is dead and none will start again; the runner may
	// release its task runners.
	Done bool
}

// view is a task's state as Decide reads it.
type view struct {
	state   string
	failed  bool
	started bool
}

// Decide returns what to do given the tasks' roles and states (see the
// package doc for the rules). It is pure.
func Decide(in Input) Decision {
	d := Decision{Phase: in.Phase, Restarting: map[string]RestartMark{}}
	views := make(map[string]view, len(in.Tasks))
	for _, t := range in.Tasks {
		v, restarting := viewOf(in.States[t.Name], in.Restarting, t.Name, in.Stopping)
		views[t.Name] = v
		if restarting {
			d.Restarting[t.Name] = in.Restarting[t.Name]
		}
	}
	if !in.Stopping {
		if d.Phase == PhasePrestart && prestartDone(in.Tasks, views) {
			d.Phase = PhaseMain
		}
		if d.Phase == PhaseMain && mainStarted(in.Tasks, views) {
			d.Phase = PhasePoststart
		}
	}
	if d.Phase < PhasePoststop && othersDead(in.Tasks, views) {
		d.Phase = PhasePoststop
	}
	d.Kill = kills(in, views, d.Phase)
	for _, k := range d.Kill {
		delete(d.Restarting, k.Task)
	}
	d.Done = true
	for _, t := range in.Tasks {
		if views[t.Name].state != stateDead {
			d.Done = false
		}
	}
	return d
}

// viewOf reads st; a task under an operator's restart that has not shown
// it yet reads as pending (restarting reports that it still is).
func viewOf(st *structs.TaskState, marks map[string]RestartMark, name string, stopping bool) (v view, restarting bool) {
	if st == nil {
		return view{state: statePending}, false
	}
	v = view{state: st.State, failed: st.Failed, started: !st.StartedAt.IsZero()}
	switch v.state {
	case stateRunning, stateDead:
	default:
		v.state = statePending
	}
	mark, ok := marks[name]
	if !ok || stopping || st.Restarts != mark.Restarts {
		return v, false
	}
	if v.state == stateDead && (!mark.WasDead || v.failed) {
		return v, false // it died by itself before restarting
	}
	return view{state: statePending, started: v.started}, true
}

// prestartDone: every ephemeral prestart task completed successfully and
// every prestart sidecar runs.
func prestartDone(tasks []Task, views map[string]view) bool {
	for _, t := range tasks {
		if t.Hook != HookPrestart {
			continue
		}
		v := views[t.Name]
		if t.Sidecar && v.state != stateRunning {
			return false
		}
		if !t.Sidecar && (v.state != stateDead || v.failed) {
			return false
		}
	}
	return true
}

// mainStarted: every main task runs or has run.
func mainStarted(tasks []Task, views map[string]view) bool {
	for _, t := range tasks {
		if !t.IsMain() {
			continue
		}
		if v := views[t.Name]; v.state != stateRunning && !(v.state == stateDead && v.started) {
			return false
		}
	}
	return true
}

// othersDead: every task but the poststop ones is dead.
func othersDead(tasks []Task, views map[string]view) bool {
	for _, t := range tasks {
		if !t.IsPoststop() && views[t.Name].state != stateDead {
			return false
		}
	}
	return true
}

// kills returns the tasks to kill: the live non-poststop tasks when there
// is a reason (non-sidecars first, sidecars once those are dead; all at
// once on a Destroy, which waits for no one), and the poststop tasks that
// must not run.
func kills(in Input, views map[string]view, phase Phase) []Kill {
	reason, cause := killReason(in, views)
	var live, liveNonSidecar []Task
	for _, t := range in.Tasks {
		if t.IsPoststop() || views[t.Name].state == stateDead {
			continue
		}
		live = append(live, t)
		if !t.IsSidecar() {
			liveNonSidecar = append(liveNonSidecar, t)
		}
	}
	var out []Kill
	if reason != "" {
		targets := live
		if len(liveNonSidecar) > 0 && !in.NoPoststop {
			targets = liveNonSidecar
		}
		for _, t := range targets {
			out = append(out, Kill{Task: t.Name, Reason: reason, Cause: cause})
		}
	}
	if in.NoPoststop || (phase == PhasePoststop && !anyStarted(in.Tasks, views)) {
		for _, t := range in.Tasks {
			if t.IsPoststop() && views[t.Name].state != stateDead {
				out = append(out, Kill{Task: t.Name, Reason: KillStop})
			}
		}
	}
	return out
}

// killReason says why the live non-poststop tasks must die, if they must:
// a stop; else a task that failed for good (the first by name); else a
// dead leader; else only sidecars are left alive.
func killReason(in Input, views map[string]view) (reason, cause string) {
	if in.Stopping {
		return KillStop, ""
	}
	byName := make([]Task, 0, len(in.Tasks))
	for _, t := range in.Tasks {
		if !t.IsPoststop() {
			byName = append(byName, t)
		}
	}
	sort.SliceStable(byName, func(i, j int) bool { return byName[i].Name < byName[j].Name })
	for _, t := range byName {
		if v := views[t.Name]; v.state == stateDead && v.failed {
			return KillSiblingFailed, t.Name
		}
	}
	for _, t := range byName {
		if t.Leader && views[t.Name].state == stateDead {
			return KillLeaderDead, t.Name
		}
	}
	hasMain, live, liveSidecar := false, 0, 0
	for _, t := range byName {
		hasMain = hasMain || t.IsMain()
		if views[t.Name].state != stateDead {
			live++
			if t.IsSidecar() {
				liveSidecar++
			}
		}
	}
	if hasMain && live > 0 && live == liveSidecar {
		return KillMainDead, ""
	}
	return "", ""
}

// anyStarted reports whether a task other than a poststop one ever started.
func anyStarted(tasks []Task, views map[string]view) bool {
	for _, t := range tasks {
		if !t.IsPoststop() && views[t.Name].started {
			return true
		}
	}
	return false
}

// ResumePhase is the phase to resume from after a client restart, given
// the restored states: poststop if a poststop task started, main if a main
// task started, else prestart. Decide moves it on from there.
func ResumePhase(tasks []Task, states map[string]*structs.TaskState) Phase {
	phase := PhasePrestart
	for _, t := range tasks {
		st := states[t.Name]
		if st == nil || st.StartedAt.IsZero() {
			continue
		}
		switch {
		case t.IsPoststop():
			return PhasePoststop
		case t.IsMain():
			phase = PhaseMain
		}
	}
	return phase
}
