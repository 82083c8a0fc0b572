package state

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

func TestDeploymentReads(t *testing.T) {
	s := NewStateStore()
	job := mustJob(t, s, 1, testJob("web"))
	d1, d2 := testDeployment(job), testDeployment(job)
	d1.ID = "aaaa0000-0000-0000-0000-000000000001"
	d2.ID = "bbbb0000-0000-0000-0000-000000000002"
	require.NoError(t, s.UpsertDeployment(2, d2))
	require.NoError(t, s.UpsertDeployment(3, d1))
	prodJob := testJob("web")
	prodJob.Namespace = "prod"
	dp := testDeployment(prodJob)
	dp.ID = "aaaa3333-0000-0000-0000-000000000003"
	require.NoError(t, s.UpsertDeployment(4, dp))

	ids := func(ds []*structs.Deployment, err error) []string {
		require.NoError(t, err)
		out := []string{}
		for _, d := range ds {
			out = append(out, d.ID)
		}
		return out
	}
	require.Equal(t, []string{d1.ID, d2.ID}, ids(s.Deployments(nil, "")))
	require.Equal(t, []string{d1.ID, dp.ID, d2.ID}, ids(s.Deployments(nil, "*")))
	require.Equal(t, []string{d1.ID, dp.ID}, ids(s.DeploymentsByIDPrefix(nil, "*", "aaaa")))
	require.Equal(t, []string{d1.ID, d2.ID}, ids(s.DeploymentsByJobID(nil, "", "web", false)))

	latest, err := s.LatestDeploymentByJobID(nil, "", "web")
	require.NoError(t, err)
	require.Equal(t, d1.ID, latest.ID, "highest CreateIndex")

	// A deployment of an earlier incarnation is hidden unless all.
	stale := testDeployment(job)
	stale.JobCreateIndex = 0
	require.NoError(t, s.UpsertDeployment(5, stale))
	require.Len(t, ids(s.DeploymentsByJobID(nil, "", "web", false)), 2)
	require.Len(t, ids(s.DeploymentsByJobID(nil, "", "web", true)), 3)

	// Re-upserting keeps CreateIndex.
	again := d2.Copy()
	again.StatusDescription = "x"
	require.NoError(t, s.UpsertDeployment(6, again))
	got, err := s.DeploymentByID(nil, d2.ID)
	require.NoError(t, err)
	require.Equal(t, uint64(2), got.CreateIndex)
	require.Equal(t, uint64(6), got.ModifyIndex)

	none, err := s.LatestDeploymentByJobID(nil, "", "nope")
	require.NoError(t, err)
	require.Nil(t, none)
}

func TestUpdateDeploymentStatus(t *testing.T) {
	s := NewStateStore()
	job := mustJob(t, s, 1, testJob("web"))
	d := testDeployment(job)
	require.NoError(t, s.UpsertDeployment(2, d))
	require.NoError(t, s.UpdateDeploymentStatus(3, &structs.DeploymentStatusUpdate{
		DeploymentID: d.ID, Status: structs.DeploymentStatusPaused, StatusDescription: structs.DeploymentStatusDescriptionPaused,
	}, 55))
	got, _ := s.DeploymentByID(nil, d.ID)
	require.Equal(t, structs.DeploymentStatusPaused, got.Status)
	require.Equal(t, structs.DeploymentStatusDescriptionPaused, got.StatusDescription)
	require.Equal(t, int64(55), got.ModifyTime)
	require.Equal(t, uint64(3), got.ModifyIndex)
	require.Equal(t, structs.DeploymentStatusRunning, d.Status, "input not mutated")

	err := s.UpdateDeploymentStatus(4, &structs.DeploymentStatusUpdate{DeploymentID: "nope"}, 0)
	require.True(t, errors.Is(err, ErrNotFound), "got %v", err)
}

func TestUpdateDeploymentPromotion(t *testing.T) {
	setup := func(t *testing.T, status string) (*StateStore, *structs.Deployment) {
		s := NewStateStore()
		job := mustJob(t, s, 1, testJob("web"))
		d := testDeployment(job)
		d.Status = status
		d.TaskGroups["api"] = &structs.DeploymentState{DesiredTotal: 3}
		require.NoError(t, s.UpsertDeployment(2, d))
		return s, d
	}
	tests := []struct {
		name     string
		status   string
		all      bool
		groups   []string
		wantErr  error
		promoted map[string]bool
	}{
		{"all", structs.DeploymentStatusRunning, true, nil, nil, map[string]bool{"web": true, "api": false}},
		{"named", structs.DeploymentStatusRunning, false, []string{"web"}, nil, map[string]bool{"web": true, "api": false}},
		{"named without canaries", structs.DeploymentStatusRunning, false, []string{"api"}, nil, map[string]bool{"web": false, "api": false}},
		{"unknown group", structs.DeploymentStatusRunning, false, []string{"db"}, ErrConflict, nil},
		{"terminal", structs.DeploymentStatusFailed, true, nil, ErrConflict, nil},
		{"paused is active", structs.DeploymentStatusPaused, true, nil, nil, map[string]bool{"web": true, "api": false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, d := setup(t, tc.status)
			err := s.UpdateDeploymentPromotion(3, &structs.DeploymentPromoteRequest{
				DeploymentID: d.ID, All: tc.all, Groups: tc.groups, UpdatedAt: 9,
			})
			if tc.wantErr != nil {
				require.True(t, errors.Is(err, tc.wantErr), "got %v", err)
				if tc.status == structs.DeploymentStatusFailed {
					require.Contains(t, err.Error(), "can't promote terminal deployment")
				}
				return
			}
			require.NoError(t, err)
			got, _ := s.DeploymentByID(nil, d.ID)
			for g, want := range tc.promoted {
				require.Equal(t, want, got.TaskGroups[g].Promoted, g)
			}
			require.False(t, d.TaskGroups["web"].Promoted, "input not mutated")
			if tc.status == structs.DeploymentStatusRunning {
				require.Equal(t, structs.DeploymentStatusDescriptionRunning, got.StatusDescription)
			}
		})
	}
	s := NewStateStore()
	err := s.UpdateDeploymentPromotion(1, &structs.DeploymentPromoteRequest{DeploymentID: "nope", All: true})
	require.True(t, errors.Is(err, ErrNotFound), "got %v", err)
}

func TestUpdateDeploymentAllocHealth(t *testing.T) {
	s := NewStateStore()
	job := mustJob(t, s, 1, testJob("web"))
	d := testDeployment(job)
	require.NoError(t, s.UpsertDeployment(2, d))
	var allocs []*structs.Allocation
	for i := 0; i < 3; i++ {
		a := testAlloc(job, "n1")
		a.DeploymentID = d.ID
		allocs = append(allocs, a)
	}
	foreign := testAlloc(job, "n2")
	require.NoError(t, s.UpsertAllocs(3, append(allocs, foreign)))

	req := &structs.DeploymentAllocHealthRequest{
		DeploymentID:           d.ID,
		HealthyAllocationIDs:   []string{allocs[0].ID, allocs[1].ID},
		UnhealthyAllocationIDs: []string{allocs[2].ID},
		Timestamp:              1_700_000_000_000_000_000,
		DeploymentUpdate: &structs.DeploymentStatusUpdate{
			DeploymentID: d.ID, Status: structs.DeploymentStatusFailed,
			StatusDescription: structs.DeploymentStatusDescriptionFailedAllocations,
		},
	}
	require.NoError(t, s.UpdateDeploymentAllocHealth(4, req))
	got, _ := s.DeploymentByID(nil, d.ID)
	require.Equal(t, 2, got.TaskGroups["web"].HealthyAllocs)
	require.Equal(t, 1, got.TaskGroups["web"].UnhealthyAllocs)
	require.Equal(t, structs.DeploymentStatusFailed, got.Status)
	a0 := mustAlloc(t, s, allocs[0].ID)
	require.True(t, a0.DeploymentStatus.IsHealthy())
	require.Equal(t, int64(1_700_000_000), a0.DeploymentStatus.Timestamp.Unix())
	require.Equal(t, uint64(4), a0.ModifyIndex)
	require.True(t, mustAlloc(t, s, allocs[2].ID).DeploymentStatus.IsUnhealthy())

	// Now terminal: further health is a conflict.
	err := s.UpdateDeploymentAllocHealth(5, &structs.DeploymentAllocHealthRequest{DeploymentID: d.ID})
	require.True(t, errors.Is(err, ErrConflict), "got %v", err)

	d2 := testDeployment(job)
	require.NoError(t, s.UpsertDeployment(6, d2))
	tests := []struct {
		name string
		req  *structs.DeploymentAllocHealthRequest
		want error
	}{
		{"missing deployment", &structs.DeploymentAllocHealthRequest{DeploymentID: "nope"}, ErrNotFound},
		{"missing alloc", &structs.DeploymentAllocHealthRequest{DeploymentID: d2.ID, HealthyAllocationIDs: []string{"nope"}}, ErrNotFound},
		{"alloc of another deployment", &structs.DeploymentAllocHealthRequest{DeploymentID: d2.ID, HealthyAllocationIDs: []string{foreign.ID}}, ErrConflict},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := s.UpdateDeploymentAllocHealth(7, tc.req)
			require.True(t, errors.Is(err, tc.want), "got %v", err)
		})
	}
	require.Equal(t, uint64(6), s.LatestIndex(), "rejected writes write nothing")
}

// TestPromotionClearsCanaryFlags: promotion ends the canary status of the
// promoted group's allocations in the same transaction, and neither a
// client's report nor a stale scheduler copy brings it back.
func TestPromotionClearsCanaryFlags(t *testing.T) {
	s := NewStateStore()
	job := mustJob(t, s, 1, testJob("web"))
	d := testDeployment(job)
	d.TaskGroups["api"] = &structs.DeploymentState{DesiredCanaries: 1, DesiredTotal: 1}
	require.NoError(t, s.UpsertDeployment(2, d))
	canary := func(group string) *structs.Allocation {
		a := testAlloc(job, "node-1")
		a.TaskGroup = group
		a.DeploymentID = d.ID
		a.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: true}
		return a
	}
	web, api := canary("web"), canary("api")
	plain := testAlloc(job, "node-2")
	plain.DeploymentID = d.ID
	require.NoError(t, s.UpsertAllocs(3, []*structs.Allocation{web, api, plain}))
	staleWeb := mustAlloc(t, s, web.ID) // a scheduler's copy from before the promotion

	require.NoError(t, s.UpdateDeploymentPromotion(4, &structs.DeploymentPromoteRequest{
		DeploymentID: d.ID, Groups: []string{"web"}, UpdatedAt: 9,
	}))
	got := mustAlloc(t, s, web.ID)
	require.False(t, got.DeploymentStatus.Canary, "the promoted canary is no longer flagged")
	require.Equal(t, uint64(4), got.ModifyIndex)
	require.True(t, mustAlloc(t, s, api.ID).DeploymentStatus.Canary, "a group not promoted keeps its canaries")
	require.Nil(t, mustAlloc(t, s, plain.ID).DeploymentStatus)
	dep, err := s.DeploymentByID(nil, d.ID)
	require.NoError(t, err)
	require.True(t, dep.TaskGroups["web"].Promoted)

	// A client still holding the canary flag reports health.
	require.NoError(t, s.UpdateAllocsFromClient(5, []*structs.Allocation{{
		ID: web.ID, ClientStatus: structs.AllocClientStatusRunning,
		DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: new(true), Canary: true},
	}}, 10))
	got = mustAlloc(t, s, web.ID)
	require.False(t, got.DeploymentStatus.Canary, "a client cannot make an allocation a canary again")
	require.True(t, got.DeploymentStatus.IsHealthy())

	// A plan built on a snapshot from before the promotion updates it.
	staleWeb.DesiredDescription = "stale copy"
	require.NoError(t, s.UpsertAllocs(6, []*structs.Allocation{staleWeb}))
	require.False(t, mustAlloc(t, s, web.ID).DeploymentStatus.Canary, "a stale copy does not undo the promotion")

	// A client cannot make an ordinary allocation a canary either.
	require.NoError(t, s.UpdateAllocsFromClient(7, []*structs.Allocation{{
		ID: plain.ID, DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: new(true), Canary: true},
	}}, 11))
	require.False(t, mustAlloc(t, s, plain.ID).DeploymentStatus.Canary)
}
