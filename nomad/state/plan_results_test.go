package state

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

func TestUpsertPlanResults(t *testing.T) {
	s := NewStateStore()
	v0 := mustJob(t, s, 1, testJob("web"))
	old := testAlloc(v0, "n1")
	keep := testAlloc(v0, "n2")
	require.NoError(t, s.UpsertAllocs(2, []*structs.Allocation{old, keep}))
	prevDep := testDeployment(v0)
	require.NoError(t, s.UpsertDeployment(3, prevDep))

	in := testJob("web")
	in.Priority = 80
	v1 := mustJob(t, s, 4, in)
	require.Equal(t, uint64(1), v1.Version)

	repl := testAlloc(v1, "n1")
	repl.PreviousAllocation = old.ID
	dep := testDeployment(v1)
	dep.TaskGroups["web"].PlacedAllocs = 1
	stop := old.Copy()
	stop.DesiredStatus = structs.AllocDesiredStatusStop
	stop.DesiredDescription = "alloc is being updated due to job update"
	ghost := testAlloc(v0, "n3") // not stored: skipped
	req := &structs.ApplyPlanResultsRequest{
		Job:           v1,
		AllocsUpdated: []*structs.Allocation{repl},
		AllocsStopped: []*structs.Allocation{stop, ghost},
		Deployment:    dep,
		DeploymentUpdates: []*structs.DeploymentStatusUpdate{
			{DeploymentID: prevDep.ID, Status: structs.DeploymentStatusCancelled, StatusDescription: structs.DeploymentStatusDescriptionNewerJob},
			{DeploymentID: "unknown", Status: structs.DeploymentStatusCancelled},
		},
		UpdatedAt: 5000,
	}
	require.NoError(t, s.UpsertPlanResults(5, req))

	gotOld := mustAlloc(t, s, old.ID)
	require.Equal(t, structs.AllocDesiredStatusStop, gotOld.DesiredStatus)
	require.Equal(t, stop.DesiredDescription, gotOld.DesiredDescription)
	require.Equal(t, repl.ID, gotOld.NextAllocation)
	require.Equal(t, int64(5000), gotOld.ModifyTime)
	require.Equal(t, uint64(5), gotOld.AllocModifyIndex)
	require.Equal(t, uint64(2), gotOld.CreateIndex)
	require.Same(t, v0, gotOld.Job)

	gotNew := mustAlloc(t, s, repl.ID)
	require.Equal(t, uint64(5), gotNew.CreateIndex)
	require.Equal(t, int64(5000), gotNew.CreateTime)
	require.Equal(t, int64(5000), gotNew.ModifyTime)
	require.Same(t, v1, gotNew.Job)
	require.Empty(t, gotNew.NextAllocation)

	require.Empty(t, mustAlloc(t, s, keep.ID).NextAllocation)
	ghostGot, err := s.AllocByID(nil, ghost.ID)
	require.NoError(t, err)
	require.Nil(t, ghostGot)

	gotDep, err := s.DeploymentByID(nil, dep.ID)
	require.NoError(t, err)
	require.Equal(t, uint64(5), gotDep.CreateIndex)
	require.Equal(t, int64(5000), gotDep.CreateTime)
	require.Equal(t, 1, gotDep.TaskGroups["web"].PlacedAllocs)
	gotPrev, _ := s.DeploymentByID(nil, prevDep.ID)
	require.Equal(t, structs.DeploymentStatusCancelled, gotPrev.Status)
	require.Equal(t, structs.DeploymentStatusDescriptionNewerJob, gotPrev.StatusDescription)

	for _, tbl := range []string{TableAllocs, TableDeployments} {
		require.Equal(t, uint64(5), s.Index(tbl), tbl)
	}
	require.Equal(t, structs.JobStatusRunning, jobStatus(t, s, "web"))

	// A second plan updating the deployment keeps its CreateIndex.
	dep2 := dep.Copy()
	dep2.TaskGroups["web"].PlacedAllocs = 2
	require.NoError(t, s.UpsertPlanResults(6, &structs.ApplyPlanResultsRequest{Deployment: dep2, UpdatedAt: 6000}))
	gotDep, _ = s.DeploymentByID(nil, dep.ID)
	require.Equal(t, uint64(5), gotDep.CreateIndex)
	require.Equal(t, int64(5000), gotDep.CreateTime)
	require.Equal(t, int64(6000), gotDep.ModifyTime)
	require.Equal(t, 2, gotDep.TaskGroups["web"].PlacedAllocs)
}

func TestUpsertPlanResults_LinksJobFromRequest(t *testing.T) {
	s := NewStateStore()
	job := testJob("web")
	job.Version = 3 // not stored
	a := testAlloc(job, "n1")
	require.NoError(t, s.UpsertPlanResults(1, &structs.ApplyPlanResultsRequest{
		Job: job, AllocsUpdated: []*structs.Allocation{a}, UpdatedAt: 1,
	}))
	require.Same(t, job, mustAlloc(t, s, a.ID).Job)
}

func TestUpsertPlanResults_KeepsHealthFromStaleCopy(t *testing.T) {
	s := NewStateStore()
	job := mustJob(t, s, 1, testJob("web"))
	d := testDeployment(job)
	require.NoError(t, s.UpsertDeployment(2, d))
	a := testAlloc(job, "n1")
	a.DeploymentID = d.ID
	a.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: true}
	require.NoError(t, s.UpsertAllocs(3, []*structs.Allocation{a}))
	require.NoError(t, s.UpdateDeploymentAllocHealth(4, &structs.DeploymentAllocHealthRequest{
		DeploymentID: d.ID, HealthyAllocationIDs: []string{a.ID}, Timestamp: 1,
	}))

	stale := a.Copy() // the scheduler's copy from before the health report
	require.NoError(t, s.UpsertPlanResults(5, &structs.ApplyPlanResultsRequest{
		AllocsUpdated: []*structs.Allocation{stale}, UpdatedAt: 2,
	}))
	got := mustAlloc(t, s, a.ID)
	require.True(t, got.DeploymentStatus.IsHealthy())
	require.True(t, got.DeploymentStatus.Canary)
}

// UpsertPlanResultsOwned stores what UpsertPlanResults stores for the same
// plan (replacement, stop, new deployment); only the copying differs.
func TestUpsertPlanResultsOwned_StoresTheSame(t *testing.T) {
	build := func() (*StateStore, *structs.ApplyPlanResultsRequest) {
		s := NewStateStore()
		v0 := mustJob(t, s, 1, testJob("web"))
		old := testAlloc(v0, "n1")
		old.ID, old.EvalID = "old", "e0"
		require.NoError(t, s.UpsertAllocs(2, []*structs.Allocation{old}))
		repl := testAlloc(v0, "n1")
		repl.ID, repl.EvalID, repl.PreviousAllocation = "repl", "e1", old.ID
		fresh := testAlloc(v0, "n2")
		fresh.ID, fresh.EvalID = "fresh", "e1"
		dep := testDeployment(v0)
		dep.ID = "dep"
		repl.DeploymentID, fresh.DeploymentID = dep.ID, dep.ID
		stop := old.Copy()
		stop.DesiredStatus = structs.AllocDesiredStatusStop
		return s, &structs.ApplyPlanResultsRequest{Job: v0, UpdatedAt: 9, Deployment: dep,
			AllocsUpdated: []*structs.Allocation{repl, fresh}, AllocsStopped: []*structs.Allocation{stop}}
	}
	copied, req := build()
	require.NoError(t, copied.UpsertPlanResults(3, req))
	owned, req := build()
	require.NoError(t, owned.UpsertPlanResultsOwned(3, req))
	for _, s := range []*StateStore{copied, owned} {
		require.Equal(t, "repl", mustAlloc(t, s, "old").NextAllocation)
	}
	want, err := copied.AllocsByJob(nil, "default", "web", true)
	require.NoError(t, err)
	got, err := owned.AllocsByJob(nil, "default", "web", true)
	require.NoError(t, err)
	require.Len(t, got, 3)
	require.Equal(t, want, got)
	wantD, err := copied.DeploymentByID(nil, "dep")
	require.NoError(t, err)
	gotD, err := owned.DeploymentByID(nil, "dep")
	require.NoError(t, err)
	require.NotNil(t, gotD)
	require.Equal(t, wantD, gotD)
}

// TestUpsertPlanResults_UnknownAndLostStampDisconnectedAt: a plan marking
// an allocation unknown keeps it running (desired run) and stamps
// DisconnectedAt with the plan's time, which marking it unknown again does
// not move; marking it lost stamps it anew.
func TestUpsertPlanResults_UnknownAndLostStampDisconnectedAt(t *testing.T) {
	s := NewStateStore()
	v0 := mustJob(t, s, 1, testJob("web"))
	a := testAlloc(v0, "n1")
	a.ClientStatus = structs.AllocClientStatusRunning
	require.NoError(t, s.UpsertAllocs(2, []*structs.Allocation{a}))
	mark := func(index uint64, at int64, desired, client string) *structs.Allocation {
		m := a.Copy()
		m.DesiredStatus, m.ClientStatus = desired, client
		require.NoError(t, s.UpsertPlanResults(index, &structs.ApplyPlanResultsRequest{Job: v0, UpdatedAt: at,
			AllocsStopped: []*structs.Allocation{m}}))
		return mustAlloc(t, s, a.ID)
	}
	got := mark(3, 1000, structs.AllocDesiredStatusRun, structs.AllocClientStatusUnknown)
	require.Equal(t, structs.AllocDesiredStatusRun, got.DesiredStatus)
	require.Equal(t, structs.AllocClientStatusUnknown, got.ClientStatus)
	require.Equal(t, int64(1000), got.DisconnectedAt)
	require.Equal(t, uint64(3), got.AllocModifyIndex, "the client sees the change")

	got = mark(4, 2000, structs.AllocDesiredStatusRun, structs.AllocClientStatusUnknown)
	require.Equal(t, int64(1000), got.DisconnectedAt, "still unknown since the first mark")

	got = mark(5, 3000, structs.AllocDesiredStatusStop, structs.AllocClientStatusLost)
	require.Equal(t, structs.AllocClientStatusLost, got.ClientStatus)
	require.Equal(t, int64(3000), got.DisconnectedAt)
}
