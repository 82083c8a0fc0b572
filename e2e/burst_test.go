package e2e

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// burstJob is version v of a raw_exec system job whose update block rolls
// every node in one wave, so the newest version settles quickly.
func burstJob(v int) *api.Job {
	job := api.NewSystemJob("burst", "burst", "global", 50)
	job.Datacenters = []string{"dc1"}
	job.Update = &api.UpdateStrategy{
		MaxParallel:      new(3),
		HealthCheck:      new("task_states"),
		MinHealthyTime:   new(500 * time.Millisecond),
		HealthyDeadline:  new(30 * time.Second),
		ProgressDeadline: new(2 * time.Minute),
	}
	task := api.NewTask("server", "raw_exec").SetConfig("command", "/bin/sleep").SetConfig("args", []string{"3600"})
	task.Env = map[string]string{"VERSION": fmt.Sprint(v)}
	task.Resources = &api.Resources{CPU: new(20), MemoryMB: new(16)}
	task.KillTimeout = new(time.Second)
	job.AddTaskGroup(api.NewTaskGroup("web", 1).AddTask(task))
	return job
}

// TestBurstOfJobVersionsConverges registers 200 versions of a system job back
// to back, as a CI pipeline might, and checks that the cluster converges on
// the newest one: no allocation left pending, the pending evaluations
// coalesced (cancelled in favour of the newest), and roughly one allocation
// per node per evaluation actually scheduled.
func TestBurstOfJobVersionsConverges(t *testing.T) {
	const versions, nodes = 200, 3
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(t, srv)
	c := srv.client(t)
	for i := 1; i <= nodes; i++ {
		newClientAgent(t, fmt.Sprintf("client-%d", i), srv.httpHostPort())
	}
	waitReadyNodes(t, c, nodes)

	start := time.Now()
	var last *api.JobRegisterResponse
	for v := 0; v < versions; v++ {
		resp, _, err := c.Jobs().Register(burstJob(v), nil)
		require.NoError(t, err)
		last = resp
	}
	lastRegistered := time.Now()
	t.Logf("%d registrations took %s", versions, lastRegistered.Sub(start).Round(time.Millisecond))
	job, _, err := c.Jobs().Info("burst", nil)
	require.NoError(t, err)
	newest := *job.Version
	require.EqualValues(t, versions-1, newest)

	// Converged: every node runs the newest version, and every other
	// allocation is terminal on the client (none left pending).
	var allocs []*api.AllocationListStub
	converged := func() bool {
		list, _, err := c.Jobs().Allocations("burst", true, nil)
		if err != nil {
			return false
		}
		allocs = list
		running := 0
		for _, a := range allocs {
			switch {
			case a.JobVersion == newest && a.DesiredStatus == "run" && a.ClientStatus == "running":
				running++
			case a.ClientStatus == "complete" || a.ClientStatus == "failed" || a.ClientStatus == "lost":
			default:
				return false
			}
		}
		return running == nodes
	}
	if !assert.Eventually(t, converged, 60*time.Second, 100*time.Millisecond) {
		t.Fatalf("the burst never converged:\n%s", describeAllocs(allocs))
	}
	t.Logf("converged %s after the last registration (its eval: %s)", time.Since(lastRegistered).Round(time.Millisecond), last.EvalID)

	// Coalescing: most evaluations were cancelled, never scheduled.
	evals, _, err := c.Jobs().Evaluations("burst", nil)
	require.NoError(t, err)
	statuses := map[string]int{}
	for _, e := range evals {
		statuses[e.Status]++
		if e.Status == "canceled" {
			require.Equal(t, "canceled after more recent eval was processed", e.StatusDescription)
		}
	}
	scheduled := statuses["complete"] + statuses["failed"]
	if os.Getenv("BURST_DEBUG") != "" {
		sort.Slice(evals, func(i, j int) bool { return evals[i].CreateIndex < evals[j].CreateIndex })
		for _, e := range evals {
			t.Logf("%s ci=%d mi=%d create=%d modify=%d wait=%.1fms %s", e.Status, e.CreateIndex, e.ModifyIndex, e.CreateTime/1e6%100000, e.ModifyTime/1e6%100000, float64(e.ModifyTime-e.CreateTime)/1e6, e.TriggeredBy)
		}
	}
	t.Logf("evaluations: %v; allocations created: %d", statuses, len(allocs))
	require.GreaterOrEqual(t, len(evals), versions, "every registration made an evaluation")
	require.Zero(t, statuses["pending"], "no evaluation left pending")
	require.LessOrEqual(t, scheduled, versions/4, "a burst of %d versions scheduled %d evaluations", versions, scheduled)
	require.Greater(t, statuses["canceled"], versions/2)
	require.LessOrEqual(t, len(allocs), nodes*(scheduled+1), "allocations stay near one per node per scheduled evaluation")

	// The job's status shows no allocation starting.
	code, out := drover(t, srv.httpAddr(), "job", "status", "burst")
	require.Equal(t, 0, code, out)
	summary, _, err := c.Jobs().Summary("burst", nil)
	require.NoError(t, err)
	require.Zero(t, summary.Summary["web"].Starting, "job summary counts no starting allocation:\n%s", out)
	require.Equal(t, nodes, summary.Summary["web"].Running, out)
}

func describeAllocs(allocs []*api.AllocationListStub) string {
	var b strings.Builder
	counts := map[string]int{}
	for _, a := range allocs {
		counts[fmt.Sprintf("v%d desired=%s client=%s", a.JobVersion, a.DesiredStatus, a.ClientStatus)]++
	}
	for k, n := range counts {
		fmt.Fprintf(&b, "%4d × %s\n", n, k)
	}
	return b.String()
}
