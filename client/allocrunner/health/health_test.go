package health

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/drover-project/drover/nomad/structs"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func running(name string, since time.Duration) Task {
	return Task{Name: name, State: TaskRunning, StartedAt: at(since)}
}

func pending(name string) Task { return Task{Name: name, State: "pending"} }

func passing(id string, since time.Duration) Check {
	return Check{ID: id, Name: id, Passing: true, Since: at(since)}
}

func failing(id string, since time.Duration) Check {
	return Check{ID: id, Name: id, Since: at(since)}
}

// input is a group with min_healthy_time 10s and healthy_deadline 1m,
// tracked from t0.
func input(mode string, tasks []Task, checks ...Check) Input {
	return Input{Mode: mode, MinHealthyTime: 10 * time.Second, HealthyDeadline: time.Minute, Start: t0, Tasks: tasks, Checks: checks}
}

const (
	states = structs.UpdateHealthCheckTaskStates
	checks = structs.UpdateHealthCheckChecks
	manual = structs.UpdateHealthCheckManual
)

type want struct {
	decided, healthy bool
	reason           string    // exact, when set
	wakeAt           time.Time // checked when not decided
}

func undecided(wake time.Duration) want { return want{wakeAt: at(wake)} }

func TestEvaluate(t *testing.T) {
	healthy := want{decided: true, healthy: true, reason: ReasonHealthy}
	unhealthy := func(reason string) want { return want{decided: true, reason: reason} }
	tests := []struct {
		name string
		in   Input
		now  time.Duration
		want want
	}{
		// task_states
		{"running, min_healthy_time not elapsed", input(states, []Task{running("a", 0)}), 9 * time.Second, undecided(10 * time.Second)},
		{"running exactly min_healthy_time", input(states, []Task{running("a", 0)}), 10 * time.Second, healthy},
		{"the latest task start counts", input(states, []Task{running("a", 0), running("b", 3*time.Second)}), 12 * time.Second, undecided(13 * time.Second)},
		{"restart resets min_healthy_time", input(states, []Task{{Name: "a", State: TaskRunning, StartedAt: at(5 * time.Second), Restarts: 1, LastRestart: at(4 * time.Second)}}), 10 * time.Second, undecided(15 * time.Second)},
		{"waiting to restart is not running", input(states, []Task{{Name: "a", State: "pending", StartedAt: at(0), Restarts: 1, LastRestart: at(4 * time.Second)}}), 20 * time.Second, undecided(time.Minute)},
		{"pending task waits for the deadline", input(states, []Task{running("a", 0), pending("b")}), 30 * time.Second, undecided(time.Minute)},
		{"failed task is unhealthy at once", input(states, []Task{running("a", 0), {Name: "b", State: TaskDead, Failed: true}}), time.Second, unhealthy(fmt.Sprintf(ReasonFailedTask, "b"))},
		{"failed task beats a healthy sibling", input(states, []Task{running("a", 0), {Name: "b", State: TaskDead, Failed: true}}), 30 * time.Second, unhealthy(`Unhealthy because of failed task "b"`)},
		{"every task dead is unhealthy", input(states, []Task{{Name: "a", State: TaskDead}}), time.Second, unhealthy(ReasonTasksDead)},
		{"one dead task waits for the deadline", input(states, []Task{running("a", 0), {Name: "b", State: TaskDead}}), 30 * time.Second, undecided(time.Minute)},
		{"not running by the deadline", input(states, []Task{pending("a")}), time.Minute, unhealthy("Task not running by healthy_deadline of 1m0s")},
		{"not running long enough by the deadline", input(states, []Task{running("a", 55*time.Second)}), time.Minute, unhealthy("Task not running for min_healthy_time of 10s by healthy_deadline of 1m0s")},
		{"ready after the deadline wakes at the deadline", input(states, []Task{running("a", 55*time.Second)}), 56 * time.Second, undecided(time.Minute)},
		{"ready exactly at the deadline", input(states, []Task{running("a", 50*time.Second)}), time.Minute, healthy},
		{"late look, ready before the deadline", input(states, []Task{running("a", 0)}), 2 * time.Minute, healthy},
		{"late look, ready after the deadline", input(states, []Task{running("a", 55*time.Second)}), 2 * time.Minute, unhealthy("Task not running for min_healthy_time of 10s by healthy_deadline of 1m0s")},
		{"task_states ignores checks", input(states, []Task{running("a", 0)}, failing("c", 0)), 10 * time.Second, healthy},
		{"no task state yet", input(states, nil), time.Second, undecided(time.Minute)},
		{"no deadline: nothing to wake for", Input{Mode: states, MinHealthyTime: time.Second, Start: t0, Tasks: []Task{pending("a")}}, time.Hour, want{}},
		{"no deadline, ready later", Input{Mode: states, MinHealthyTime: time.Second, Start: t0, Tasks: []Task{running("a", time.Hour)}}, time.Hour, undecided(time.Hour + time.Second)},
		{"zero min_healthy_time", Input{Mode: states, HealthyDeadline: time.Minute, Start: t0, Tasks: []Task{running("a", 5*time.Second)}}, 5 * time.Second, healthy},
		{"min_healthy_time counts from Start (a new deployment)", Input{Mode: states, MinHealthyTime: 10 * time.Second, HealthyDeadline: time.Minute, Start: at(time.Hour), Tasks: []Task{running("a", 0)}}, time.Hour + time.Second, undecided(time.Hour + 10*time.Second)},

		// Completed tasks.
		{"completed batch tasks are healthy at once", input(checks, []Task{{Name: "a", State: TaskDead, CompleteOK: true}}, failing("c", 0)), time.Second, healthy},
		{"a completed lifecycle task does not block", input(states, []Task{{Name: "init", State: TaskDead, CompleteOK: true}, running("a", 0)}), 10 * time.Second, healthy},

		// checks
		{"check failing waits for the deadline", input(checks, []Task{running("a", 0)}, failing("c", 0)), 30 * time.Second, undecided(time.Minute)},
		{"check failing at the deadline", input(checks, []Task{running("a", 0)}, failing("c", 0)), time.Minute, unhealthy("Service checks not passing by healthy_deadline of 1m0s")},
		{"check passing later moves readiness", input(checks, []Task{running("a", 0)}, passing("c", 20*time.Second)), 25 * time.Second, undecided(30 * time.Second)},
		{"check failing then passing is healthy", input(checks, []Task{running("a", 0)}, passing("c", 20*time.Second), passing("d", 0)), 30 * time.Second, healthy},
		{"checks passing too late", input(checks, []Task{running("a", 0)}, passing("c", 55*time.Second)), time.Minute, unhealthy("Service checks not passing for min_healthy_time of 10s by healthy_deadline of 1m0s")},
		{"checks mode without checks is task_states", input(checks, []Task{running("a", 0)}), 10 * time.Second, healthy},
		{"empty mode is checks", input("", []Task{running("a", 0)}, failing("c", 0)), 10 * time.Second, undecided(time.Minute)},
		{"task not running beats failing checks in the reason", input(checks, []Task{pending("a")}, failing("c", 0)), time.Minute, unhealthy("Task not running by healthy_deadline of 1m0s")},

		// manual and unknown modes never decide.
		{"manual never decides", input(manual, []Task{{Name: "a", State: TaskDead, Failed: true}}), time.Hour, want{reason: ReasonManual, wakeAt: time.Time{}}},
		{"manual with healthy tasks", input(manual, []Task{running("a", 0)}), time.Hour, want{reason: ReasonManual}},
		{"unknown mode never decides", input("bogus", []Task{running("a", 0)}), time.Hour, want{reason: `Unknown health_check "bogus": health is not tracked`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Evaluate(tc.in, at(tc.now))
			require.Equal(t, tc.want.decided, got.Decided, "decided (reason %q)", got.Reason)
			if tc.want.reason != "" {
				require.Equal(t, tc.want.reason, got.Reason)
			}
			if got.Decided {
				require.Equal(t, tc.want.healthy, got.Healthy, "healthy")
				require.True(t, got.WakeAt.IsZero(), "a decision has no WakeAt")
				return
			}
			require.Equal(t, tc.want.wakeAt, got.WakeAt, "WakeAt")
		})
	}
}

// genInput draws an Input around t0 with durations in whole seconds.
func genInput(t *rapid.T) Input {
	sec := func(label string, max int) time.Duration {
		return time.Duration(rapid.IntRange(0, max).Draw(t, label)) * time.Second
	}
	in := Input{
		Mode:            rapid.SampledFrom([]string{"", states, checks, manual}).Draw(t, "mode"),
		MinHealthyTime:  sec("min", 30),
		HealthyDeadline: sec("deadline", 120),
		Start:           t0,
	}
	for i := range rapid.IntRange(0, 3).Draw(t, "tasks") {
		task := Task{
			Name:      fmt.Sprintf("t%d", i),
			State:     rapid.SampledFrom([]string{"pending", TaskRunning, TaskDead}).Draw(t, "state"),
			StartedAt: at(sec("started", 120)),
		}
		task.Failed = task.State == TaskDead && rapid.Bool().Draw(t, "failed")
		task.CompleteOK = task.State == TaskDead && !task.Failed && rapid.Bool().Draw(t, "ok")
		in.Tasks = append(in.Tasks, task)
	}
	for i := range rapid.IntRange(0, 3).Draw(t, "checks") {
		in.Checks = append(in.Checks, Check{ID: fmt.Sprintf("c%d", i), Passing: rapid.Bool().Draw(t, "passing"), Since: at(sec("since", 120))})
	}
	return in
}

// With the input unchanged, a decision never changes later, and an
// undecided allocation stays undecided until WakeAt.
func TestEvaluateIsStableUntilWakeAt(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genInput(t)
		now := at(time.Duration(rapid.IntRange(0, 200).Draw(t, "now")) * time.Second)
		later := now.Add(time.Duration(rapid.IntRange(0, 300_000).Draw(t, "later_ms")) * time.Millisecond)
		first, second := Evaluate(in, now), Evaluate(in, later)
		if first.Decided {
			require.True(t, second.Decided, "a decision is final")
			require.Equal(t, first.Healthy, second.Healthy)
			return
		}
		if first.WakeAt.IsZero() || later.Before(first.WakeAt) {
			require.False(t, second.Decided, "decided at %v before WakeAt %v", later, first.WakeAt)
		}
		if !first.WakeAt.IsZero() {
			require.True(t, first.WakeAt.After(now), "WakeAt %v not after now %v", first.WakeAt, now)
		}
		if in.Mode == manual {
			require.True(t, first.WakeAt.IsZero())
		}
	})
}

// An allocation is never unhealthy before its deadline unless a task
// failed or every task died, and never healthy before min_healthy_time has
// passed since tracking began and since every task started.
func TestEvaluateNeverEarly(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genInput(t)
		now := at(time.Duration(rapid.IntRange(0, 200).Draw(t, "now")) * time.Second)
		res := Evaluate(in, now)
		if !res.Decided {
			return
		}
		require.NotEqual(t, manual, in.Mode)
		deadline := in.Start.Add(in.HealthyDeadline)
		if !res.Healthy && in.HealthyDeadline > 0 && now.Before(deadline) {
			early := res.Reason == ReasonTasksDead || strings.HasPrefix(res.Reason, "Unhealthy because of failed task")
			require.True(t, early, "unhealthy before the deadline: %s", res.Reason)
		}
		if res.Healthy {
			allDone := len(in.Tasks) > 0
			for _, task := range in.Tasks {
				allDone = allDone && task.CompleteOK
			}
			if !allDone {
				require.False(t, now.Before(in.Start.Add(in.MinHealthyTime)), "healthy before min_healthy_time since Start")
				for _, task := range in.Tasks {
					if !task.CompleteOK {
						require.False(t, now.Before(task.StartedAt.Add(in.MinHealthyTime)), "healthy before min_healthy_time")
					}
				}
			}
		}
	})
}

func TestRecord(t *testing.T) {
	r := &Record{DeploymentID: "d1", Start: t0}
	require.False(t, r.Decided())
	require.Nil(t, r.Status(true))
	var nilRec *Record
	require.False(t, nilRec.Decided())

	d := r.Decide(Result{Decided: true, Healthy: true, Reason: ReasonHealthy}, at(time.Minute))
	require.False(t, r.Decided(), "Decide returns a copy")
	require.True(t, d.Decided())
	st := d.Status(true)
	require.True(t, st.IsHealthy())
	require.True(t, st.Canary)
	require.Equal(t, at(time.Minute), st.Timestamp)
	u := r.Decide(Result{Decided: true, Reason: "x"}, at(time.Minute)).Status(false)
	require.True(t, u.IsUnhealthy())
	require.False(t, u.Canary)
}
