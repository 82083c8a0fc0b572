package allocrunner

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/client/allocrunner/health"
	"github.com/drover-project/drover/client/allocrunner/taskrunner"
	"github.com/drover-project/drover/nomad/structs"
)

// deploymentAlloc places job's group in deployment d1 as a canary, with
// min_healthy_time 10s and healthy_deadline 1m.
func deploymentAlloc(job *structs.Job, mode string) *structs.Allocation {
	job.TaskGroups[0].Update = &structs.UpdateStrategy{
		MaxParallel: 1, HealthCheck: mode, MinHealthyTime: 10 * time.Second, HealthyDeadline: time.Minute,
	}
	a := newAlloc(job)
	a.DeploymentID = "d1"
	a.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: true}
	return a
}

// withCheck gives job's group a service on port "http" with a TCP check,
// and alloc that port.
func withCheck(a *structs.Allocation) *structs.Allocation {
	a.Job.TaskGroups[0].Services = []*structs.Service{{Name: "web", PortLabel: "http", Provider: "nomad", Checks: []structs.ServiceCheck{
		{Name: "alive", Type: "tcp", Interval: 5 * time.Second, Timeout: time.Second},
	}}}
	a.AllocatedResources = &structs.AllocatedResources{Shared: structs.AllocatedSharedResources{
		Ports: []structs.AllocatedPortMapping{{Label: "http", Value: 25000}},
	}}
	return a
}

// passingFrom is a prober whose checks pass from the given time on.
func passingFrom(from time.Time) health.Prober {
	return func(_ context.Context, c health.CheckDef) health.Outcome {
		if !from.IsZero() && !time.Now().Before(from) {
			return health.Outcome{Passing: true, Output: "ok"}
		}
		return health.Outcome{Output: "connection refused"}
	}
}

// sentHealth returns the DeploymentStatus of every update published for
// allocID that carried one.
func (h *harness) sentHealth(allocID string) []*structs.AllocDeploymentStatus {
	var out []*structs.AllocDeploymentStatus
	for _, u := range h.published(allocID) {
		if u.DeploymentStatus != nil {
			out = append(out, u.DeploymentStatus)
		}
	}
	return out
}

// decidedOnce returns the one status every update that carried health
// carried.
func (h *harness) decidedOnce(t *testing.T, allocID string) *structs.AllocDeploymentStatus {
	t.Helper()
	sent := h.sentHealth(allocID)
	require.NotEmpty(t, sent, "no health published")
	for _, ds := range sent[1:] {
		require.Equal(t, *sent[0].Healthy, *ds.Healthy, "decided once")
		require.True(t, sent[0].Timestamp.Equal(ds.Timestamp), "decided once: %v then %v", sent[0].Timestamp, ds.Timestamp)
		require.Equal(t, sent[0].Canary, ds.Canary)
	}
	return sent[0]
}

// settle advances the bubble's clock by d and waits for the runner's
// goroutines to block.
func settle(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

func TestHealthyAfterMinHealthyTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		alloc := deploymentAlloc(newJob(structs.JobTypeSystem, mockTask("web", map[string]any{"run_for": "1h"})), structs.UpdateHealthCheckTaskStates)
		ar := h.runner(alloc)
		began := time.Now()
		go ar.Run()

		settle(10*time.Second - time.Millisecond)
		require.Empty(t, h.sentHealth(alloc.ID), "not healthy before min_healthy_time")
		require.Equal(t, &structs.AllocDeploymentStatus{Canary: true}, ar.Alloc().DeploymentStatus, "the server's status until decided")

		settle(time.Millisecond)
		sent := h.sentHealth(alloc.ID)
		require.Len(t, sent, 1)
		require.Equal(t, &structs.AllocDeploymentStatus{Healthy: ptr(true), Timestamp: began.Add(10 * time.Second), Canary: true}, sent[0])
		require.Equal(t, sent[0], ar.Alloc().DeploymentStatus)
		last := h.lastPublished(alloc.ID)
		require.Equal(t, structs.AllocClientStatusRunning, last.ClientStatus, "health travels with the client status")

		rec, err := h.db.GetDeploymentHealth(alloc.ID)
		require.NoError(t, err)
		require.Equal(t, "d1", rec.DeploymentID)
		require.True(t, began.Equal(rec.Start))
		require.True(t, *rec.Healthy)

		// Final: no second decision, and later updates carry the same status.
		n := len(h.published(alloc.ID))
		settle(time.Hour - 20*time.Second)
		require.Len(t, h.published(alloc.ID), n, "nothing changed, nothing published")
		ar.Update(func() *structs.Allocation { a := alloc.Copy(); a.AllocModifyIndex = 20; return a }())
		ar.taskStateChanged()
		require.Equal(t, sent[0], h.lastPublished(alloc.ID).DeploymentStatus)
		ar.Destroy()
	})
}

func TestUnhealthyWhenTaskFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		alloc := deploymentAlloc(newJob(structs.JobTypeSystem, mockTask("web", map[string]any{"run_for": "10ms", "exit_code": 1})), structs.UpdateHealthCheckTaskStates)
		ar := h.runner(alloc) // no restarts (newJob)
		began := time.Now()
		go ar.Run()
		<-ar.WaitCh()

		last := h.lastPublished(alloc.ID)
		require.Equal(t, structs.AllocClientStatusFailed, last.ClientStatus)
		require.Equal(t, &structs.AllocDeploymentStatus{Healthy: ptr(false), Timestamp: began.Add(10 * time.Millisecond), Canary: true}, last.DeploymentStatus)
		require.Equal(t, last.DeploymentStatus, h.decidedOnce(t, alloc.ID))
		st := taskState(t, ar, "web")
		ev := findEvent(st, taskrunner.EventAllocUnhealthy)
		require.NotNil(t, ev, "events: %v", eventTypes(st))
		require.Equal(t, `Unhealthy because of failed task "web"`, ev.DisplayMessage)
		require.Equal(t, []string{"Terminated", "Not Restarting", "Alloc Unhealthy"}, eventTypes(st)[len(st.Events)-3:])
		ar.Destroy()
	})
}

func TestUnhealthyAtDeadlineWhenCheckNeverPasses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		alloc := withCheck(deploymentAlloc(newJob(structs.JobTypeSystem, mockTask("web", map[string]any{"run_for": "1h"})), structs.UpdateHealthCheckChecks))
		ar := h.runner(alloc)
		ar.healthHook.probe = passingFrom(time.Time{})
		began := time.Now()
		go ar.Run()

		settle(time.Minute - time.Millisecond)
		require.Empty(t, h.sentHealth(alloc.ID))
		res := ar.CheckResults()
		require.Len(t, res, 1)
		require.Equal(t, "alive", res[0].Def.Name)
		require.Equal(t, "10.0.0.1:25000", res[0].Def.Address, "the node's address (harness node)")
		require.Equal(t, health.StatusFailure, res[0].Status)
		require.Equal(t, "connection refused", res[0].Output)

		settle(time.Millisecond)
		ds := h.decidedOnce(t, alloc.ID)
		require.True(t, ds.IsUnhealthy())
		require.Equal(t, began.Add(time.Minute), ds.Timestamp)
		ev := findEvent(taskState(t, ar, "web"), taskrunner.EventAllocUnhealthy)
		require.Equal(t, "Service checks not passing by healthy_deadline of 1m0s", ev.DisplayMessage)
		require.Equal(t, structs.AllocClientStatusRunning, ar.Alloc().ClientStatus, "the client does not stop an unhealthy alloc")
		ar.Destroy()
	})
}

func TestHealthyWhenChecksPassLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		alloc := withCheck(deploymentAlloc(newJob(structs.JobTypeSystem, mockTask("web", map[string]any{"run_for": "1h"})), structs.UpdateHealthCheckChecks))
		ar := h.runner(alloc)
		began := time.Now()
		ar.healthHook.probe = passingFrom(began.Add(20 * time.Second)) // probes at 0, 5, ... 20s
		go ar.Run()

		settle(30*time.Second - time.Millisecond)
		require.Empty(t, h.sentHealth(alloc.ID), "min_healthy_time counts from the first passing probe")
		settle(time.Millisecond)
		sent := h.sentHealth(alloc.ID)
		require.Len(t, sent, 1)
		require.True(t, sent[0].IsHealthy())
		require.Equal(t, began.Add(30*time.Second), sent[0].Timestamp)
		ar.Destroy()
	})
}

func TestHealthNotTrackedWhenNotTheClients(t *testing.T) {
	tests := map[string]func(a *structs.Allocation){
		"manual":            func(a *structs.Allocation) { a.Job.TaskGroups[0].Update.HealthCheck = structs.UpdateHealthCheckManual },
		"no deployment":     func(a *structs.Allocation) { a.DeploymentID, a.DeploymentStatus = "", nil },
		"no update block":   func(a *structs.Allocation) { a.Job.TaskGroups[0].Update = nil },
		"set by the server": func(a *structs.Allocation) { a.DeploymentStatus.Healthy = ptr(false) },
	}
	for name, mutate := range tests {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				alloc := deploymentAlloc(newJob(structs.JobTypeSystem, mockTask("web", map[string]any{"run_for": "1h"})), structs.UpdateHealthCheckTaskStates)
				mutate(alloc)
				ar := h.runner(alloc)
				go ar.Run()
				settle(30 * time.Minute)
				require.NotEmpty(t, h.published(alloc.ID))
				require.Empty(t, h.sentHealth(alloc.ID), "nothing decided, and the server's status is not echoed")
				require.Equal(t, alloc.DeploymentStatus, ar.Alloc().DeploymentStatus)
				rec, err := h.db.GetDeploymentHealth(alloc.ID)
				require.NoError(t, err)
				require.Nil(t, rec)
				ar.Destroy()
			})
		})
	}
}

func TestStoppedAllocIsNotDecided(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		alloc := deploymentAlloc(newJob(structs.JobTypeSystem, mockTask("web", map[string]any{"run_for": "1h"})), structs.UpdateHealthCheckTaskStates)
		ar := h.runner(alloc)
		go ar.Run()
		settle(5 * time.Second)
		stop := alloc.Copy()
		stop.DesiredStatus, stop.AllocModifyIndex = structs.AllocDesiredStatusStop, 20
		ar.Update(stop)
		<-ar.WaitCh()
		settle(time.Hour)
		require.Empty(t, h.sentHealth(alloc.ID))
		require.Equal(t, structs.AllocClientStatusComplete, ar.Alloc().ClientStatus)
		ar.Destroy()
	})
}

func TestNewDeploymentTracksAfresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		alloc := deploymentAlloc(newJob(structs.JobTypeSystem, mockTask("web", map[string]any{"run_for": "1h"})), structs.UpdateHealthCheckTaskStates)
		ar := h.runner(alloc)
		began := time.Now()
		go ar.Run()
		settle(30 * time.Second)
		require.True(t, ar.Alloc().DeploymentStatus.IsHealthy())

		// An in-place update into deployment d2: health is unset again.
		next := alloc.Copy()
		next.DeploymentID, next.DeploymentStatus, next.AllocModifyIndex = "d2", nil, 20
		ar.Update(next)
		synctest.Wait()
		require.Nil(t, ar.Alloc().DeploymentStatus)
		ar.taskStateChanged() // a publish now carries no health
		require.Nil(t, h.lastPublished(alloc.ID).DeploymentStatus)

		settle(10*time.Second - time.Millisecond)
		require.Nil(t, ar.Alloc().DeploymentStatus, "min_healthy_time counts from the new deployment")
		settle(time.Millisecond)
		ds := h.lastPublished(alloc.ID).DeploymentStatus
		require.True(t, ds.IsHealthy())
		require.Equal(t, began.Add(40*time.Second), ds.Timestamp)
		require.False(t, ds.Canary)
		rec, err := h.db.GetDeploymentHealth(alloc.ID)
		require.NoError(t, err)
		require.Equal(t, "d2", rec.DeploymentID)
		require.True(t, began.Add(30*time.Second).Equal(rec.Start))
		ar.Destroy()
	})
}

func TestHealthTrackingSurvivesClientRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		alloc := withCheck(deploymentAlloc(newJob(structs.JobTypeSystem, mockTask("web", map[string]any{"run_for": "1h"})), structs.UpdateHealthCheckChecks))
		ar1 := h.runner(alloc)
		ar1.healthHook.probe = passingFrom(time.Time{})
		began := time.Now()
		go ar1.Run()
		settle(30 * time.Second)

		// Restarted halfway: the deadline still counts from the first start.
		ar2, _ := restart(t, h, ar1, alloc)
		ar2.healthHook.probe = passingFrom(time.Time{})
		go ar2.Run()
		settle(30*time.Second - time.Millisecond)
		require.Empty(t, h.sentHealth(alloc.ID))
		settle(time.Millisecond)
		decided := h.decidedOnce(t, alloc.ID)
		require.True(t, decided.IsUnhealthy())
		require.Equal(t, began.Add(time.Minute), decided.Timestamp)
		n := len(h.sentHealth(alloc.ID))

		// Restarted after the decision: reported again, never decided again,
		// even with checks that now pass.
		ar3, _ := restart(t, h, ar2, alloc)
		ar3.healthHook.probe = passingFrom(began)
		go ar3.Run()
		settle(time.Hour)
		require.True(t, decided.Timestamp.Equal(h.decidedOnce(t, alloc.ID).Timestamp))
		require.Greater(t, len(h.sentHealth(alloc.ID)), n, "the restored runner reports the decision")
		ar3.Destroy()
	})
}

func TestFinalHealth(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	newDeployed := func() *structs.Allocation {
		return deploymentAlloc(newJob(structs.JobTypeSystem, mockTask("web", nil)), structs.UpdateHealthCheckChecks)
	}
	failed := map[string]*structs.TaskState{"web": {State: taskrunner.StateDead, Failed: true,
		Events: []*structs.TaskEvent{{Type: "Received", Time: now.Add(-time.Minute).UnixNano()}}}}

	// Undecided, a task failed: unhealthy now, and recorded.
	db := NewMemDB()
	a := newDeployed()
	ds, err := FinalHealth(db, a, failed, now)
	require.NoError(t, err)
	require.Equal(t, &structs.AllocDeploymentStatus{Healthy: ptr(false), Timestamp: now, Canary: true}, ds)
	rec, err := db.GetDeploymentHealth(a.ID)
	require.NoError(t, err)
	require.True(t, now.Add(-time.Minute).Equal(rec.Start), "tracking start from the earliest task event")

	// A recorded decision is reported as it was.
	ds, err = FinalHealth(db, a, map[string]*structs.TaskState{"web": {State: taskrunner.StateDead}}, now.Add(time.Hour))
	require.NoError(t, err)
	require.True(t, now.Equal(ds.Timestamp))

	// Another deployment's record is ignored; a record is not needed.
	a.DeploymentID = "d2"
	ds, err = FinalHealth(NewMemDB(), a, failed, now)
	require.NoError(t, err)
	require.True(t, ds.IsUnhealthy())
	ds, err = FinalHealth(db, a, map[string]*structs.TaskState{"web": {State: taskrunner.StateDead}}, now)
	require.NoError(t, err)
	require.True(t, ds.IsUnhealthy(), "every task dead")

	// Nothing to report: manual, set by the server, stopped.
	for _, mutate := range []func(*structs.Allocation){
		func(a *structs.Allocation) { a.Job.TaskGroups[0].Update.HealthCheck = structs.UpdateHealthCheckManual },
		func(a *structs.Allocation) { a.DeploymentStatus.Healthy = ptr(true) },
		func(a *structs.Allocation) { a.DesiredStatus = structs.AllocDesiredStatusStop },
	} {
		a := newDeployed()
		mutate(a)
		ds, err := FinalHealth(NewMemDB(), a, failed, now)
		require.NoError(t, err)
		require.Nil(t, ds)
	}
}

func ptr[T any](v T) *T { return &v }

// An allocation of a deployment that fails before its tasks start (here
// its directory cannot be made) is unhealthy at once: the deployment does
// not wait for its progress deadline.
func TestUnhealthyWhenSetupFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		alloc := deploymentAlloc(newJob(structs.JobTypeSystem, mockTask("web", nil)), structs.UpdateHealthCheckTaskStates)
		require.NoError(t, os.WriteFile(filepath.Join(h.root, alloc.ID), []byte("x"), 0o644)) // a file where the alloc dir goes
		ar := h.runner(alloc)
		go ar.Run()
		<-ar.WaitCh()

		last := h.lastPublished(alloc.ID)
		require.Equal(t, structs.AllocClientStatusFailed, last.ClientStatus)
		require.NotNil(t, last.DeploymentStatus)
		require.NotNil(t, last.DeploymentStatus.Healthy, "health decided")
		require.False(t, *last.DeploymentStatus.Healthy)
		require.Equal(t, last.DeploymentStatus, h.decidedOnce(t, alloc.ID))
		ar.Destroy()
	})
}
