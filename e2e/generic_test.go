package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// genericServiceJob is a raw_exec service job of count allocations; env
// distinguishes versions (a destructive change).
func genericServiceJob(id string, count int, version string) *api.Job {
	job := api.NewServiceJob(id, id, "global", 50)
	job.Datacenters = []string{"dc1"}
	task := api.NewTask("server", "raw_exec").SetConfig("command", "/bin/sleep").SetConfig("args", []string{"3600"})
	task.Resources = &api.Resources{CPU: new(50), MemoryMB: new(32)}
	task.Env = map[string]string{"VERSION": version}
	tg := api.NewTaskGroup("web", count).AddTask(task)
	tg.Update = &api.UpdateStrategy{MaxParallel: new(1), Canary: new(1), HealthCheck: new("task_states"),
		MinHealthyTime: new(time.Second), HealthyDeadline: new(30 * time.Second), ProgressDeadline: new(time.Minute)}
	job.AddTaskGroup(tg)
	return job
}

// liveAllocs returns the job's allocations the server wants running.
func liveAllocs(t testing.TB, c *api.Client, jobID string) []*api.AllocationListStub {
	t.Helper()
	allocs, _, err := c.Jobs().Allocations(jobID, false, nil)
	require.NoError(t, err)
	var out []*api.AllocationListStub
	for _, a := range allocs {
		if a.DesiredStatus == "run" && a.ClientStatus != "complete" && a.ClientStatus != "failed" && a.ClientStatus != "lost" {
			out = append(out, a)
		}
	}
	return out
}

func waitDeploymentStatus(t testing.TB, c *api.Client, jobID, status string) *api.Deployment {
	t.Helper()
	var d *api.Deployment
	require.Eventually(t, func() bool {
		var err error
		d, _, err = c.Jobs().LatestDeployment(jobID, nil)
		return err == nil && d != nil && d.Status == status
	}, 60*time.Second, 200*time.Millisecond, "deployment of %s never %s", jobID, status)
	return d
}

// TestGenericJobsEndToEnd runs service and batch jobs on four raw_exec
// clients: a service of 3 spreads over 3 nodes; a canary runs beside the
// old allocations, is promoted and the rest roll; a killed node's
// allocations are replaced elsewhere; a batch job runs once and completes.
func TestGenericJobsEndToEnd(t *testing.T) {
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1,
		extra: `min_heartbeat_ttl = "2s"
  heartbeat_grace = "1s"`})
	waitLeader(t, srv)
	c := srv.client(t)
	clients := map[string]*agentProc{}
	for i := 1; i <= 4; i++ {
		p := newClientAgent(t, fmt.Sprintf("client-%d", i), srv.httpHostPort())
		clients[p.name] = p
	}
	waitReadyNodes(t, c, 4)

	// A service job of 3 runs on 3 different nodes.
	_, _, err := c.Jobs().Register(genericServiceJob("svc", 3, "1"), nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(runningAllocs(t, c, "svc")) == 3 }, 60*time.Second, 200*time.Millisecond,
		"three running allocations on three distinct nodes")
	waitDeploymentStatus(t, c, "svc", "successful")

	// A destructive change: one canary runs beside the three old ones.
	_, _, err = c.Jobs().Register(genericServiceJob("svc", 3, "2"), nil)
	require.NoError(t, err)
	var d *api.Deployment
	require.Eventually(t, func() bool {
		d, _, err = c.Jobs().LatestDeployment("svc", nil)
		if err != nil || d == nil || d.JobVersion != 1 {
			return false
		}
		st := d.TaskGroups["web"]
		return st != nil && st.HealthyAllocs == 1 && len(st.PlacedCanaries) == 1
	}, 60*time.Second, 200*time.Millisecond)
	require.Equal(t, "Deployment is running but requires manual promotion", d.StatusDescription)
	byVersion := map[uint64]int{}
	for _, a := range liveAllocs(t, c, "svc") {
		byVersion[a.JobVersion]++
	}
	require.Equal(t, map[uint64]int{0: 3, 1: 1}, byVersion, "the canary is extra, the old ones keep running")

	// Promotion stops the old ones as the rest roll.
	_, _, err = c.Deployments().PromoteAll(d.ID, nil)
	require.NoError(t, err)
	waitDeploymentStatus(t, c, "svc", "successful")
	require.Eventually(t, func() bool {
		live := liveAllocs(t, c, "svc")
		for _, a := range live {
			if a.JobVersion != 1 {
				return false
			}
		}
		return len(live) == 3
	}, 30*time.Second, 200*time.Millisecond, "three allocations of version 1 once promoted")

	// A node killed mid-run: its allocation is replaced on another node.
	running := runningAllocs(t, c, "svc")
	var victim *agentProc
	for name, p := range clients {
		if running[nodeIDOf(t, c, name)] != nil {
			victim = p
			break
		}
	}
	require.NotNil(t, victim)
	victimID := nodeIDOf(t, c, victim.name)
	victim.kill()
	require.Eventually(t, func() bool {
		r := runningAllocs(t, c, "svc")
		return len(r) == 3 && r[victimID] == nil
	}, 60*time.Second, 200*time.Millisecond, "the lost allocation is replaced elsewhere")

	// A batch job runs once and completes; it is not run again.
	batch := api.NewBatchJob("once", "once", "global", 50)
	batch.Datacenters = []string{"dc1"}
	batch.AddTaskGroup(api.NewTaskGroup("g", 1).AddTask(
		api.NewTask("run", "raw_exec").SetConfig("command", "/bin/sh").SetConfig("args", []string{"-c", "echo done"})))
	_, _, err = c.Jobs().Register(batch, nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		allocs, _, err := c.Jobs().Allocations("once", true, nil)
		return err == nil && len(allocs) == 1 && allocs[0].ClientStatus == "complete"
	}, 60*time.Second, 200*time.Millisecond)
	resp, _, err := c.Jobs().ForceEvaluate("once", nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		e, _, err := c.Evaluations().Info(resp, nil)
		return err == nil && e.Status == "complete"
	}, 20*time.Second, 100*time.Millisecond)
	allocs, _, err := c.Jobs().Allocations("once", true, nil)
	require.NoError(t, err)
	require.Len(t, allocs, 1, "a completed batch allocation is not run again")
}
