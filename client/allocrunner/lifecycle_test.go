package allocrunner

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/client/allocrunner/health"
	"github.com/drover-project/drover/client/allocrunner/taskrunner"
	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/drivers/mock"
	"github.com/drover-project/drover/nomad/structs"
)

// hooked returns a mock task with a lifecycle block.
func hooked(name, hook string, sidecar bool, config map[string]any) *structs.Task {
	t := mockTask(name, config)
	t.Lifecycle = &structs.TaskLifecycle{Hook: hook, Sidecar: sidecar}
	return t
}

// fiveTasks is a group with one task of each kind: init (prestart, 1s),
// sidecar (prestart sidecar, runs until stopped), main (mainCfg), announce
// (poststart, 500ms), cleanup (poststop, 1s).
func fiveTasks(mainCfg map[string]any) []*structs.Task {
	return []*structs.Task{
		hooked("init", "prestart", false, map[string]any{"run_for": "1s"}),
		hooked("sidecar", "prestart", true, map[string]any{}),
		mockTask("main", mainCfg),
		hooked("announce", "poststart", false, map[string]any{"run_for": "500ms"}),
		hooked("cleanup", "poststop", false, map[string]any{"run_for": "1s"}),
	}
}

// countEvents counts the events of type typ in st.
func countEvents(st *structs.TaskState, typ string) int {
	n := 0
	for _, e := range st.Events {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// TestLifecycleOrderOfABatchGroup: prestart tasks start first; main starts
// when init completed and the sidecar runs; the poststart task when main
// runs; the sidecar is killed once main completed ("Main Tasks Dead", not
// failed); the poststop task runs last; the allocation is complete.
func TestLifecycleOrderOfABatchGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		alloc := newAlloc(newJob(structs.JobTypeBatch, fiveTasks(map[string]any{"run_for": "2s"})...))
		ar := h.runner(alloc)
		began := time.Now()
		go ar.Run()

		settle(500 * time.Millisecond)
		require.Equal(t, taskrunner.StateRunning, taskState(t, ar, "init").State)
		require.Equal(t, taskrunner.StateRunning, taskState(t, ar, "sidecar").State)
		for _, task := range []string{"main", "announce", "cleanup"} {
			require.Equal(t, taskrunner.StatePending, taskState(t, ar, task).State, task)
		}
		require.Equal(t, structs.AllocClientStatusRunning, ar.Alloc().ClientStatus)

		<-ar.WaitCh()
		got := ar.Alloc()
		require.Equal(t, structs.AllocClientStatusComplete, got.ClientStatus, "states: %v", got.TaskStates)
		st := got.TaskStates
		for name, s := range st {
			require.Equal(t, taskrunner.StateDead, s.State, name)
			require.False(t, s.Failed, name)
			require.Equal(t, 1, countEvents(s, taskrunner.EventStarted), "%s started once: %v", name, eventTypes(s))
		}
		require.Equal(t, began, st["init"].StartedAt)
		require.Equal(t, began, st["sidecar"].StartedAt)
		require.Equal(t, began.Add(time.Second), st["init"].FinishedAt)
		require.Equal(t, st["init"].FinishedAt, st["main"].StartedAt, "main starts when init completed")
		require.Equal(t, st["main"].StartedAt, st["announce"].StartedAt, "poststart starts when main runs")
		require.Equal(t, began.Add(3*time.Second), st["main"].FinishedAt)
		require.Equal(t, st["main"].FinishedAt, st["sidecar"].FinishedAt, "the sidecar is killed when main completes")
		require.NotNil(t, findEvent(st["sidecar"], taskrunner.EventMainDead), "events: %v", eventTypes(st["sidecar"]))
		require.Equal(t, st["sidecar"].FinishedAt, st["cleanup"].StartedAt, "poststop runs once the others are dead")
		require.Equal(t, began.Add(4*time.Second), st["cleanup"].FinishedAt)
		require.Zero(t, st["init"].Restarts+st["announce"].Restarts+st["cleanup"].Restarts)
	})
}

// TestFailedPrestartFailsTheAllocation: an ephemeral prestart task that
// fails (no restarts left) fails the allocation; main and poststart never
// start; the sidecar is killed; the poststop task still runs.
func TestFailedPrestartFailsTheAllocation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		tasks := fiveTasks(map[string]any{})
		tasks[0].Config = map[string]any{"run_for": "1s", "exit_code": 3}
		alloc := newAlloc(newJob(structs.JobTypeService, tasks...))
		ar := h.runner(alloc)
		go ar.Run()
		<-ar.WaitCh()

		got := ar.Alloc()
		require.Equal(t, structs.AllocClientStatusFailed, got.ClientStatus)
		st := got.TaskStates
		require.True(t, st["init"].Failed)
		for _, name := range []string{"main", "announce"} {
			require.Equal(t, taskrunner.StateDead, st[name].State, name)
			require.True(t, st[name].StartedAt.IsZero(), "%s never started: %v", name, eventTypes(st[name]))
			require.Equal(t, "init", findEvent(st[name], taskrunner.EventSiblingFailed).Details[taskrunner.DetailFailedSibling])
		}
		require.NotNil(t, findEvent(st["sidecar"], taskrunner.EventSiblingFailed))
		require.False(t, st["sidecar"].Failed)
		require.False(t, st["cleanup"].StartedAt.IsZero(), "poststop runs after a failure")
		require.False(t, st["cleanup"].StartedAt.Before(st["sidecar"].FinishedAt))
		for _, name := range []string{"main", "announce"} {
			require.Equal(t, "gone", driverState(t, h.driver, alloc.ID+"/"+name))
		}
	})
}

// TestStoppedAllocationRunsPoststop: a desired stop kills main (and the
// poststart task) first, the sidecar after them, then runs the poststop
// task; the ephemeral tasks that completed were not restarted meanwhile
// (a service job restarts tasks that exit 0, not those).
func TestStoppedAllocationRunsPoststop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		tasks := fiveTasks(map[string]any{})
		tasks[2].KillTimeout = 3 * time.Second
		tasks[2].Config = map[string]any{"kill_after": "2s"} // main takes 2s to stop
		alloc := newAlloc(newJob(structs.JobTypeService, tasks...))
		ar := h.runner(alloc)
		go ar.Run()
		settle(time.Minute)
		got := ar.Alloc()
		require.Equal(t, structs.AllocClientStatusRunning, got.ClientStatus)
		for _, name := range []string{"init", "announce"} {
			require.Equal(t, taskrunner.StateDead, got.TaskStates[name].State, name)
			require.Zero(t, got.TaskStates[name].Restarts, name)
		}
		require.Equal(t, taskrunner.StatePending, got.TaskStates["cleanup"].State)

		stop := alloc.Copy()
		stop.DesiredStatus = structs.AllocDesiredStatusStop
		stop.AllocModifyIndex = 20
		stopAt := time.Now()
		ar.Update(stop)
		settle(time.Second)
		require.Equal(t, taskrunner.StateRunning, taskState(t, ar, "sidecar").State, "the sidecar outlives main")
		require.Equal(t, taskrunner.StatePending, taskState(t, ar, "cleanup").State)

		<-ar.WaitCh()
		st := ar.Alloc().TaskStates
		require.Equal(t, stopAt.Add(2*time.Second), st["main"].FinishedAt)
		require.Equal(t, st["main"].FinishedAt, st["sidecar"].FinishedAt)
		require.Equal(t, st["sidecar"].FinishedAt, st["cleanup"].StartedAt)
		require.False(t, st["cleanup"].Failed)
		require.Equal(t, structs.AllocClientStatusComplete, ar.Alloc().ClientStatus)
	})
}

// TestDestroyDoesNotRunPoststop: destroying a running allocation (garbage
// collection, a dev agent's exit) kills every task at once, the sidecar
// with main (so the stop takes no longer than the longest kill_timeout);
// the poststop task never starts.
func TestDestroyDoesNotRunPoststop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		tasks := fiveTasks(map[string]any{"kill_after": "2s"}) // main takes 2s to stop
		tasks[2].KillTimeout = 3 * time.Second
		alloc := newAlloc(newJob(structs.JobTypeService, tasks...))
		ar := h.runner(alloc)
		go ar.Run()
		settle(time.Minute)
		destroyAt := time.Now()
		ar.Destroy()
		require.Equal(t, 2*time.Second, time.Since(destroyAt))
		st := h.lastPublished(alloc.ID).TaskStates
		require.Equal(t, taskrunner.StateDead, st["cleanup"].State)
		require.True(t, st["cleanup"].StartedAt.IsZero())
		require.Equal(t, destroyAt.Add(2*time.Second), st["main"].FinishedAt)
		require.Equal(t, destroyAt, st["sidecar"].FinishedAt, "killed with main, not after it")
	})
}

// TestAllocRestartFollowsTheLifecycle: restarting the running tasks
// restarts the sidecar and main (main waits for the sidecar to run again)
// and does not re-run the completed init; with all tasks, init runs again
// and main starts only once it has completed.
func TestAllocRestartFollowsTheLifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		tasks := fiveTasks(map[string]any{})
		tasks[1].KillTimeout = 2 * time.Second
		tasks[1].Config = map[string]any{"kill_after": "1s"} // the sidecar takes 1s to stop
		alloc := newAlloc(newJob(structs.JobTypeService, tasks...))
		ar := h.runner(alloc)
		go ar.Run()
		settle(time.Minute)

		restartAt := time.Now()
		require.NoError(t, ar.Restart("", false))
		settle(time.Minute)
		st := ar.Alloc().TaskStates
		require.Equal(t, 1, countEvents(st["init"], taskrunner.EventStarted), "the completed init does not run again")
		require.Equal(t, uint64(1), st["sidecar"].Restarts)
		require.Equal(t, uint64(1), st["main"].Restarts)
		require.Equal(t, restartAt.Add(time.Second), st["sidecar"].StartedAt)
		require.Equal(t, st["sidecar"].StartedAt, st["main"].StartedAt, "main waited for the sidecar to run again")
		require.Equal(t, 1, countEvents(st["announce"], taskrunner.EventStarted), "the completed poststart does not run again")

		restartAt = time.Now()
		require.NoError(t, ar.Restart("", true))
		settle(time.Minute)
		st = ar.Alloc().TaskStates
		require.Equal(t, uint64(1), st["init"].Restarts)
		require.Equal(t, 2, countEvents(st["init"], taskrunner.EventStarted), "events: %v", eventTypes(st["init"]))
		require.Equal(t, restartAt, st["init"].StartedAt)
		require.Equal(t, restartAt.Add(time.Second), st["init"].FinishedAt)
		require.Equal(t, st["init"].FinishedAt, st["main"].StartedAt, "main waited for init to complete again")
		require.Equal(t, uint64(1), st["announce"].Restarts)
		require.Equal(t, st["main"].StartedAt, st["announce"].StartedAt, "poststart ran again after main")
		require.Equal(t, taskrunner.StatePending, st["cleanup"].State, "poststop has not run")
		require.Equal(t, structs.AllocClientStatusRunning, ar.Alloc().ClientStatus)

		require.ErrorIs(t, ar.Restart("init", false), taskrunner.ErrTaskNotRunning, "one completed task is not running")
	})
}

// TestLifecycleHealth: an allocation whose ephemeral prestart task
// completed, whose sidecar runs and whose poststop task waits is healthy.
func TestLifecycleHealth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		alloc := deploymentAlloc(newJob(structs.JobTypeService, fiveTasks(map[string]any{})...), structs.UpdateHealthCheckTaskStates)
		ar := h.runner(alloc)
		began := time.Now()
		go ar.Run()
		settle(time.Minute)
		ds := h.decidedOnce(t, alloc.ID)
		require.True(t, *ds.Healthy)
		// main started at 1s (after init); healthy min_healthy_time later.
		require.Equal(t, began.Add(11*time.Second), ds.Timestamp)
	})
}

// TestPrefetchPreparesEveryLifecycleTask: a replacement prepares all its
// tasks, the poststop one included, while the previous allocation still
// runs; only then does that one stop and the prestart task start.
func TestPrefetchPreparesEveryLifecycleTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		r := newReplacement(t, h, map[string]any{"prepare_for": "1s"}, func(j *structs.Job) {
			j.TaskGroups[0].Tasks = append(j.TaskGroups[0].Tasks,
				hooked("init", "prestart", false, map[string]any{"run_for": "1s", "prepare_for": "1s"}),
				hooked("cleanup", "poststop", false, map[string]any{"run_for": "1s", "prepare_for": "1s"}))
		})
		prepared := map[string]int{}
		r.rec.onStop = func() {
			for _, task := range []string{"web", "init", "cleanup"} {
				prepared[task] = h.driver.Prepared(r.alloc.ID + "/" + task)
			}
		}
		began := time.Now()
		go r.ar.Run()
		settle(time.Minute)
		require.Equal(t, map[string]int{"web": 1, "init": 1, "cleanup": 1}, prepared)
		require.Equal(t, []string{"stop", "waited"}, r.rec.Calls())
		st := r.ar.Alloc().TaskStates
		require.Equal(t, began.Add(3*time.Second), st["init"].StartedAt, "after the three prepares")
		require.Equal(t, st["init"].FinishedAt, st["web"].StartedAt)
		require.Equal(t, taskrunner.StatePending, st["cleanup"].State)
		r.destroy()
	})
}

// TestLifecycleAcrossAClientRestart: a client restart while init runs
// keeps main waiting for it; one while main runs resumes in the main
// phase, and a later stop still runs the poststop task.
func TestLifecycleAcrossAClientRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		tasks := fiveTasks(map[string]any{})
		tasks[0].Config = map[string]any{"run_for": "10s"}
		alloc := newAlloc(newJob(structs.JobTypeService, tasks...))
		ar1 := h.runner(alloc)
		began := time.Now()
		go ar1.Run()
		settle(4 * time.Second)

		ar2, d2 := restart(t, h, ar1, alloc)
		go ar2.Run()
		settle(5 * time.Second)
		require.Equal(t, taskrunner.StateRunning, taskState(t, ar2, "init").State)
		require.Equal(t, taskrunner.StatePending, taskState(t, ar2, "main").State, "main still waits for init")
		settle(time.Minute)
		st := ar2.Alloc().TaskStates
		require.Equal(t, began.Add(10*time.Second), st["init"].FinishedAt)
		require.Equal(t, st["init"].FinishedAt, st["main"].StartedAt)
		require.Equal(t, taskrunner.StateDead, st["announce"].State)

		ar3, _ := restart(t, h, ar2, alloc, func(c *Config) { c.Drivers = drivers.Catalog{mock.Name: d2} })
		go ar3.Run()
		settle(time.Minute)
		st = ar3.Alloc().TaskStates
		require.Equal(t, 1, countEvents(st["announce"], taskrunner.EventStarted), "the completed poststart is not run again")
		require.Equal(t, 1, countEvents(st["main"], taskrunner.EventStarted), "main was reattached, not started again")
		require.Equal(t, taskrunner.StateRunning, st["main"].State)
		require.Equal(t, taskrunner.StatePending, st["cleanup"].State)
		stop := alloc.Copy()
		stop.DesiredStatus = structs.AllocDesiredStatusStop
		stop.AllocModifyIndex = 20
		ar3.Update(stop)
		<-ar3.WaitCh()
		st = ar3.Alloc().TaskStates
		require.False(t, st["cleanup"].StartedAt.IsZero(), "poststop ran after the stop")
		require.Equal(t, structs.AllocClientStatusComplete, ar3.Alloc().ClientStatus)
	})
}

// TestLifecycleHealthInput: for deployment health, poststop tasks do not
// count, ephemeral prestart and poststart tasks that completed need not
// run, and a sidecar must run like a main task.
func TestLifecycleHealthInput(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	run := &structs.TaskState{State: taskrunner.StateRunning, StartedAt: start}
	done := &structs.TaskState{State: taskrunner.StateDead, StartedAt: start, FinishedAt: start}
	pending := &structs.TaskState{State: taskrunner.StatePending}
	alloc := deploymentAlloc(newJob(structs.JobTypeService, fiveTasks(map[string]any{})...), structs.UpdateHealthCheckTaskStates)
	for _, tc := range []struct {
		name    string
		states  map[string]*structs.TaskState
		healthy bool
	}{
		{"ephemeral tasks done, sidecar and main running, poststop waiting", map[string]*structs.TaskState{
			"init": done, "sidecar": run, "main": run, "announce": done, "cleanup": pending}, true},
		{"the sidecar is not running", map[string]*structs.TaskState{
			"init": done, "sidecar": pending, "main": run, "announce": done, "cleanup": pending}, false},
		{"the poststart task has not run yet", map[string]*structs.TaskState{
			"init": done, "sidecar": run, "main": run, "announce": pending, "cleanup": pending}, false},
		{"the poststart task runs", map[string]*structs.TaskState{
			"init": done, "sidecar": run, "main": run, "announce": run, "cleanup": pending}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := healthInput(alloc, tc.states, nil, start)
			for _, ht := range in.Tasks {
				require.NotEqual(t, "cleanup", ht.Name, "poststop tasks do not count")
			}
			res := health.Evaluate(in, start.Add(10*time.Second))
			require.Equal(t, tc.healthy, res.Decided && res.Healthy, "%+v", res)
		})
	}
}
