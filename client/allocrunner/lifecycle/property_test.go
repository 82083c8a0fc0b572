package lifecycle

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/drover-project/drover/nomad/structs"
)

// TestDecideSafety checks Decide's invariants on random groups, states and
// phases:
//   - the phase never goes back, and reaches main only once the prestart
//     tasks are done (from prestart) and poststop only once every other
//     task is dead;
//   - a poststop task is killed only on a Destroy or when nothing ever ran;
//   - no sidecar is killed while another non-poststop task lives, except
//     on a Destroy;
//   - only live tasks are killed, each at most once;
//   - Done exactly when every task is dead.
func TestDecideSafety(t *testing.T) {
	hooks := []string{"", HookPrestart, HookPoststart, HookPoststop}
	stateNames := []string{statePending, stateRunning, stateDead}
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(t, "tasks")
		var tasks []Task
		states := map[string]*structs.TaskState{}
		for i := range n {
			task := Task{
				Name:    fmt.Sprintf("t%d", i),
				Hook:    rapid.SampledFrom(hooks).Draw(t, "hook"),
				Sidecar: rapid.Bool().Draw(t, "sidecar"),
				Leader:  rapid.IntRange(0, 5).Draw(t, "leader") == 0,
			}
			tasks = append(tasks, task)
			st := &structs.TaskState{State: rapid.SampledFrom(stateNames).Draw(t, "state")}
			if st.State == stateDead {
				st.Failed = rapid.Bool().Draw(t, "failed")
			}
			if st.State == stateRunning || rapid.Bool().Draw(t, "started") {
				st.StartedAt = t0
			}
			states[task.Name] = st
		}
		in := Input{
			Tasks: tasks, States: states,
			Phase:      Phase(rapid.IntRange(0, int(PhasePoststop)).Draw(t, "phase")),
			Stopping:   rapid.Bool().Draw(t, "stopping"),
			NoPoststop: rapid.Bool().Draw(t, "noPoststop"),
		}
		d := Decide(in)

		if d.Phase < in.Phase {
			t.Fatalf("phase went back from %s to %s", in.Phase, d.Phase)
		}
		views := map[string]view{}
		for _, task := range tasks {
			views[task.Name], _ = viewOf(states[task.Name], nil, task.Name, in.Stopping)
		}
		if in.Phase == PhasePrestart && d.Phase >= PhaseMain && d.Phase < PhasePoststop && !prestartDone(tasks, views) {
			t.Fatalf("main phase before the prestart tasks are done")
		}
		if in.Phase < PhasePoststop && d.Phase == PhasePoststop && !othersDead(tasks, views) {
			t.Fatalf("poststop phase while other tasks live")
		}
		liveOthers := 0
		for _, task := range tasks {
			if !task.IsPoststop() && !task.IsSidecar() && views[task.Name].state != stateDead {
				liveOthers++
			}
		}
		seen := map[string]bool{}
		for _, k := range d.Kill {
			var task Task
			for _, c := range tasks {
				if c.Name == k.Task {
					task = c
				}
			}
			if seen[k.Task] {
				t.Fatalf("%s killed twice", k.Task)
			}
			seen[k.Task] = true
			if views[k.Task].state == stateDead {
				t.Fatalf("dead task %s killed", k.Task)
			}
			if task.IsPoststop() && !in.NoPoststop && anyStarted(tasks, views) {
				t.Fatalf("poststop task %s killed though tasks ran", k.Task)
			}
			if task.IsSidecar() && !task.IsPoststop() && liveOthers > 0 && !in.NoPoststop {
				t.Fatalf("sidecar %s killed while %d other tasks live", k.Task, liveOthers)
			}
		}
		allDead := true
		for _, task := range tasks {
			allDead = allDead && views[task.Name].state == stateDead
		}
		if d.Done != allDead {
			t.Fatalf("Done %t, every task dead %t", d.Done, allDead)
		}
	})
}

// TestDecideMovesOnAsTasksProgress drives the five-task group through a
// whole life, one state change at a time, carrying the phase over.
func TestDecideMovesOnAsTasksProgress(t *testing.T) {
	states := st{}
	phase := PhasePrestart
	step := func(task string, s *structs.TaskState) Decision {
		if task != "" {
			states[task] = s
		}
		d := Decide(Input{Tasks: five, States: states, Phase: phase})
		phase = d.Phase
		return d
	}
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	runningSince := func(d time.Duration) *structs.TaskState {
		return &structs.TaskState{State: stateRunning, StartedAt: at(d)}
	}
	doneAt := func(start, end time.Duration) *structs.TaskState {
		return &structs.TaskState{State: stateDead, StartedAt: at(start), FinishedAt: at(end)}
	}
	for _, s := range []struct {
		task  string
		state *structs.TaskState
		phase Phase
		kill  []Kill
		done  bool
	}{
		{"", nil, PhasePrestart, nil, false},
		{"init", runningSince(0), PhasePrestart, nil, false},
		{"sidecar", runningSince(0), PhasePrestart, nil, false},
		{"init", doneAt(0, time.Second), PhaseMain, nil, false},
		{"main", runningSince(time.Second), PhasePoststart, nil, false},
		{"announce", runningSince(time.Second), PhasePoststart, nil, false},
		{"announce", doneAt(time.Second, 2*time.Second), PhasePoststart, nil, false},
		{"main", doneAt(time.Second, time.Minute), PhasePoststart, kill(KillMainDead, "", "sidecar"), false},
		{"sidecar", doneAt(0, time.Minute), PhasePoststop, nil, false},
		{"cleanup", runningSince(time.Minute), PhasePoststop, nil, false},
		{"cleanup", doneAt(time.Minute, 2*time.Minute), PhasePoststop, nil, true},
	} {
		d := step(s.task, s.state)
		if d.Phase != s.phase || fmt.Sprint(d.Kill) != fmt.Sprint(s.kill) || d.Done != s.done {
			t.Fatalf("after %s %v: got phase %s kill %v done %t, want %s %v %t", s.task, s.state, d.Phase, d.Kill, d.Done, s.phase, s.kill, s.done)
		}
	}
}
