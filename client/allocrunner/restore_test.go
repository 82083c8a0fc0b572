package allocrunner

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/client/allocrunner/taskrunner"
	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/drivers/mock"
	"github.com/drover-project/drover/nomad/structs"
)

// restart simulates a client restart: the runner shuts down (leaving its
// tasks running) and a new runner for the same alloc, with a new driver
// instance (a new client process) and the same state DB, is restored.
func restart(t *testing.T, h *harness, old *AllocRunner, alloc *structs.Allocation, mutate ...func(*Config)) (*AllocRunner, *mock.Driver) {
	t.Helper()
	old.Shutdown()
	<-old.WaitCh()
	for _, task := range old.taskNames() {
		// The first process's tasks, whatever the test left of them.
		t.Cleanup(func() { _ = h.driver.DestroyTask(alloc.ID+"/"+task, true) })
	}
	d2 := mock.New(nil)
	ar := h.runner(alloc, append([]func(*Config){func(c *Config) {
		c.Drivers = drivers.Catalog{mock.Name: d2}
	}}, mutate...)...)
	require.NoError(t, ar.Restore())
	return ar, d2
}

func count(st *structs.TaskState, typ string) int {
	n := 0
	for _, e := range st.Events {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// failingPrev fails the test if a restored runner touches its previous
// allocation.
type failingPrev struct{ t *testing.T }

func (p failingPrev) Stop() { p.t.Error("a restored runner stopped its previous alloc") }
func (p failingPrev) Wait(context.Context) error {
	p.t.Error("a restored runner waited for its previous alloc")
	return nil
}

func TestRestoreReattachesWithoutStarting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		alloc := newAlloc(newJob(structs.JobTypeSysBatch, mockTask("web", map[string]any{"run_for": "10s", "exit_code": 0})))
		alloc.PreviousAllocation = "some-local-alloc"
		ar1 := h.runner(alloc)
		began := time.Now()
		go ar1.Run()
		time.Sleep(4 * time.Second)
		synctest.Wait()
		before := taskState(t, ar1, "web")
		require.Equal(t, taskrunner.StateRunning, before.State)

		ar2, d2 := restart(t, h, ar1, alloc, func(c *Config) { c.PrevAlloc = failingPrev{t} })
		require.Equal(t, drivers.TaskStateRunning, driverState(t, h.driver, alloc.ID+"/web"), "Shutdown left the task running")
		// Restore reattached: the new driver knows the task, started at the original time.
		st, err := d2.InspectTask(alloc.ID + "/web")
		require.NoError(t, err)
		require.Equal(t, drivers.TaskStateRunning, st.State)
		require.True(t, st.StartedAt.Equal(began))
		require.Zero(t, d2.Prepared(alloc.ID+"/web"), "a reattached task is not prepared again")

		go ar2.Run()
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, structs.AllocClientStatusRunning, ar2.Alloc().ClientStatus)

		<-ar2.WaitCh()
		require.Equal(t, 10*time.Second, time.Since(began), "the same task ran its course; nothing restarted it")
		got := ar2.Alloc()
		require.Equal(t, structs.AllocClientStatusComplete, got.ClientStatus)
		after := got.TaskStates["web"]
		require.Equal(t, 1, count(after, "Started"))
		require.Equal(t, 1, count(after, "Received"))
		require.True(t, after.StartedAt.Equal(before.StartedAt))
		require.Zero(t, after.Restarts)
		ar2.Destroy()
	})
}

func TestRestoreFailureRestartsPerPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		job := newJob(structs.JobTypeSystem, mockTask("web", map[string]any{"recover_error": "container gone"}))
		job.TaskGroups[0].RestartPolicy = &structs.RestartPolicy{Attempts: 1, Interval: time.Hour, Delay: 2 * time.Second, Mode: "fail"}
		alloc := newAlloc(job)
		ar1 := h.runner(alloc)
		go ar1.Run()
		time.Sleep(time.Second)
		synctest.Wait()

		ar2, d2 := restart(t, h, ar1, alloc)
		restoredAt := time.Now()
		go ar2.Run()
		time.Sleep(3 * time.Second)
		synctest.Wait()
		st := taskState(t, ar2, "web")
		require.Equal(t, taskrunner.StateRunning, st.State)
		require.Equal(t, uint64(1), st.Restarts)
		failed := findEvent(st, "Failed Restoring Task")
		require.NotNil(t, failed)
		require.Contains(t, failed.DisplayMessage, "container gone")
		types := eventTypes(st)
		require.Equal(t, "Started", types[len(types)-1])
		require.Less(t, indexOf(types, "Failed Restoring Task"), indexOf(types, "Restarting"))
		require.Equal(t, restoredAt.Add(2*time.Second).UnixNano(), findEvent(st, "Started").Time)
		require.Equal(t, drivers.TaskStateRunning, driverState(t, d2, alloc.ID+"/web"))
		ar2.Destroy()
	})
}

func TestRestoreDeadAllocStaysDead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		alloc := newAlloc(newJob(structs.JobTypeSysBatch, mockTask("web", map[string]any{"run_for": "1s"})))
		ar1 := h.runner(alloc)
		go ar1.Run()
		<-ar1.WaitCh()
		ar2, _ := restart(t, h, ar1, alloc)
		go ar2.Run()
		<-ar2.WaitCh()
		got := ar2.Alloc()
		require.Equal(t, structs.AllocClientStatusComplete, got.ClientStatus)
		require.Equal(t, 1, count(got.TaskStates["web"], "Started"))
		<-ar2.TasksExitedCh()
		ar2.Destroy()
	})
}

func TestRestoreTaskWaitingToRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		job := newJob(structs.JobTypeSystem, mockTask("web", map[string]any{"run_for": "1s", "exit_code": 1}))
		job.TaskGroups[0].RestartPolicy = &structs.RestartPolicy{Attempts: 2, Interval: time.Hour, Delay: 10 * time.Second, Mode: "fail"}
		alloc := newAlloc(job)
		ar1 := h.runner(alloc)
		go ar1.Run()
		time.Sleep(2 * time.Second) // exited at 1s; restarting at 11s
		synctest.Wait()
		require.Equal(t, taskrunner.StatePending, taskState(t, ar1, "web").State)

		ar2, _ := restart(t, h, ar1, alloc)
		go ar2.Run()
		<-ar2.WaitCh()
		st := taskState(t, ar2, "web")
		// The restored history counts the restart of the first process:
		// one more restart, then the policy is exhausted.
		require.Equal(t, uint64(2), st.Restarts)
		require.True(t, st.Failed)
		ar2.Destroy()
	})
}

func indexOf(ss []string, s string) int {
	for i, x := range ss {
		if x == s {
			return i
		}
	}
	return -1
}
