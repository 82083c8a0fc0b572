package lifecycle

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// States of the tables: pending (never started), running, done (dead,
// successful, had started), failed (dead for good, had started), killed
// before start (dead, never started), restarting (pending, had started).
var (
	pending    = &structs.TaskState{State: statePending}
	running    = &structs.TaskState{State: stateRunning, StartedAt: t0}
	done       = &structs.TaskState{State: stateDead, StartedAt: t0, FinishedAt: t0.Add(time.Second)}
	failed     = &structs.TaskState{State: stateDead, Failed: true, StartedAt: t0, FinishedAt: t0.Add(time.Second)}
	neverRan   = &structs.TaskState{State: stateDead, FinishedAt: t0}
	failedInit = &structs.TaskState{State: stateDead, Failed: true, FinishedAt: t0}
	restarting = &structs.TaskState{State: statePending, StartedAt: t0, Restarts: 1}
)

var (
	initTask  = Task{Name: "init", Hook: HookPrestart}
	sidecar   = Task{Name: "sidecar", Hook: HookPrestart, Sidecar: true}
	mainTask  = Task{Name: "main"}
	main2     = Task{Name: "main2"}
	leader    = Task{Name: "leader", Leader: true}
	announce  = Task{Name: "announce", Hook: HookPoststart}
	poststart = Task{Name: "logship", Hook: HookPoststart, Sidecar: true}
	cleanup   = Task{Name: "cleanup", Hook: HookPoststop}
)

// five is the group of the e2e test: one task of each kind.
var five = []Task{initTask, sidecar, mainTask, announce, cleanup}

type st = map[string]*structs.TaskState

func kill(reason, cause string, tasks ...string) []Kill {
	out := make([]Kill, len(tasks))
	for i, t := range tasks {
		out[i] = Kill{Task: t, Reason: reason, Cause: cause}
	}
	return out
}

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name       string
		tasks      []Task
		states     st
		phase      Phase
		stopping   bool
		noPoststop bool
		wantPhase  Phase
		wantKill   []Kill
		wantDone   bool
	}{
		// Ordering.
		{name: "no lifecycle: main at once", tasks: []Task{mainTask, main2}, states: st{}, wantPhase: PhaseMain},
		{name: "new allocation waits for prestart", tasks: five, states: st{}, wantPhase: PhasePrestart},
		{name: "nil states are pending", tasks: five, states: st{"init": nil}, wantPhase: PhasePrestart},
		{name: "ephemeral prestart running holds main", tasks: five,
			states: st{"init": running, "sidecar": running}, wantPhase: PhasePrestart},
		{name: "sidecar not running yet holds main", tasks: five,
			states: st{"init": done, "sidecar": pending}, wantPhase: PhasePrestart},
		{name: "sidecar restarting holds main before main began", tasks: five,
			states: st{"init": done, "sidecar": restarting}, wantPhase: PhasePrestart},
		{name: "prestart done and sidecar running: main", tasks: five,
			states: st{"init": done, "sidecar": running}, wantPhase: PhaseMain},
		{name: "only a sidecar prestart", tasks: []Task{sidecar, mainTask},
			states: st{"sidecar": running}, wantPhase: PhaseMain},
		{name: "main running: poststart", tasks: five,
			states: st{"init": done, "sidecar": running, "main": running}, wantPhase: PhasePoststart},
		{name: "one main of two running holds poststart", tasks: []Task{mainTask, main2, announce},
			states: st{"main": running, "main2": pending}, phase: PhaseMain, wantPhase: PhaseMain},
		{name: "a main that ran and completed counts as started", tasks: []Task{mainTask, main2, announce},
			states: st{"main": done, "main2": running}, phase: PhaseMain, wantPhase: PhasePoststart},
		{name: "phases never go back: a sidecar restarting per policy", tasks: five,
			states: st{"init": done, "sidecar": restarting, "main": running}, phase: PhasePoststart, wantPhase: PhasePoststart},
		{name: "a failed prestart reaches no main phase", tasks: five,
			states: st{"init": failed, "sidecar": running}, wantPhase: PhasePrestart,
			wantKill: kill(KillSiblingFailed, "init", "main", "announce")},

		// Kills.
		{name: "all running: nothing to kill", tasks: []Task{mainTask, main2},
			states: st{"main": running, "main2": running}, phase: PhasePoststart, wantPhase: PhasePoststart},
		{name: "a completed main among running ones kills nothing", tasks: []Task{mainTask, main2},
			states: st{"main": done, "main2": running}, phase: PhasePoststart, wantPhase: PhasePoststart},
		{name: "failed main kills its siblings, sidecars last", tasks: five,
			states: st{"init": done, "sidecar": running, "main": failed, "announce": running}, phase: PhasePoststart,
			wantPhase: PhasePoststart, wantKill: kill(KillSiblingFailed, "main", "announce")},
		{name: "then the sidecar", tasks: five,
			states: st{"init": done, "sidecar": running, "main": failed, "announce": neverRan}, phase: PhasePoststart,
			wantPhase: PhasePoststart, wantKill: kill(KillSiblingFailed, "main", "sidecar")},
		{name: "first failed by name", tasks: []Task{{Name: "c"}, {Name: "b"}, {Name: "a"}},
			states: st{"c": failed, "b": failed, "a": running}, phase: PhasePoststart,
			wantPhase: PhasePoststart, wantKill: kill(KillSiblingFailed, "b", "a")},
		{name: "failure while others pending", tasks: []Task{mainTask, main2},
			states: st{"main": pending, "main2": failed}, phase: PhaseMain,
			wantPhase: PhaseMain, wantKill: kill(KillSiblingFailed, "main2", "main")},
		{name: "dead leader kills the others", tasks: []Task{leader, mainTask},
			states: st{"leader": done, "main": running}, phase: PhasePoststart,
			wantPhase: PhasePoststart, wantKill: kill(KillLeaderDead, "leader", "main")},
		{name: "running leader kills nothing", tasks: []Task{leader, mainTask},
			states: st{"leader": running, "main": done}, phase: PhasePoststart, wantPhase: PhasePoststart},
		{name: "failure beats a dead leader", tasks: []Task{leader, mainTask, main2},
			states: st{"leader": done, "main": failed, "main2": running}, phase: PhasePoststart,
			wantPhase: PhasePoststart, wantKill: kill(KillSiblingFailed, "main", "main2")},
		{name: "main completed: sidecars are killed", tasks: []Task{initTask, sidecar, mainTask, poststart},
			states: st{"init": done, "sidecar": running, "main": done, "logship": running}, phase: PhasePoststart,
			wantPhase: PhasePoststart, wantKill: kill(KillMainDead, "", "sidecar", "logship")},
		{name: "an ephemeral poststart still running keeps sidecars", tasks: five,
			states: st{"init": done, "sidecar": running, "main": done, "announce": running}, phase: PhasePoststart,
			wantPhase: PhasePoststart},
		{name: "sidecars only, no main task: nothing killed", tasks: []Task{sidecar},
			states: st{"sidecar": running}, phase: PhaseMain, wantPhase: PhasePoststart},

		// Poststop.
		{name: "poststop waits while others run", tasks: five,
			states: st{"init": done, "sidecar": running, "main": running, "announce": done}, phase: PhasePoststart,
			wantPhase: PhasePoststart},
		{name: "all others dead: poststop", tasks: five,
			states: st{"init": done, "sidecar": done, "main": done, "announce": done}, phase: PhasePoststart,
			wantPhase: PhasePoststop},
		{name: "poststop also after a failure", tasks: five,
			states: st{"init": failed, "sidecar": done, "main": neverRan, "announce": neverRan}, phase: PhasePrestart,
			wantPhase: PhasePoststop},
		{name: "nothing ever started: poststop is killed", tasks: five,
			states:    st{"init": failedInit, "sidecar": neverRan, "main": neverRan, "announce": neverRan},
			wantPhase: PhasePoststop, wantKill: kill(KillStop, "", "cleanup")},
		{name: "poststop running: not done", tasks: five,
			states: st{"init": done, "sidecar": done, "main": done, "announce": done, "cleanup": running}, phase: PhasePoststop,
			wantPhase: PhasePoststop},
		{name: "everything dead: done", tasks: five,
			states: st{"init": done, "sidecar": done, "main": done, "announce": done, "cleanup": done}, phase: PhasePoststop,
			wantPhase: PhasePoststop, wantDone: true},
		{name: "a failed poststop kills nothing", tasks: []Task{mainTask, cleanup, {Name: "cleanup2", Hook: HookPoststop}},
			states: st{"main": done, "cleanup": failed, "cleanup2": running}, phase: PhasePoststop,
			wantPhase: PhasePoststop},

		// Stops.
		{name: "stop kills non-sidecars first", tasks: five,
			states: st{"init": done, "sidecar": running, "main": running, "announce": running}, phase: PhasePoststart,
			stopping: true, wantPhase: PhasePoststart, wantKill: kill(KillStop, "", "main", "announce")},
		{name: "stop then kills the sidecar", tasks: five,
			states: st{"init": done, "sidecar": running, "main": done, "announce": done}, phase: PhasePoststart,
			stopping: true, wantPhase: PhasePoststart, wantKill: kill(KillStop, "", "sidecar")},
		{name: "stop does not move to main", tasks: five,
			states: st{"init": done, "sidecar": running}, stopping: true,
			wantPhase: PhasePrestart, wantKill: kill(KillStop, "", "main", "announce")},
		{name: "stop of a running allocation still runs poststop", tasks: five,
			states: st{"init": done, "sidecar": done, "main": done, "announce": done}, phase: PhasePoststart, stopping: true,
			wantPhase: PhasePoststop},
		{name: "a stop does not kill a running poststop", tasks: five,
			states: st{"init": done, "sidecar": done, "main": done, "announce": done, "cleanup": running}, phase: PhasePoststop,
			stopping: true, wantPhase: PhasePoststop},
		{name: "destroy kills poststop at once", tasks: five,
			states: st{"init": done, "sidecar": running, "main": running, "announce": done}, phase: PhasePoststart,
			stopping: true, noPoststop: true, wantPhase: PhasePoststart,
			wantKill: append(kill(KillStop, "", "sidecar", "main"), Kill{Task: "cleanup", Reason: KillStop})},
		{name: "destroy before the stop kills only poststop", tasks: five,
			states: st{"init": done, "sidecar": running, "main": running, "announce": done}, phase: PhasePoststart,
			noPoststop: true, wantPhase: PhasePoststart, wantKill: kill(KillStop, "", "cleanup")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(Input{Tasks: tc.tasks, States: tc.states, Phase: tc.phase, Stopping: tc.stopping, NoPoststop: tc.noPoststop})
			require.Equal(t, tc.wantPhase, d.Phase, "phase %s", d.Phase)
			require.Equal(t, tc.wantKill, d.Kill)
			require.Equal(t, tc.wantDone, d.Done)
		})
	}
}

// An operator's restart resets the phase to prestart; the tasks it
// restarts read as pending until their restart shows.
func TestDecideDuringAnOperatorRestart(t *testing.T) {
	// Restart of the running tasks: the sidecar and main still run, the
	// completed init is not re-run.
	marks := map[string]RestartMark{"sidecar": {Restarts: 0}, "main": {Restarts: 0}}
	states := st{"init": done, "sidecar": running, "main": running, "announce": done}
	d := Decide(Input{Tasks: five, States: states, Restarting: marks})
	require.Equal(t, PhasePrestart, d.Phase, "the sidecar has not restarted yet: main waits")
	require.Empty(t, d.Kill)
	require.Equal(t, marks, d.Restarting)

	// The sidecar restarted and runs again (Restarts grew): main may go.
	states["sidecar"] = &structs.TaskState{State: stateRunning, StartedAt: t0.Add(time.Minute), Restarts: 1}
	states["main"] = restarting
	d = Decide(Input{Tasks: five, States: states, Restarting: d.Restarting})
	require.Equal(t, PhaseMain, d.Phase)
	require.Empty(t, d.Restarting)

	// Restart of every task: the completed init runs again first.
	marks = map[string]RestartMark{"init": {WasDead: true}, "sidecar": {}, "main": {}, "announce": {WasDead: true}}
	states = st{"init": done, "sidecar": running, "main": running, "announce": done}
	d = Decide(Input{Tasks: five, States: states, Restarting: marks})
	require.Equal(t, PhasePrestart, d.Phase)
	require.Empty(t, d.Kill, "a completed task being re-run is not dead: nothing is killed, poststop waits")
	require.False(t, d.Done)

	// A restarted task that died by itself before restarting is dead.
	marks = map[string]RestartMark{"main": {}}
	d = Decide(Input{Tasks: []Task{sidecar, mainTask}, States: st{"sidecar": running, "main": failed}, Phase: PhaseMain, Restarting: marks})
	require.Equal(t, kill(KillSiblingFailed, "main", "sidecar"), d.Kill)
	require.Empty(t, d.Restarting)

	// A stop ends every pending restart.
	marks = map[string]RestartMark{"init": {WasDead: true}}
	d = Decide(Input{Tasks: []Task{initTask, mainTask}, States: st{"init": done, "main": done}, Phase: PhasePoststart, Stopping: true, Restarting: marks})
	require.True(t, d.Done)
	require.Empty(t, d.Restarting)
}

func TestPhaseAllows(t *testing.T) {
	for _, tc := range []struct {
		phase Phase
		want  map[string]bool
	}{
		{PhasePrestart, map[string]bool{"init": true, "sidecar": true}},
		{PhaseMain, map[string]bool{"init": true, "sidecar": true, "main": true}},
		{PhasePoststart, map[string]bool{"init": true, "sidecar": true, "main": true, "announce": true}},
		{PhasePoststop, map[string]bool{"init": true, "sidecar": true, "main": true, "announce": true, "cleanup": true}},
	} {
		for _, task := range five {
			require.Equal(t, tc.want[task.Name], tc.phase.Allows(task), "%s in %s", task.Name, tc.phase)
		}
	}
}

func TestResumePhase(t *testing.T) {
	require.Equal(t, PhasePrestart, ResumePhase(five, st{"init": running}))
	require.Equal(t, PhaseMain, ResumePhase(five, st{"init": done, "sidecar": restarting, "main": running}),
		"main already ran: a sidecar restarting does not hold it back")
	require.Equal(t, PhasePoststop, ResumePhase(five, st{"main": done, "cleanup": running}))
	require.Equal(t, PhaseMain, ResumePhase([]Task{mainTask}, st{"main": done}))
}

func TestTasksOfAGroup(t *testing.T) {
	tg := &structs.TaskGroup{Tasks: []*structs.Task{
		{Name: "init", Lifecycle: &structs.TaskLifecycle{Hook: HookPrestart}},
		{Name: "sidecar", Lifecycle: &structs.TaskLifecycle{Hook: HookPrestart, Sidecar: true}},
		{Name: "leader", Leader: true},
	}}
	got := Tasks(tg)
	require.Equal(t, []Task{initTask, sidecar, leader}, got)
	require.True(t, got[0].IsEphemeral())
	require.False(t, got[1].IsEphemeral())
	require.True(t, got[1].IsSidecar())
	require.True(t, got[2].IsMain())
	require.False(t, got[2].IsSidecar())
}
