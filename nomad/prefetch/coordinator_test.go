package prefetch

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/mock"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// TestCoordinator_GrantsReportsAndWithdraws drives the coordinator over a
// real state store: a rollout of v0 → v1 on three nodes with
// prefetch_parallel 2 grants two nodes, a report frees a slot for the
// third, and failing the deployment withdraws every directive.
func TestCoordinator_GrantsReportsAndWithdraws(t *testing.T) {
	st := state.NewStateStore()
	job := mock.Job("web")
	require.NoError(t, st.UpsertJob(10, nil, job))
	v0, err := st.Snapshot().JobByID(nil, job.Namespace, job.ID)
	require.NoError(t, err)
	var nodes []string
	var allocs []*structs.Allocation
	for i := 0; i < 3; i++ {
		n := mock.Node()
		n.ID = nodeID(i)
		require.NoError(t, st.UpsertNode(uint64(11+i), n))
		nodes = append(nodes, n.ID)
		a := mock.Alloc(v0, n.ID)
		a.ClientStatus = structs.AllocClientStatusRunning
		allocs = append(allocs, a)
	}
	require.NoError(t, st.UpsertAllocs(20, allocs))
	v1 := job.Copy()
	v1.TaskGroups = []*structs.TaskGroup{{Name: "web", Count: 1, Update: &structs.UpdateStrategy{MaxParallel: 1},
		Tasks: []*structs.Task{{Name: "server", Driver: "docker", Config: map[string]any{"image": "nginx:2", "prefetch_parallel": 2}}}}}
	require.NoError(t, st.UpsertJob(30, nil, v1))
	dep := mock.Deployment(v1)
	dep.JobVersion = 1
	require.NoError(t, st.UpsertDeployment(31, dep))

	c := NewCoordinator(st, nil, time.Now, time.Minute)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	defer func() { cancel(); <-done }()

	type directives struct {
		Directives []*structs.PrefetchDirective
		Index      uint64
	}
	get := func(node string, min uint64) *directives {
		dirs, idx := c.Directives(t.Context(), node, min, 2*time.Second)
		return &directives{Directives: dirs, Index: idx}
	}
	var first *directives
	require.Eventually(t, func() bool { first = get(nodes[0], 0); return len(first.Directives) == 1 }, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, "nginx:2", first.Directives[0].Tasks[0].Image)
	require.Equal(t, structs.PrefetchStatePulling, first.Directives[0].State)
	require.Len(t, get(nodes[1], 0).Directives, 1)
	third := get(nodes[2], 0)
	require.Empty(t, third.Directives, "prefetch_parallel 2: the third node waits")

	// A blocked query for the third node wakes when node 0 reports done.
	woke := make(chan *directives, 1)
	go func() { woke <- get(nodes[2], third.Index) }()
	c.Report(nodes[0], []*structs.PrefetchReport{{DeploymentID: dep.ID, State: structs.PrefetchStateDone}})
	select {
	case got := <-woke:
		require.Len(t, got.Directives, 1)
		require.NotEqual(t, third.Index, got.Index)
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting node was not granted after a slot freed")
	}
	require.Eventually(t, func() bool {
		d := get(nodes[0], 0).Directives
		return len(d) == 1 && d[0].State == structs.PrefetchStateDone
	}, 5*time.Second, 10*time.Millisecond, "a done node stays listed (its lease)")
	require.Equal(t, Stats{Started: 3, Finished: 1}, c.Stats())

	// Failing the deployment withdraws every directive.
	require.NoError(t, st.UpdateDeploymentStatus(40, &structs.DeploymentStatusUpdate{DeploymentID: dep.ID,
		Status: structs.DeploymentStatusFailed, StatusDescription: structs.DeploymentStatusDescriptionFailedByUser}, time.Now().UnixNano()))
	require.Eventually(t, func() bool {
		for _, n := range nodes {
			if len(get(n, 0).Directives) > 0 {
				return false
			}
		}
		return true
	}, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, Stats{Started: 3, Finished: 1, Cancelled: 2}, c.Stats())
}
