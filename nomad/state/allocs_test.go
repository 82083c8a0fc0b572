package state

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

func TestUpsertAllocs(t *testing.T) {
	s := NewStateStore()
	job := mustJob(t, s, 1, testJob("web"))
	a := testAlloc(job, "n1")
	a.CreateTime = 1000
	require.NoError(t, s.UpsertAllocs(2, []*structs.Allocation{a}))
	require.Nil(t, a.Job, "input not mutated")
	require.Zero(t, a.CreateIndex)

	got := mustAlloc(t, s, a.ID)
	require.Same(t, job, got.Job, "linked to the shared stored version")
	require.Equal(t, uint64(2), got.CreateIndex)
	require.Equal(t, uint64(2), got.ModifyIndex)
	require.Equal(t, uint64(2), got.AllocModifyIndex)
	require.Equal(t, uint64(2), s.Index(TableAllocs))
	require.Equal(t, uint64(2), s.LatestIndex())

	// The client reports running; a later server update from a stale copy
	// keeps the client's fields and the create fields.
	run := a.Copy()
	run.ClientStatus = structs.AllocClientStatusRunning
	run.TaskStates = map[string]*structs.TaskState{"server": {State: "running"}}
	require.NoError(t, s.UpdateAllocsFromClient(3, []*structs.Allocation{run}, 77))
	stale := a.Copy()
	stale.DesiredDescription = "updated in place"
	stale.CreateTime = 5
	require.NoError(t, s.UpsertAllocs(4, []*structs.Allocation{stale}))
	got = mustAlloc(t, s, a.ID)
	require.Equal(t, structs.AllocClientStatusRunning, got.ClientStatus)
	require.Contains(t, got.TaskStates, "server")
	require.Equal(t, "updated in place", got.DesiredDescription)
	require.Equal(t, uint64(2), got.CreateIndex)
	require.Equal(t, int64(1000), got.CreateTime)
	require.Equal(t, uint64(4), got.AllocModifyIndex)

	// Marking it lost overrides the client status.
	lost := a.Copy()
	lost.ClientStatus = structs.AllocClientStatusLost
	require.NoError(t, s.UpsertAllocs(5, []*structs.Allocation{lost}))
	require.Equal(t, structs.AllocClientStatusLost, mustAlloc(t, s, a.ID).ClientStatus)
}

func TestUpdateAllocsFromClient(t *testing.T) {
	s := NewStateStore()
	job := mustJob(t, s, 1, testJob("web"))
	a := testAlloc(job, "n1")
	a.DeploymentID = uuid.NewString()
	a.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: true}
	require.NoError(t, s.UpsertAllocs(2, []*structs.Allocation{a}))

	healthy := true
	u := &structs.Allocation{
		ID:                a.ID,
		ClientStatus:      structs.AllocClientStatusRunning,
		ClientDescription: "Tasks are running",
		TaskStates:        map[string]*structs.TaskState{"server": {State: "running"}},
		DeploymentStatus:  &structs.AllocDeploymentStatus{Healthy: &healthy},
		DesiredStatus:     structs.AllocDesiredStatusStop, // ignored: not the client's
		NodeID:            "elsewhere",                    // ignored
	}
	unknown := &structs.Allocation{ID: uuid.NewString(), ClientStatus: structs.AllocClientStatusFailed}
	require.NoError(t, s.UpdateAllocsFromClient(3, []*structs.Allocation{u, unknown}, 999))

	got := mustAlloc(t, s, a.ID)
	require.Equal(t, structs.AllocClientStatusRunning, got.ClientStatus)
	require.Equal(t, "Tasks are running", got.ClientDescription)
	require.Equal(t, structs.AllocDesiredStatusRun, got.DesiredStatus)
	require.Equal(t, "n1", got.NodeID)
	require.True(t, got.DeploymentStatus.IsHealthy())
	require.True(t, got.DeploymentStatus.Canary, "client cannot clear canary")
	require.Equal(t, uint64(3), got.DeploymentStatus.ModifyIndex)
	require.Equal(t, uint64(3), got.ModifyIndex)
	require.Equal(t, uint64(2), got.AllocModifyIndex)
	require.Equal(t, int64(999), got.ModifyTime)
	missing, err := s.AllocByID(nil, unknown.ID)
	require.NoError(t, err)
	require.Nil(t, missing)
}

func TestUpdateAllocsDesiredStatus(t *testing.T) {
	s := NewStateStore()
	job := mustJob(t, s, 1, testJob("web"))
	a := testAlloc(job, "n1")
	require.NoError(t, s.UpsertAllocs(2, []*structs.Allocation{a}))
	require.NoError(t, s.UpdateAllocsDesiredStatus(3, []string{a.ID, "nope"}, structs.AllocDesiredStatusStop, "alloc stopped"))
	got := mustAlloc(t, s, a.ID)
	require.Equal(t, structs.AllocDesiredStatusStop, got.DesiredStatus)
	require.Equal(t, "alloc stopped", got.DesiredDescription)
	require.Equal(t, uint64(3), got.AllocModifyIndex)
	require.Equal(t, uint64(2), got.CreateIndex)
}

func TestAllocReads(t *testing.T) {
	s := NewStateStore()
	job := mustJob(t, s, 1, testJob("web"))
	other := testJob("web")
	other.Namespace = "prod"
	otherJob := mustJob(t, s, 2, other)

	mk := func(id string, j *structs.Job, node, eval, dep string) *structs.Allocation {
		a := testAlloc(j, node)
		a.ID, a.EvalID, a.DeploymentID = id, eval, dep
		return a
	}
	allocs := []*structs.Allocation{
		mk("aaaa0000-0000-0000-0000-000000000003", job, "n1", "e1", "d1"),
		mk("aaaa0000-0000-0000-0000-000000000001", job, "n2", "e1", ""),
		mk("bbbb0000-0000-0000-0000-000000000002", job, "n1", "e2", "d1"),
		mk("aaaa1111-0000-0000-0000-000000000004", otherJob, "n1", "e3", "d9"),
	}
	require.NoError(t, s.UpsertAllocs(3, allocs))
	// e2 is stored (its job's allocations are filtered); e1 is not (all
	// allocations are).
	e2 := &structs.Evaluation{ID: "e2", Namespace: "default", JobID: "web", Status: structs.EvalStatusComplete}
	require.NoError(t, s.UpsertEvals(4, []*structs.Evaluation{e2}))
	// d1 is stored (its job's allocations are filtered); d9 is not.
	require.NoError(t, s.UpsertDeployment(5, &structs.Deployment{ID: "d1", Namespace: "default", JobID: "web",
		Status: structs.DeploymentStatusRunning}))
	id := func(i int) string { return allocs[i].ID }

	tests := []struct {
		name string
		get  func() ([]*structs.Allocation, error)
		want []string
	}{
		{"all", func() ([]*structs.Allocation, error) { return s.Allocs(nil) },
			[]string{id(1), id(0), id(3), id(2)}},
		{"prefix all ns", func() ([]*structs.Allocation, error) { return s.AllocsByIDPrefix(nil, "*", "aaaa") },
			[]string{id(1), id(0), id(3)}},
		{"prefix default ns", func() ([]*structs.Allocation, error) { return s.AllocsByIDPrefix(nil, "default", "aaaa") },
			[]string{id(1), id(0)}},
		{"prefix prod ns", func() ([]*structs.Allocation, error) { return s.AllocsByIDPrefix(nil, "prod", "aaaa1") },
			[]string{id(3)}},
		{"by job", func() ([]*structs.Allocation, error) { return s.AllocsByJob(nil, "default", "web", true) },
			[]string{id(1), id(0), id(2)}},
		{"by node", func() ([]*structs.Allocation, error) { return s.AllocsByNode(nil, "n1") },
			[]string{id(0), id(3), id(2)}},
		{"by eval", func() ([]*structs.Allocation, error) { return s.AllocsByEval(nil, "e1") },
			[]string{id(1), id(0)}},
		{"by stored eval", func() ([]*structs.Allocation, error) { return s.AllocsByEval(nil, "e2") },
			[]string{id(2)}},
		{"by deployment", func() ([]*structs.Allocation, error) { return s.AllocsByDeployment(nil, "d1") },
			[]string{id(0), id(2)}},
		{"by deployment not stored", func() ([]*structs.Allocation, error) { return s.AllocsByDeployment(nil, "d9") },
			[]string{id(3)}},
		{"by missing node", func() ([]*structs.Allocation, error) { return s.AllocsByNode(nil, "n9") },
			[]string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.get()
			require.NoError(t, err)
			require.Equal(t, tc.want, allocIDs(got))
		})
	}
}

func TestAllocsByJob_CurrentIncarnation(t *testing.T) {
	s := NewStateStore()
	old := mustJob(t, s, 1, testJob("web"))
	oldAlloc := testAlloc(old, "n1")
	require.NoError(t, s.UpsertAllocs(2, []*structs.Allocation{oldAlloc}))
	require.NoError(t, s.DeleteJob(3, "", "web"))

	gone, err := s.AllocsByJob(nil, "", "web", false)
	require.NoError(t, err)
	require.Equal(t, []string{oldAlloc.ID}, allocIDs(gone), "job missing: all")

	cur := mustJob(t, s, 4, testJob("web"))
	newAlloc := testAlloc(cur, "n1")
	require.NoError(t, s.UpsertAllocs(5, []*structs.Allocation{newAlloc}))
	got, err := s.AllocsByJob(nil, "", "web", false)
	require.NoError(t, err)
	require.Equal(t, []string{newAlloc.ID}, allocIDs(got))
	got, err = s.AllocsByJob(nil, "", "web", true)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{oldAlloc.ID, newAlloc.ID}, allocIDs(got))
}

func TestEvals(t *testing.T) {
	s := NewStateStore()
	job := mustJob(t, s, 1, testJob("web"))
	e1, e2 := testEval(job), testEval(job)
	e1.ID = "aaaa0000-0000-0000-0000-000000000001"
	e2.ID = "bbbb0000-0000-0000-0000-000000000002"
	prod := testEval(job)
	prod.ID, prod.Namespace, prod.JobID = "aaaa2222-0000-0000-0000-000000000003", "prod", "api"
	require.NoError(t, s.UpsertEvals(2, []*structs.Evaluation{e2, e1, prod}))

	got, err := s.EvalByID(nil, e1.ID)
	require.NoError(t, err)
	require.Equal(t, uint64(2), got.CreateIndex)
	require.Zero(t, e1.CreateIndex, "input not mutated")

	upd := e1.Copy()
	upd.Status = structs.EvalStatusComplete
	require.NoError(t, s.UpsertEvals(3, []*structs.Evaluation{upd}))
	got, _ = s.EvalByID(nil, e1.ID)
	require.Equal(t, uint64(2), got.CreateIndex)
	require.Equal(t, uint64(3), got.ModifyIndex)
	require.Equal(t, structs.EvalStatusComplete, got.Status)

	ids := func(es []*structs.Evaluation, err error) []string {
		require.NoError(t, err)
		out := []string{}
		for _, e := range es {
			out = append(out, e.ID)
		}
		return out
	}
	require.Equal(t, []string{e1.ID, e2.ID}, ids(s.Evals(nil, "default")))
	require.Equal(t, []string{e1.ID, prod.ID, e2.ID}, ids(s.Evals(nil, "*")))
	require.Equal(t, []string{e1.ID, prod.ID}, ids(s.EvalsByIDPrefix(nil, "*", "aaaa")))
	require.Equal(t, []string{prod.ID}, ids(s.EvalsByIDPrefix(nil, "prod", "aaaa")))
	require.Equal(t, []string{e1.ID, e2.ID}, ids(s.EvalsByJob(nil, "", "web")))
	require.Equal(t, uint64(3), s.Index(TableEvals))
	missing, err := s.EvalByID(nil, "nope")
	require.NoError(t, err)
	require.Nil(t, missing)
}
