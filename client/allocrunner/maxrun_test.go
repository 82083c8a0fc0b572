package allocrunner

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/client/allocrunner/taskrunner"
	"github.com/drover-project/drover/nomad/structs"
)

func withMaxRun(job *structs.Job, d time.Duration) *structs.Job {
	job.TaskGroups[0].MaxRunDuration = &d
	return job
}

func TestMaxRunBound(t *testing.T) {
	alloc := func(jobType string, d *time.Duration) *structs.Allocation {
		a := newAlloc(newJob(jobType, mockTask("t", nil)))
		a.Job.TaskGroups[0].MaxRunDuration = d
		return a
	}
	d := func(v time.Duration) *time.Duration { return &v }
	cases := []struct {
		name  string
		alloc *structs.Allocation
		want  time.Duration
	}{
		{"batch", alloc(structs.JobTypeBatch, d(time.Minute)), time.Minute},
		{"sysbatch", alloc(structs.JobTypeSysBatch, d(time.Hour)), time.Hour},
		{"unset", alloc(structs.JobTypeBatch, nil), 0},
		{"zero is no bound", alloc(structs.JobTypeBatch, d(0)), 0},
		{"negative is no bound", alloc(structs.JobTypeBatch, d(-time.Second)), 0},
		{"service jobs have none", alloc(structs.JobTypeService, d(time.Minute)), 0},
		{"system jobs have none", alloc(structs.JobTypeSystem, d(time.Minute)), 0},
		{"no job", &structs.Allocation{TaskGroup: "g"}, 0},
		{"unknown group", func() *structs.Allocation {
			a := alloc(structs.JobTypeBatch, d(time.Minute))
			a.TaskGroup = "other"
			return a
		}(), 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, maxRunBound(tc.alloc))
		})
	}
}

func TestMaxRunStart(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	started := now.Add(-40 * time.Minute)
	received := now.Add(-45 * time.Minute)
	states := map[string]*structs.TaskState{
		"main": {State: taskrunner.StateRunning, StartedAt: started,
			Events: []*structs.TaskEvent{{Type: taskrunner.EventReceived, Time: received.UnixNano()}}},
		"later":   {State: taskrunner.StateRunning, StartedAt: now.Add(-time.Minute)},
		"pending": {State: taskrunner.StatePending},
		"nil":     nil,
	}
	require.Equal(t, now, maxRunStart(states, false, now), "a new allocation starts its clock now")
	got := maxRunStart(states, true, now)
	require.True(t, received.Equal(got), "a restored one from the earliest time its states record: %s", got)
	require.Equal(t, now, maxRunStart(map[string]*structs.TaskState{"p": {State: taskrunner.StatePending}}, true, now),
		"nothing recorded: now")
	future := map[string]*structs.TaskState{"m": {StartedAt: now.Add(time.Hour)}}
	require.Equal(t, now, maxRunStart(future, true, now), "a time after now does not move the start")
}

func TestMaxRunLeft(t *testing.T) {
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		bound  time.Duration
		now    time.Time
		left   time.Duration
		bounds bool
	}{
		{"no bound", 0, start.Add(time.Hour), 0, false},
		{"just started", time.Minute, start, time.Minute, true},
		{"half way", time.Minute, start.Add(30 * time.Second), 30 * time.Second, true},
		{"exactly up", time.Minute, start.Add(time.Minute), 0, true},
		{"long past", time.Minute, start.Add(time.Hour), 0, true},
		{"a raised bound gives time back", 2 * time.Hour, start.Add(time.Hour), time.Hour, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			left, ok := maxRunLeft(tc.bound, start, tc.now)
			require.Equal(t, tc.bounds, ok)
			require.Equal(t, tc.left, left)
		})
	}
}

// TestMaxRunDurationStopsTheAllocation: when a batch group's
// max_run_duration is up, its tasks are killed (the reason recorded), the
// poststop task never runs, and the allocation completes with Nomad's
// description; the bound counts from the runner's start, not the main
// task's.
func TestMaxRunDurationStopsTheAllocation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		job := withMaxRun(newJob(structs.JobTypeBatch, fiveTasks(map[string]any{"run_for": "1h"})...), 10*time.Second)
		ar := h.runner(newAlloc(job))
		began := time.Now()
		go ar.Run()

		settle(9 * time.Second)
		require.Equal(t, taskrunner.StateRunning, taskState(t, ar, "main").State)
		<-ar.WaitCh()
		got := ar.Alloc()
		require.Equal(t, structs.AllocClientStatusComplete, got.ClientStatus, "states: %v", got.TaskStates)
		require.Equal(t, DescMaxRunExceeded, got.ClientDescription)

		st := got.TaskStates
		require.Equal(t, began.Add(time.Second), st["main"].StartedAt, "main started after init")
		for _, name := range []string{"main", "sidecar"} {
			s := st[name]
			require.Equal(t, taskrunner.StateDead, s.State, name)
			require.False(t, s.Failed, name)
			ev := findEvent(s, taskrunner.EventMaxRunExceeded)
			require.NotNil(t, ev, "%s: %v", name, eventTypes(s))
			require.Equal(t, began.Add(10*time.Second).UnixNano(), ev.Time, "%s: killed at the bound, from the runner's start", name)
			kill := findEvent(s, taskrunner.EventKilling)
			require.NotNil(t, kill, name)
			require.Equal(t, "Allocation exceeded its max_run_duration of 10s", kill.Details[taskrunner.DetailKillReason])
		}
		cleanup := st["cleanup"]
		require.Equal(t, taskrunner.StateDead, cleanup.State)
		require.True(t, cleanup.StartedAt.IsZero(), "the poststop task never ran")
		require.Zero(t, countEvents(cleanup, taskrunner.EventStarted))
		require.NotNil(t, findEvent(cleanup, taskrunner.EventMaxRunExceeded), "it says why: %v", eventTypes(cleanup))
	})
}

// TestMaxRunDurationNotReached: an allocation that finishes in time
// completes as usual, and the bound does nothing after.
func TestMaxRunDurationNotReached(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		job := withMaxRun(newJob(structs.JobTypeBatch, mockTask("t", map[string]any{"run_for": "2s"})), time.Minute)
		ar := h.runner(newAlloc(job))
		go ar.Run()
		<-ar.WaitCh()
		settle(2 * time.Minute)
		got := ar.Alloc()
		require.Equal(t, structs.AllocClientStatusComplete, got.ClientStatus)
		require.Equal(t, DescComplete, got.ClientDescription)
		require.Nil(t, findEvent(got.TaskStates["t"], taskrunner.EventMaxRunExceeded))
	})
}

// TestMaxRunDurationUpdatedInPlace: an in-place update that lowers the
// bound below the time already run stops the allocation at once; one
// that removes it lets the allocation run on.
func TestMaxRunDurationUpdatedInPlace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		alloc := newAlloc(withMaxRun(newJob(structs.JobTypeBatch, mockTask("t", map[string]any{"run_for": "3h"})), time.Hour))
		ar := h.runner(alloc)
		go ar.Run()
		settle(30 * time.Minute)

		removed := alloc.Copy()
		removed.Job = newJob(structs.JobTypeBatch, mockTask("t", map[string]any{"run_for": "3h"}))
		removed.AllocModifyIndex = 11
		ar.Update(removed)
		settle(45 * time.Minute)
		require.Equal(t, taskrunner.StateRunning, taskState(t, ar, "t").State, "no bound any more")

		lowered := removed.Copy()
		lowered.Job = withMaxRun(newJob(structs.JobTypeBatch, mockTask("t", map[string]any{"run_for": "3h"})), 20*time.Minute)
		lowered.AllocModifyIndex = 12
		updatedAt := time.Now()
		ar.Update(lowered)
		<-ar.WaitCh()
		got := ar.Alloc()
		require.Equal(t, DescMaxRunExceeded, got.ClientDescription)
		ev := findEvent(got.TaskStates["t"], taskrunner.EventMaxRunExceeded)
		require.NotNil(t, ev)
		require.Equal(t, updatedAt.UnixNano(), ev.Time, "already past the lowered bound: stopped at once")
	})
}

// TestMaxRunDurationCountsFromTheRestoredStart: a restarted client does
// not give a restored allocation a fresh bound.
func TestMaxRunDurationCountsFromTheRestoredStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		alloc := newAlloc(withMaxRun(newJob(structs.JobTypeBatch, mockTask("t", map[string]any{"run_for": "1h"})), 10*time.Minute))
		first := h.runner(alloc)
		began := time.Now()
		go first.Run()
		settle(6 * time.Minute)
		first.Shutdown()

		second := h.runner(alloc)
		require.NoError(t, second.Restore())
		go second.Run()
		<-second.WaitCh()
		got := second.Alloc()
		require.Equal(t, DescMaxRunExceeded, got.ClientDescription)
		ev := findEvent(got.TaskStates["t"], taskrunner.EventMaxRunExceeded)
		require.NotNil(t, ev)
		require.Equal(t, began.Add(10*time.Minute).UnixNano(), ev.Time)
	})
}
