package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nodesim"
)

// wavesJob is version's spec of system job "waves": a mock task on every
// node, update { max_parallel = 1 } overridden by drover.max_parallel =
// "10%", min_healthy_time 500ms, and drover.partition when partition ≥ 0.
func wavesJob(version string, partition int) *api.Job {
	job := api.NewSystemJob("waves", "waves", "global", 50)
	job.Datacenters = []string{"dc1"}
	task := api.NewTask("app", "mock").SetConfig("run_for", "0s")
	task.Env = map[string]string{"VERSION": version}
	task.Resources = &api.Resources{CPU: new(10), MemoryMB: new(16)}
	tg := api.NewTaskGroup("app", 1).AddTask(task)
	tg.Meta = map[string]string{"drover.max_parallel": "10%"}
	if partition >= 0 {
		tg.Meta["drover.partition"] = fmt.Sprint(partition)
	}
	tg.Update = &api.UpdateStrategy{
		MaxParallel: new(1), HealthCheck: new("task_states"), MinHealthyTime: new(500 * time.Millisecond),
		HealthyDeadline: new(time.Minute), ProgressDeadline: new(2 * time.Minute), AutoRevert: new(false),
	}
	job.AddTaskGroup(tg)
	return job
}

// TestRolloutWavesPercentAndPartition rolls a system job over 20 simulated
// nodes (nodesim) in waves of drover.max_parallel = "10%": never more than
// 2 replacements are unhealthy at once although update { max_parallel } is
// 1; then drover.partition = 5 leaves the last 5 nodes by ID on the old
// version with the deployment successful and saying so; then lowering the
// partition to 0 (a new version) updates the 15 nodes in place and
// replaces the 5 held ones in waves of 2, finishing the rollout.
func TestRolloutWavesPercentAndPartition(t *testing.T) {
	const nodes = 20
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(t, srv)
	c := srv.client(t)
	sim, err := nodesim.New(nodesim.Config{Servers: []string{srv.httpAddr()}, Nodes: nodes, Logger: hclog.NewNullLogger()})
	require.NoError(t, err)
	simCtx, stopSim := context.WithCancel(context.Background())
	simDone := make(chan struct{})
	go func() { defer close(simDone); _ = sim.Run(simCtx) }()
	t.Cleanup(func() { stopSim(); <-simDone })
	wctx, wcancel := context.WithTimeout(simCtx, time.Minute)
	require.NoError(t, sim.WaitRegistered(wctx))
	wcancel()

	register := func(job *api.Job, version uint64) *api.Deployment {
		t.Helper()
		_, _, err := c.Jobs().Register(job, nil)
		require.NoError(t, err)
		var d *api.Deployment
		require.Eventually(t, func() bool {
			d, _, err = c.Jobs().LatestDeployment("waves", nil)
			require.NoError(t, err)
			if d != nil && d.JobVersion == version {
				require.NotContains(t, []string{"failed", "cancelled"}, d.Status, d.StatusDescription)
			}
			return d != nil && d.JobVersion == version && d.Status == "successful"
		}, 30*time.Second, 100*time.Millisecond, "deployment of version %d (last %+v)", version, d)
		return d
	}
	live := func() map[string]*api.AllocationListStub { // by node
		stubs, _, err := c.Jobs().Allocations("waves", false, nil)
		require.NoError(t, err)
		out := map[string]*api.AllocationListStub{}
		for _, s := range stubs {
			if s.DesiredStatus == "run" {
				out[s.NodeID] = s
			}
		}
		return out
	}
	// maxUpdating is the most allocations of version, created after
	// since, that were between their creation and their health at once.
	maxUpdating := func(version uint64, since time.Time) (most, replaced int) {
		type edge struct {
			at    int64
			delta int
		}
		var edges []edge
		for _, s := range live() {
			if s.JobVersion != version || s.CreateTime < since.UnixNano() {
				continue
			}
			require.NotNil(t, s.DeploymentStatus, s.ID)
			edges = append(edges, edge{s.CreateTime, 1}, edge{s.DeploymentStatus.Timestamp.UnixNano(), -1})
			replaced++
		}
		slices.SortFunc(edges, func(a, b edge) int {
			if a.at != b.at {
				return int(a.at - b.at)
			}
			return a.delta - b.delta // a health report frees its slot before a creation at the same instant
		})
		cur := 0
		for _, e := range edges {
			cur += e.delta
			most = max(most, cur)
		}
		return most, replaced
	}

	// A bad value is refused at registration (400) naming the key.
	bad := wavesJob("0", -1)
	bad.TaskGroups[0].Meta["drover.max_parallel"] = "ten percent"
	_, _, err = c.Jobs().Register(bad, nil)
	require.ErrorContains(t, err, `meta "drover.max_parallel": must be a whole number of nodes or a percentage`)
	require.ErrorContains(t, err, "400")
	bad = wavesJob("0", -1)
	bad.TaskGroups[0].Meta["drover.partition"] = "25%"
	_, _, err = c.Jobs().Register(bad, nil)
	require.ErrorContains(t, err, `meta "drover.partition": must be a whole number of nodes`)

	// Version 0 everywhere, then version 1 in waves of 10% of 20 = 2.
	register(wavesJob("0", -1), 0)
	start := time.Now()
	register(wavesJob("1", -1), 1)
	most, replaced := maxUpdating(1, start)
	require.Equal(t, nodes, replaced)
	require.Equal(t, 2, most, "waves of 10%% of %d nodes: 2 at once, not update { max_parallel = 1 } nor more", nodes)

	// Version 2 with drover.partition = 5: 15 nodes updated, the last 5
	// by node ID stay on version 1, and the deployment succeeds.
	start = time.Now()
	d := register(wavesJob("2", 5), 2)
	require.Equal(t, `Deployment completed successfully; drover.partition keeps nodes on older versions (app: 5)`, d.StatusDescription)
	require.Equal(t, nodes-5, d.TaskGroups["app"].DesiredTotal)
	byNode := live()
	ids := make([]string, 0, len(byNode))
	for id := range byNode {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	require.Len(t, ids, nodes)
	var held []string
	for i, id := range ids {
		want := uint64(2)
		if i >= nodes-5 {
			want = 1
			held = append(held, id)
		}
		require.Equal(t, want, byNode[id].JobVersion, "node %d of %d (%s)", i, nodes, id)
	}
	most, _ = maxUpdating(2, start)
	require.LessOrEqual(t, most, 2)

	// Re-registering changes nothing while the partition holds: no new
	// version, no node moves.
	_, _, err = c.Jobs().Register(wavesJob("2", 5), nil)
	require.NoError(t, err)
	job, _, err := c.Jobs().Info("waves", nil)
	require.NoError(t, err)
	require.Equal(t, uint64(2), *job.Version)

	// Lowering the partition to 0 is version 3: the 15 nodes on version 2
	// move in place (same allocations), the 5 held ones are replaced in
	// waves of at most 2.
	start = time.Now()
	d = register(wavesJob("2", 0), 3)
	require.Equal(t, "Deployment completed successfully", d.StatusDescription)
	after := live()
	for _, id := range ids {
		require.Equal(t, uint64(3), after[id].JobVersion, id)
		if !slices.Contains(held, id) {
			require.Equal(t, byNode[id].ID, after[id].ID, "node %s was on version 2: updated in place", id)
		} else {
			require.NotEqual(t, byNode[id].ID, after[id].ID, "node %s was held: replaced", id)
		}
	}
	most, replaced = maxUpdating(3, start)
	require.Equal(t, 5, replaced, "only the held nodes are replaced")
	require.LessOrEqual(t, most, 2)
}
