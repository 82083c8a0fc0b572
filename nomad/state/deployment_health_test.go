package state

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

var (
	healthT0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	healthT1 = healthT0.Add(3 * time.Minute)
	healthT2 = healthT0.Add(5 * time.Minute)
)

const healthPD = 10 * time.Minute

// healthFixture is a running deployment (group "web": 3 desired, progress
// deadline healthPD, RequireProgressBy healthT0+healthPD) with three
// allocations, stored at indexes 1..3.
type healthFixture struct {
	s      *StateStore
	job    *structs.Job
	d      *structs.Deployment
	allocs []*structs.Allocation
	index  uint64
}

func newHealthFixture(t *testing.T, pd time.Duration) *healthFixture {
	t.Helper()
	f := &healthFixture{s: NewStateStore()}
	f.job = mustJob(t, f.s, 1, testJob("web"))
	f.d = testDeployment(f.job)
	f.d.StatusDescription = structs.DeploymentStatusDescriptionRunning
	st := f.d.TaskGroups["web"]
	st.DesiredCanaries, st.DesiredTotal, st.ProgressDeadline = 0, 3, pd
	if pd > 0 {
		st.RequireProgressBy = healthT0.Add(pd)
	}
	require.NoError(t, f.s.UpsertDeployment(2, f.d))
	for i := 0; i < 3; i++ {
		a := testAlloc(f.job, "n")
		a.DeploymentID = f.d.ID
		f.allocs = append(f.allocs, a)
	}
	require.NoError(t, f.s.UpsertAllocs(3, f.allocs))
	f.index = 3
	return f
}

func (f *healthFixture) next() uint64 { f.index++; return f.index }

// client reports the health of alloc i at time at.
func (f *healthFixture) client(t *testing.T, i int, healthy bool, at time.Time) {
	t.Helper()
	h := healthy
	u := &structs.Allocation{ID: f.allocs[i].ID, ClientStatus: structs.AllocClientStatusRunning,
		DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: &h, Timestamp: at}}
	require.NoError(t, f.s.UpdateAllocsFromClient(f.next(), []*structs.Allocation{u}, at.UnixNano()))
}

// planStop stops alloc i through a plan carrying a stale copy of the
// deployment as it was created.
func (f *healthFixture) planStop(t *testing.T, i int, at time.Time) {
	t.Helper()
	stop := f.allocs[i].Copy()
	stop.DesiredStatus = structs.AllocDesiredStatusStop
	require.NoError(t, f.s.UpsertPlanResults(f.next(), &structs.ApplyPlanResultsRequest{
		Job: f.job, AllocsStopped: []*structs.Allocation{stop}, Deployment: f.d.Copy(), UpdatedAt: at.UnixNano(),
	}))
}

// planMark marks alloc i lost (stopped) or unknown (kept) through a plan,
// as the scheduler does for a down or disconnected node.
func (f *healthFixture) planMark(t *testing.T, i int, status string, at time.Time) {
	t.Helper()
	c := f.allocs[i].Copy()
	c.ClientStatus = status
	if status == structs.AllocClientStatusLost {
		c.DesiredStatus = structs.AllocDesiredStatusStop
	} else {
		c.DesiredStatus = structs.AllocDesiredStatusRun
	}
	require.NoError(t, f.s.UpsertPlanResults(f.next(), &structs.ApplyPlanResultsRequest{
		Job: f.job, AllocsStopped: []*structs.Allocation{c}, UpdatedAt: at.UnixNano(),
	}))
}

func (f *healthFixture) stored(t *testing.T) *structs.Deployment {
	t.Helper()
	d, err := f.s.DeploymentByID(nil, f.d.ID)
	require.NoError(t, err)
	return d
}

func TestDeploymentHealthAggregation(t *testing.T) {
	tests := []struct {
		name          string
		noDeadline    bool
		steps         func(t *testing.T, f *healthFixture)
		wantHealthy   int
		wantUnhealthy int
		wantProgress  time.Time // RequireProgressBy
		wantUntouched bool      // the deployment was not rewritten after setup
	}{
		{
			name:         "client reports healthy: counted, deadline pushed",
			steps:        func(t *testing.T, f *healthFixture) { f.client(t, 0, true, healthT1) },
			wantHealthy:  1,
			wantProgress: healthT1.Add(healthPD),
		},
		{
			name:          "client reports unhealthy: counted, deadline kept",
			steps:         func(t *testing.T, f *healthFixture) { f.client(t, 0, false, healthT1) },
			wantUnhealthy: 1,
			wantProgress:  healthT0.Add(healthPD),
		},
		{
			name: "client update without health leaves the deployment alone",
			steps: func(t *testing.T, f *healthFixture) {
				u := &structs.Allocation{ID: f.allocs[0].ID, ClientStatus: structs.AllocClientStatusRunning}
				require.NoError(t, f.s.UpdateAllocsFromClient(f.next(), []*structs.Allocation{u}, healthT1.UnixNano()))
			},
			wantProgress:  healthT0.Add(healthPD),
			wantUntouched: true,
		},
		{
			// A node's allocation failed after it was healthy and was
			// replaced there (a system job): counting both would complete
			// the deployment while another node runs the old version.
			name: "a healthy allocation replaced leaves the count; its replacement counts once healthy",
			steps: func(t *testing.T, f *healthFixture) {
				f.client(t, 0, true, healthT1)
				failed := &structs.Allocation{ID: f.allocs[0].ID, ClientStatus: structs.AllocClientStatusFailed}
				require.NoError(t, f.s.UpdateAllocsFromClient(f.next(), []*structs.Allocation{failed}, healthT1.UnixNano()))
				rep := testAlloc(f.job, "n")
				rep.DeploymentID, rep.PreviousAllocation = f.d.ID, f.allocs[0].ID
				require.NoError(t, f.s.UpsertPlanResults(f.next(), &structs.ApplyPlanResultsRequest{
					Job: f.job, AllocsUpdated: []*structs.Allocation{rep}, UpdatedAt: healthT1.UnixNano(),
				}))
				require.Equal(t, 0, f.stored(t).TaskGroups["web"].HealthyAllocs, "the replaced allocation still counts")
				f.allocs = append(f.allocs, rep)
				f.client(t, 3, true, healthT2)
			},
			wantHealthy:  1,
			wantProgress: healthT2.Add(healthPD),
		},
		{
			name: "repeated healthy report does not push again",
			steps: func(t *testing.T, f *healthFixture) {
				f.client(t, 0, true, healthT1)
				f.client(t, 0, true, healthT2)
			},
			wantHealthy:  1,
			wantProgress: healthT1.Add(healthPD),
		},
		{
			name: "each newly healthy alloc pushes",
			steps: func(t *testing.T, f *healthFixture) {
				f.client(t, 0, true, healthT1)
				f.client(t, 1, true, healthT2)
			},
			wantHealthy:  2,
			wantProgress: healthT2.Add(healthPD),
		},
		{
			name: "server-stopped alloc that never became healthy is not unhealthy",
			steps: func(t *testing.T, f *healthFixture) {
				f.planStop(t, 0, healthT1)
				f.client(t, 0, false, healthT2)
			},
			wantProgress: healthT0.Add(healthPD),
		},
		{
			name: "unhealthy alloc stopped by a plan stops counting",
			steps: func(t *testing.T, f *healthFixture) {
				f.client(t, 0, false, healthT1)
				f.planStop(t, 0, healthT2)
			},
			wantProgress: healthT0.Add(healthPD),
		},
		{
			name: "healthy alloc stopped by a plan still counts",
			steps: func(t *testing.T, f *healthFixture) {
				f.client(t, 0, true, healthT1)
				f.planStop(t, 0, healthT2)
			},
			wantHealthy:  1,
			wantProgress: healthT1.Add(healthPD),
		},
		{
			name: "healthy alloc marked lost (node down) stops counting",
			steps: func(t *testing.T, f *healthFixture) {
				f.client(t, 0, true, healthT1)
				f.client(t, 1, true, healthT1)
				f.planMark(t, 0, structs.AllocClientStatusLost, healthT2)
			},
			wantHealthy:  1,
			wantProgress: healthT1.Add(healthPD),
		},
		{
			name: "healthy alloc marked unknown (node disconnected) stops counting, counts again on reconnect",
			steps: func(t *testing.T, f *healthFixture) {
				f.client(t, 0, true, healthT1)
				f.client(t, 1, true, healthT1)
				f.planMark(t, 0, structs.AllocClientStatusUnknown, healthT2)
				require.Equal(t, 1, f.stored(t).TaskGroups["web"].HealthyAllocs, "while disconnected")
				f.client(t, 0, true, healthT2) // reconnected: running and healthy again
			},
			wantHealthy:  2,
			wantProgress: healthT2.Add(healthPD), // counting again is progress
		},
		{
			name: "stale plan deployment overwrites neither counts nor deadline",
			steps: func(t *testing.T, f *healthFixture) {
				f.client(t, 0, true, healthT1)
				f.client(t, 1, false, healthT1)
				stale := f.d.Copy() // HealthyAllocs 0, RequireProgressBy T0+PD
				stale.TaskGroups["web"].PlacedAllocs = 3
				require.NoError(t, f.s.UpsertPlanResults(f.next(), &structs.ApplyPlanResultsRequest{
					Job: f.job, Deployment: stale, UpdatedAt: healthT2.UnixNano(),
				}))
				require.Equal(t, 3, f.stored(t).TaskGroups["web"].PlacedAllocs, "the plan's own fields apply")
			},
			wantHealthy:   1,
			wantUnhealthy: 1,
			wantProgress:  healthT1.Add(healthPD),
		},
		{
			name: "manual health recounts and pushes",
			steps: func(t *testing.T, f *healthFixture) {
				require.NoError(t, f.s.UpdateDeploymentAllocHealth(f.next(), &structs.DeploymentAllocHealthRequest{
					DeploymentID: f.d.ID, HealthyAllocationIDs: []string{f.allocs[2].ID}, Timestamp: healthT2.UnixNano(),
				}))
			},
			wantHealthy:  1,
			wantProgress: healthT2.Add(healthPD),
		},
		{
			name: "terminal deployment keeps the counts it ended with",
			steps: func(t *testing.T, f *healthFixture) {
				require.NoError(t, f.s.UpdateDeploymentStatus(f.next(), &structs.DeploymentStatusUpdate{
					DeploymentID: f.d.ID, Status: structs.DeploymentStatusFailed,
				}, healthT1.UnixNano()))
				f.client(t, 0, true, healthT2)
			},
			wantProgress: healthT0.Add(healthPD),
		},
		{
			name:        "no progress deadline: none is set",
			noDeadline:  true,
			steps:       func(t *testing.T, f *healthFixture) { f.client(t, 0, true, healthT1) },
			wantHealthy: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pd := healthPD
			if tc.noDeadline {
				pd = 0
			}
			f := newHealthFixture(t, pd)
			before := f.stored(t)
			tc.steps(t, f)
			got := f.stored(t)
			st := got.TaskGroups["web"]
			require.Equal(t, tc.wantHealthy, st.HealthyAllocs, "HealthyAllocs")
			require.Equal(t, tc.wantUnhealthy, st.UnhealthyAllocs, "UnhealthyAllocs")
			require.True(t, tc.wantProgress.Equal(st.RequireProgressBy), "RequireProgressBy: got %v, want %v", st.RequireProgressBy, tc.wantProgress)
			if tc.wantUntouched {
				require.Equal(t, before.ModifyIndex, got.ModifyIndex, "deployment rewritten")
			}
		})
	}
}

func TestPlanCannotUndoDeploymentState(t *testing.T) {
	t.Run("terminal or paused status is kept", func(t *testing.T) {
		for _, status := range []string{structs.DeploymentStatusFailed, structs.DeploymentStatusPaused} {
			f := newHealthFixture(t, healthPD)
			require.NoError(t, f.s.UpdateDeploymentStatus(f.next(), &structs.DeploymentStatusUpdate{
				DeploymentID: f.d.ID, Status: status, StatusDescription: "x",
			}, healthT1.UnixNano()))
			require.NoError(t, f.s.UpsertPlanResults(f.next(), &structs.ApplyPlanResultsRequest{
				Job: f.job, Deployment: f.d.Copy(), UpdatedAt: healthT2.UnixNano(),
			}))
			got := f.stored(t)
			require.Equal(t, status, got.Status)
			require.Equal(t, "x", got.StatusDescription)
		}
	})
	t.Run("running status may change", func(t *testing.T) {
		f := newHealthFixture(t, healthPD)
		done := f.d.Copy()
		done.Status, done.StatusDescription = structs.DeploymentStatusSuccessful, structs.DeploymentStatusDescriptionSuccessful
		require.NoError(t, f.s.UpsertPlanResults(f.next(), &structs.ApplyPlanResultsRequest{Job: f.job, Deployment: done, UpdatedAt: 1}))
		require.Equal(t, structs.DeploymentStatusSuccessful, f.stored(t).Status)
	})
	t.Run("promotion is one-way and dropped groups are kept", func(t *testing.T) {
		f := newHealthFixture(t, healthPD)
		withCanary := f.d.Copy()
		withCanary.TaskGroups["web"].DesiredCanaries = 1
		withCanary.TaskGroups["api"] = &structs.DeploymentState{DesiredTotal: 1}
		require.NoError(t, f.s.UpsertDeployment(f.next(), withCanary))
		require.NoError(t, f.s.UpdateDeploymentPromotion(f.next(), &structs.DeploymentPromoteRequest{
			DeploymentID: f.d.ID, All: true, UpdatedAt: healthT1.UnixNano(),
		}))
		stale := withCanary.Copy()
		delete(stale.TaskGroups, "api")
		stale.StatusDescription = structs.DeploymentStatusDescriptionRunningNeedsPromotion
		require.NoError(t, f.s.UpsertPlanResults(f.next(), &structs.ApplyPlanResultsRequest{Job: f.job, Deployment: stale, UpdatedAt: 1}))
		got := f.stored(t)
		require.True(t, got.TaskGroups["web"].Promoted)
		require.Contains(t, got.TaskGroups, "api")
		require.Equal(t, structs.DeploymentStatusDescriptionRunning, got.StatusDescription)
	})
	t.Run("status updates of terminal deployments are skipped", func(t *testing.T) {
		f := newHealthFixture(t, healthPD)
		require.NoError(t, f.s.UpdateDeploymentStatus(f.next(), &structs.DeploymentStatusUpdate{
			DeploymentID: f.d.ID, Status: structs.DeploymentStatusFailed, StatusDescription: structs.DeploymentStatusDescriptionProgressDeadline,
		}, 1))
		require.NoError(t, f.s.UpsertPlanResults(f.next(), &structs.ApplyPlanResultsRequest{
			Job: f.job, UpdatedAt: 1, DeploymentUpdates: []*structs.DeploymentStatusUpdate{{
				DeploymentID: f.d.ID, Status: structs.DeploymentStatusCancelled, StatusDescription: structs.DeploymentStatusDescriptionNewerJob,
			}},
		}))
		require.Equal(t, structs.DeploymentStatusDescriptionProgressDeadline, f.stored(t).StatusDescription)
	})
}

func TestDeploymentStatusTransitions(t *testing.T) {
	update := func(f *healthFixture, status string, at time.Time) error {
		return f.s.UpdateDeploymentStatus(f.next(), &structs.DeploymentStatusUpdate{DeploymentID: f.d.ID, Status: status}, at.UnixNano())
	}
	t.Run("resume restarts the progress deadline", func(t *testing.T) {
		f := newHealthFixture(t, healthPD)
		require.NoError(t, update(f, structs.DeploymentStatusPaused, healthT1))
		require.True(t, healthT0.Add(healthPD).Equal(f.stored(t).TaskGroups["web"].RequireProgressBy), "pause keeps it")
		resumeAt := healthT0.Add(time.Hour)
		require.NoError(t, update(f, structs.DeploymentStatusRunning, resumeAt))
		require.True(t, resumeAt.Add(healthPD).Equal(f.stored(t).TaskGroups["web"].RequireProgressBy))
	})
	t.Run("promotion restarts the promoted groups' deadlines", func(t *testing.T) {
		f := newHealthFixture(t, healthPD)
		d := f.d.Copy()
		d.TaskGroups["web"].DesiredCanaries = 1
		d.TaskGroups["api"] = &structs.DeploymentState{DesiredTotal: 1, ProgressDeadline: healthPD, RequireProgressBy: healthT0}
		require.NoError(t, f.s.UpsertDeployment(f.next(), d))
		require.NoError(t, f.s.UpdateDeploymentPromotion(f.next(), &structs.DeploymentPromoteRequest{
			DeploymentID: f.d.ID, All: true, UpdatedAt: healthT2.UnixNano(),
		}))
		got := f.stored(t)
		require.True(t, healthT2.Add(healthPD).Equal(got.TaskGroups["web"].RequireProgressBy))
		require.True(t, healthT0.Equal(got.TaskGroups["api"].RequireProgressBy), "a group without canaries is not promoted")
	})
	t.Run("terminal deployments are final", func(t *testing.T) {
		f := newHealthFixture(t, healthPD)
		require.NoError(t, update(f, structs.DeploymentStatusCancelled, healthT1))
		last := f.s.LatestIndex()
		err := update(f, structs.DeploymentStatusFailed, healthT2)
		require.True(t, errors.Is(err, ErrConflict), "got %v", err)
		require.Equal(t, last, f.s.LatestIndex(), "nothing written")
		require.Equal(t, structs.DeploymentStatusCancelled, f.stored(t).Status)
	})
}
