package state

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// TestDeleteGC deletes what is still collectable and skips what changed
// since the decision: a live allocation, a pending eval, an active
// deployment, a job registered again, a node back up.
func TestDeleteGC(t *testing.T) {
	s := NewStateStore()
	up, down := testNode(), testNode()
	down.Status = structs.NodeStatusDown
	require.NoError(t, s.UpsertNode(1, up))
	require.NoError(t, s.UpsertNode(2, down))
	job := mustJob(t, s, 3, testJob("web"))
	stopped := testJob("old")
	stopped.Stop = true
	stopped = mustJob(t, s, 4, stopped)
	again := testJob("again")
	again.Stop = true
	again = mustJob(t, s, 5, again)

	done, live, stopRunning := testAlloc(job, up.ID), testAlloc(job, up.ID), testAlloc(job, down.ID)
	done.ClientStatus = structs.AllocClientStatusComplete
	live.ClientStatus = structs.AllocClientStatusRunning
	stopRunning.DesiredStatus, stopRunning.ClientStatus = structs.AllocDesiredStatusStop, structs.AllocClientStatusRunning
	require.NoError(t, s.UpsertAllocs(6, []*structs.Allocation{done, live, stopRunning}))

	e1, e2 := testEval(job), testEval(job)
	e1.Status, e2.Status = structs.EvalStatusComplete, structs.EvalStatusPending
	require.NoError(t, s.UpsertEvals(7, []*structs.Evaluation{e1, e2}))
	d1, d2 := testDeployment(job), testDeployment(job)
	d1.Status, d2.Status = structs.DeploymentStatusSuccessful, structs.DeploymentStatusRunning
	require.NoError(t, s.UpsertDeployment(8, d1))
	require.NoError(t, s.UpsertDeployment(9, d2))
	// "again" is registered again after the decision.
	rerun := again.Copy()
	rerun.Stop = false
	require.NoError(t, s.UpsertJob(10, nil, rerun))

	req := &structs.GCRequest{
		Allocs:      []string{done.ID, live.ID, stopRunning.ID, "missing"},
		Evals:       []string{e1.ID, e2.ID},
		Deployments: []string{d1.ID, d2.ID},
		Jobs: []structs.GCJob{
			{Namespace: stopped.Namespace, ID: stopped.ID, JobModifyIndex: stopped.JobModifyIndex},
			{Namespace: again.Namespace, ID: again.ID, JobModifyIndex: again.JobModifyIndex},
		},
		Nodes: []string{up.ID, down.ID},
	}
	n, err := s.DeleteGC(11, req)
	require.NoError(t, err)

	gone := func(a *structs.Allocation) bool { got, _ := s.AllocByID(nil, a.ID); return got == nil }
	require.True(t, gone(done), "a finished allocation goes")
	require.True(t, gone(stopRunning), "a stopped allocation on a down node goes")
	require.False(t, gone(live), "a live allocation stays")
	ev, _ := s.EvalByID(nil, e1.ID)
	require.Nil(t, ev)
	ev, _ = s.EvalByID(nil, e2.ID)
	require.NotNil(t, ev, "a pending eval stays")
	dep, _ := s.DeploymentByID(nil, d1.ID)
	require.Nil(t, dep)
	dep, _ = s.DeploymentByID(nil, d2.ID)
	require.NotNil(t, dep, "an active deployment stays")
	j, _ := s.JobByID(nil, stopped.Namespace, stopped.ID)
	require.Nil(t, j, "the stopped job is purged")
	vs, _ := s.JobVersionsByID(nil, stopped.Namespace, stopped.ID)
	require.Empty(t, vs, "with its versions")
	j, _ = s.JobByID(nil, again.Namespace, again.ID)
	require.NotNil(t, j, "a job registered again stays")
	node, _ := s.NodeByID(nil, up.ID)
	require.NotNil(t, node, "a ready node stays")
	node, _ = s.NodeByID(nil, down.ID)
	require.Nil(t, node, "a down node without live allocations goes")
	require.Equal(t, 6, n)
	require.Equal(t, uint64(11), s.Index(TableAllocs))
}
