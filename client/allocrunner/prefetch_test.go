package allocrunner

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/client/allocrunner/taskrunner"
	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/nomad/structs"
)

// replacement sets up a running previous alloc and a replacement of it
// whose task has config; the replacement is not running yet.
type replacement struct {
	prev      *AllocRunner
	prevAlloc *structs.Allocation
	ar        *AllocRunner
	alloc     *structs.Allocation
	rec       *recordingPrev
}

func newReplacement(t *testing.T, h *harness, config map[string]any, mutate ...func(*structs.Job)) *replacement {
	t.Helper()
	r := &replacement{}
	r.prevAlloc = newAlloc(newJob(structs.JobTypeSystem, mockTask("web", nil)))
	r.prev = h.runner(r.prevAlloc)
	go r.prev.Run()
	time.Sleep(time.Minute)
	synctest.Wait()
	require.Equal(t, structs.AllocClientStatusRunning, r.prev.Alloc().ClientStatus)

	job := newJob(structs.JobTypeSystem, mockTask("web", config))
	job.Version = 2
	for _, m := range mutate {
		m(job)
	}
	r.alloc = newAlloc(job)
	r.alloc.PreviousAllocation = r.prevAlloc.ID
	r.rec = &recordingPrev{inner: LocalPrevAlloc(r.prev)}
	r.ar = h.runner(r.alloc, func(c *Config) { c.PrevAlloc = r.rec })
	return r
}

func (r *replacement) destroy() {
	r.ar.Destroy()
	r.prev.Destroy()
}

func TestPrefetchPreparesWhilePreviousRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		r := newReplacement(t, h, map[string]any{"prepare_for": "3s"})
		prevTask := r.prevAlloc.ID + "/web"
		newTask := r.alloc.ID + "/web"
		var prevAtStop string
		var preparedAtStop int
		r.rec.onStop = func() {
			prevAtStop = driverState(t, h.driver, prevTask)
			preparedAtStop = h.driver.Prepared(newTask)
		}
		began := time.Now()
		go r.ar.Run()

		// Mid-prepare: the previous alloc still serves; the new one is
		// pending with a progress event.
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		require.Empty(t, r.rec.Calls())
		require.Equal(t, drivers.TaskStateRunning, driverState(t, h.driver, prevTask))
		require.Equal(t, structs.AllocClientStatusRunning, r.prev.Alloc().ClientStatus)
		st := taskState(t, r.ar, "web")
		require.Equal(t, taskrunner.StatePending, st.State)
		last := st.Events[len(st.Events)-1]
		require.Equal(t, "Driver", last.Type)
		require.Equal(t, "prepare", last.Details["phase"])
		require.Equal(t, "104857600", last.Details["bytes_total"])
		require.NotEmpty(t, last.Details["percent"])
		require.Contains(t, last.DisplayMessage, "MiB of 100.0 MiB")

		time.Sleep(2 * time.Second)
		synctest.Wait()
		// Prepared, then the previous alloc was stopped and waited for,
		// then the task started.
		require.Equal(t, []string{"stop", "waited"}, r.rec.Calls())
		require.Equal(t, drivers.TaskStateRunning, prevAtStop, "the previous alloc ran until the replacement was prepared")
		require.Equal(t, 1, preparedAtStop)
		require.Equal(t, began.Add(3*time.Second), r.rec.stopAt)
		st = taskState(t, r.ar, "web")
		require.Equal(t, taskrunner.StateRunning, st.State)
		prepared := findEvent(st, "Driver")
		require.Equal(t, "Task prepared", prepared.DisplayMessage)
		require.LessOrEqual(t, prepared.Time, r.rec.stopAt.UnixNano())
		require.GreaterOrEqual(t, findEvent(st, "Started").Time, r.rec.waitedAt.UnixNano())
		require.Equal(t, "Stopping previous allocation "+r.prevAlloc.ID[:8], findEvent(st, "Task Setup").DisplayMessage)
		require.Equal(t, structs.AllocClientStatusComplete, r.prev.Alloc().ClientStatus)
		require.NotNil(t, findEvent(taskState(t, r.prev, "web"), "Killed"))

		// Progress events were published at most once a second.
		var times []int64
		for _, u := range h.published(r.alloc.ID) {
			for _, e := range u.TaskStates["web"].Events {
				if e.Details["bytes_done"] != "" && (len(times) == 0 || times[len(times)-1] != e.Time) {
					times = append(times, e.Time)
				}
			}
		}
		require.GreaterOrEqual(t, len(times), 3)
		for i := 1; i < len(times); i++ {
			require.GreaterOrEqual(t, time.Duration(times[i]-times[i-1]), time.Second)
		}
		r.destroy()
	})
}

func TestPrepareFailureNeverStopsPrevious(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		r := newReplacement(t, h, map[string]any{
			"prepare_for":   "2s",
			"prepare_error": "manifest unknown: registry.example.com/web:v2",
		})
		go r.ar.Run()
		<-r.ar.WaitCh()

		require.Empty(t, r.rec.Calls(), "the previous alloc was never asked to stop")
		require.Equal(t, drivers.TaskStateRunning, driverState(t, h.driver, r.prevAlloc.ID+"/web"))
		require.Equal(t, structs.AllocClientStatusRunning, r.prev.Alloc().ClientStatus)

		got := r.ar.Alloc()
		require.Equal(t, structs.AllocClientStatusFailed, got.ClientStatus)
		st := got.TaskStates["web"]
		require.True(t, st.Failed)
		require.Nil(t, findEvent(st, "Started"))
		e := findEvent(st, "Driver Failure")
		require.NotNil(t, e)
		require.True(t, e.FailsTask)
		require.Contains(t, e.DriverError, "failed to prepare task")
		require.Contains(t, e.DriverError, "manifest unknown: registry.example.com/web:v2")
		require.Equal(t, e.DriverError, e.DisplayMessage)
		r.destroy()
	})
}

func TestPrepareTimeoutNeverStopsPrevious(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		r := newReplacement(t, h, map[string]any{"prepare_for": "1h"}, func(j *structs.Job) {
			j.TaskGroups[0].Update = &structs.UpdateStrategy{MaxParallel: 1, HealthyDeadline: 10 * time.Second}
		})
		began := time.Now()
		go r.ar.Run()
		<-r.ar.WaitCh()
		require.Equal(t, 10*time.Second, time.Since(began))
		require.Empty(t, r.rec.Calls())
		require.Equal(t, structs.AllocClientStatusRunning, r.prev.Alloc().ClientStatus)
		e := findEvent(taskState(t, r.ar, "web"), "Driver Failure")
		require.NotNil(t, e)
		require.Contains(t, e.DriverError, "timed out after 10s")
		require.Equal(t, structs.AllocClientStatusFailed, r.ar.Alloc().ClientStatus)
		r.destroy()
	})
}

func TestPrefetchFalseStopsPreviousFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		r := newReplacement(t, h, map[string]any{"prefetch": false, "prepare_for": "2s"})
		preparedAtStop := -1
		r.rec.onStop = func() { preparedAtStop = h.driver.Prepared(r.alloc.ID + "/web") }
		began := time.Now()
		go r.ar.Run()
		time.Sleep(time.Second)
		synctest.Wait()
		// The previous alloc is gone while the replacement prepares.
		require.Equal(t, []string{"stop", "waited"}, r.rec.Calls())
		require.Equal(t, 0, preparedAtStop)
		require.Equal(t, began, r.rec.stopAt)
		require.Equal(t, structs.AllocClientStatusComplete, r.prev.Alloc().ClientStatus)
		require.Equal(t, taskrunner.StatePending, taskState(t, r.ar, "web").State)

		time.Sleep(2 * time.Second)
		synctest.Wait()
		st := taskState(t, r.ar, "web")
		require.Equal(t, taskrunner.StateRunning, st.State)
		require.Equal(t, began.Add(2*time.Second).UnixNano(), findEvent(st, "Started").Time)
		r.destroy()
	})
}

func TestStoppingReplacementDuringPrepareLeavesPrevious(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		r := newReplacement(t, h, map[string]any{"prepare_for": "1h"})
		go r.ar.Run()
		time.Sleep(time.Minute)
		synctest.Wait()
		stop := r.alloc.Copy()
		stop.DesiredStatus = structs.AllocDesiredStatusStop
		stop.AllocModifyIndex++
		r.ar.Update(stop)
		<-r.ar.WaitCh()
		require.Empty(t, r.rec.Calls())
		require.Equal(t, structs.AllocClientStatusRunning, r.prev.Alloc().ClientStatus)
		got := r.ar.Alloc()
		require.Equal(t, structs.AllocClientStatusComplete, got.ClientStatus, "stopped, not failed")
		require.Nil(t, findEvent(got.TaskStates["web"], "Driver Failure"))
		r.destroy()
	})
}

func TestNoPreviousAllocPreparesThenStarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		alloc := newAlloc(newJob(structs.JobTypeSysBatch, mockTask("web", map[string]any{"prepare_for": "2s", "run_for": "1s"})))
		ar := h.runner(alloc)
		began := time.Now()
		go ar.Run()
		<-ar.WaitCh()
		require.Equal(t, 3*time.Second, time.Since(began))
		require.Equal(t, 1, h.driver.Prepared(alloc.ID+"/web"))
		require.Equal(t, structs.AllocClientStatusComplete, ar.Alloc().ClientStatus)
		ar.Destroy()
	})
}

// handoff is a previous alloc P and its replacement R built with
// LocalPrevAlloc, as the client does; P has already been told to stop by
// the server (the plan that placed R stops P).
type handoff struct {
	p, r           *AllocRunner
	pAlloc, rAlloc *structs.Allocation
}

func newHandoff(t *testing.T, h *harness, pTask *structs.Task, rConfig map[string]any) *handoff {
	t.Helper()
	ho := &handoff{}
	ho.pAlloc = newAlloc(newJob(structs.JobTypeSystem, pTask))
	ho.p = h.runner(ho.pAlloc)
	go ho.p.Run()
	time.Sleep(time.Minute)
	synctest.Wait()

	job := newJob(structs.JobTypeSystem, mockTask("web", rConfig))
	job.Version = 2
	ho.rAlloc = newAlloc(job)
	ho.rAlloc.PreviousAllocation = ho.pAlloc.ID
	ho.r = h.runner(ho.rAlloc, func(c *Config) { c.PrevAlloc = LocalPrevAlloc(ho.p) })

	stop := ho.pAlloc.Copy()
	stop.DesiredStatus, stop.NextAllocation, stop.AllocModifyIndex = structs.AllocDesiredStatusStop, ho.rAlloc.ID, stop.AllocModifyIndex+1
	ho.p.Update(stop)
	time.Sleep(time.Second)
	synctest.Wait()
	require.Equal(t, structs.AllocClientStatusRunning, ho.p.Alloc().ClientStatus, "the stop is deferred to the replacement")
	return ho
}

func TestServerStopOfPreviousWaitsForReplacement(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		ho := newHandoff(t, h, mockTask("web", nil), map[string]any{"prepare_for": "3s"})
		began := time.Now()
		go ho.r.Run()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		require.Equal(t, structs.AllocClientStatusRunning, ho.p.Alloc().ClientStatus, "still serving while the replacement prepares")

		time.Sleep(2 * time.Second)
		synctest.Wait()
		require.Equal(t, structs.AllocClientStatusComplete, ho.p.Alloc().ClientStatus)
		st := taskState(t, ho.r, "web")
		require.Equal(t, taskrunner.StateRunning, st.State)
		require.Equal(t, began.Add(3*time.Second).UnixNano(), findEvent(st, "Started").Time)
	})
}

func TestStoppedReplacementReleasesPrevious(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		ho := newHandoff(t, h, mockTask("web", nil), map[string]any{"prepare_for": "1h"})
		go ho.r.Run()
		time.Sleep(time.Minute)
		synctest.Wait()
		// The job is stopped: the server stops the replacement too. Nothing
		// is left to wait for: the previous alloc honours its stop now.
		stop := ho.rAlloc.Copy()
		stop.DesiredStatus, stop.AllocModifyIndex = structs.AllocDesiredStatusStop, stop.AllocModifyIndex+1
		ho.r.Update(stop)
		<-ho.r.WaitCh()
		<-ho.p.WaitCh()
		require.Equal(t, structs.AllocClientStatusComplete, ho.p.Alloc().ClientStatus)
		require.Equal(t, structs.AllocClientStatusComplete, ho.r.Alloc().ClientStatus)
	})
}

func TestFailedReplacementKeepsPreviousUntilDestroyed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		ho := newHandoff(t, h, mockTask("web", nil), map[string]any{"prepare_error": "pull access denied"})
		go ho.r.Run()
		<-ho.r.WaitCh()
		require.Equal(t, structs.AllocClientStatusFailed, ho.r.Alloc().ClientStatus)
		time.Sleep(time.Hour)
		synctest.Wait()
		require.Equal(t, structs.AllocClientStatusRunning, ho.p.Alloc().ClientStatus, "a failed replacement never kills the previous alloc")

		ho.r.Destroy() // the server collected the failed replacement
		<-ho.p.WaitCh()
		require.Equal(t, structs.AllocClientStatusComplete, ho.p.Alloc().ClientStatus)
	})
}

// TestReplacingAFailedReplacementWaitsForTheOriginal: P runs, R (its
// replacement) failed to prepare so P still runs; N replaces R. N must not
// start before P is gone, although only R is N's previous allocation.
func TestReplacingAFailedReplacementWaitsForTheOriginal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		pTask := mockTask("web", map[string]any{"kill_after": "2s"})
		pTask.KillTimeout = 5 * time.Second
		ho := newHandoff(t, h, pTask, map[string]any{"prepare_error": "manifest unknown"})
		go ho.r.Run()
		<-ho.r.WaitCh()
		require.Equal(t, structs.AllocClientStatusRunning, ho.p.Alloc().ClientStatus)

		nAlloc := newAlloc(newJob(structs.JobTypeSystem, mockTask("web", map[string]any{"prepare_for": "1s"})))
		nAlloc.PreviousAllocation = ho.rAlloc.ID
		n := h.runner(nAlloc, func(c *Config) { c.PrevAlloc = LocalPrevAlloc(ho.r) })
		go n.Run()
		<-ho.p.WaitCh()
		pKilled := findEvent(taskState(t, ho.p, "web"), "Killed")
		require.NotNil(t, pKilled)
		time.Sleep(time.Second)
		synctest.Wait()
		st := taskState(t, n, "web")
		require.Equal(t, taskrunner.StateRunning, st.State)
		require.GreaterOrEqual(t, findEvent(st, "Started").Time, pKilled.Time, "N started only after P was killed")
		require.Equal(t, 2*time.Second, time.Duration(pKilled.Time-findEvent(taskState(t, ho.p, "web"), "Killing").Time))
	})
}
