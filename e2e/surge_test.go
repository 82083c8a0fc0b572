package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// surgeJob is system job id at version's spec: a raw_exec task on every
// node, waves of one node, health by task states after 1s, auto_revert,
// and drover.surge when surge is set. failing makes the task exit 1 (and
// the allocation fail: no restarts).
func surgeJob(id, version string, surge, failing bool) *api.Job {
	job := api.NewSystemJob(id, id, "global", 50)
	job.Datacenters = []string{"dc1"}
	script := "echo version " + version + "; exec sleep 3600"
	if failing {
		script = "echo version " + version + "; exit 1"
	}
	task := api.NewTask("server", "raw_exec").
		SetConfig("command", "/bin/sh").SetConfig("args", []string{"-c", script})
	task.Resources = &api.Resources{CPU: new(20), MemoryMB: new(16)}
	task.KillTimeout = new(2 * time.Second)
	tg := api.NewTaskGroup("web", 1).AddTask(task)
	tg.RestartPolicy = &api.RestartPolicy{Attempts: new(0), Interval: new(time.Minute), Delay: new(time.Second), Mode: new("fail")}
	tg.Update = &api.UpdateStrategy{
		MaxParallel: new(1), HealthCheck: new("task_states"), MinHealthyTime: new(time.Second),
		HealthyDeadline: new(20 * time.Second), ProgressDeadline: new(time.Minute), AutoRevert: new(true),
	}
	if surge {
		tg.Meta = map[string]string{"drover.surge": "true"}
	}
	job.AddTaskGroup(tg)
	return job
}

// coverage is, per node, the time within [from, until] when no allocation
// of the job had its task running, by the allocations' task states
// (StartedAt to FinishedAt, or until when still running), and how long
// two allocations ran at once.
type coverage struct {
	gap, overlap time.Duration
}

// nodeCoverage reads every allocation of job (terminal ones included) and
// measures each node from its first task start to until.
func nodeCoverage(t testing.TB, c *api.Client, job string, until time.Time) map[string]coverage {
	t.Helper()
	stubs, _, err := c.Jobs().Allocations(job, true, nil)
	require.NoError(t, err)
	type span struct{ from, to time.Time }
	spans := map[string][]span{}
	for _, s := range stubs {
		a, _, err := c.Allocations().Info(s.ID, nil)
		require.NoError(t, err)
		ts := a.TaskStates["server"]
		if ts == nil || ts.StartedAt.IsZero() {
			continue // never started
		}
		to := ts.FinishedAt
		if to.IsZero() || to.After(until) {
			to = until
		}
		spans[a.NodeID] = append(spans[a.NodeID], span{ts.StartedAt, to})
	}
	out := map[string]coverage{}
	for node, ss := range spans {
		slices.SortFunc(ss, func(a, b span) int { return a.from.Compare(b.from) })
		var cov coverage
		end := ss[0].to
		for _, s := range ss[1:] {
			if s.from.After(end) {
				cov.gap += s.from.Sub(end)
			} else {
				stop := end
				if s.to.Before(stop) {
					stop = s.to
				}
				cov.overlap += stop.Sub(s.from)
			}
			if s.to.After(end) {
				end = s.to
			}
		}
		if until.After(end) {
			cov.gap += until.Sub(end)
		}
		out[node] = cov
	}
	return out
}

// liveOf returns the job's allocations the server wants running, by ID.
func liveOf(t testing.TB, c *api.Client, job string) map[string]*api.AllocationListStub {
	t.Helper()
	stubs, _, err := c.Jobs().Allocations(job, false, nil)
	require.NoError(t, err)
	out := map[string]*api.AllocationListStub{}
	for _, s := range stubs {
		if s.DesiredStatus == "run" && s.ClientStatus != "complete" && s.ClientStatus != "failed" && s.ClientStatus != "lost" {
			out[s.ID] = s
		}
	}
	return out
}

// waitSettled waits until job runs exactly one allocation per node, all of
// version, and every stopped allocation's client has finished it.
func waitSettled(t testing.TB, c *api.Client, job string, version uint64, nodes int) {
	t.Helper()
	require.Eventually(t, func() bool {
		stubs, _, err := c.Jobs().Allocations(job, true, nil)
		require.NoError(t, err)
		running := 0
		for _, s := range stubs {
			switch {
			case s.DesiredStatus == "run" && s.ClientStatus == "running" && s.JobVersion == version:
				running++
			case s.ClientStatus == "running" || s.ClientStatus == "pending":
				return false // an old one still runs, or a new one starts
			}
		}
		return running == nodes
	}, 60*time.Second, 200*time.Millisecond, "%s never settled on version %d", job, version)
}

// TestSystemSurgeRollout: three raw_exec clients. drover.surge is refused
// with a static port or a host volume, naming the key and what collides. A
// surge rollout of a port-less service starts each new allocation beside
// the old one, and no node is ever without a running allocation of the job
// (measured from task states); a failing new version leaves the old
// allocation running and auto_revert restores it. The same rollout without
// surge, for comparison, leaves every node without the job for a while.
func TestSystemSurgeRollout(t *testing.T) {
	const nodes = 3
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(t, srv)
	c := srv.client(t)
	for i := 1; i <= nodes; i++ {
		newClientAgent(t, fmt.Sprintf("surge-%d", i), srv.httpHostPort())
	}
	waitReadyNodes(t, c, nodes)
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, job := range []string{"surge", "plain"} {
			stubs, _, _ := c.Jobs().Allocations(job, true, nil)
			for _, s := range stubs {
				h := "-"
				if s.DeploymentStatus != nil && s.DeploymentStatus.Healthy != nil {
					h = fmt.Sprint(*s.DeploymentStatus.Healthy)
				}
				t.Logf("%s alloc %s node %s v%d desired %s client %s healthy %s", job, s.ID[:8], s.NodeID[:8], s.JobVersion, s.DesiredStatus, s.ClientStatus, h)
			}
			ds, _, _ := c.Jobs().Deployments(job, true, nil)
			for _, d := range ds {
				t.Logf("%s deployment %s v%d %s %q %+v", job, d.ID[:8], d.JobVersion, d.Status, d.StatusDescription, *d.TaskGroups["web"])
			}
		}
		t.Logf("server log:\n%s", lastLines(srv.logs(), 60))
	})

	// Refused at registration (400) naming the key and the collision.
	bad := surgeJob("surge", "0", true, false)
	bad.TaskGroups[0].Networks = []*api.NetworkResource{{ReservedPorts: []api.Port{{Label: "admin", Value: 9000}}}}
	_, _, err := c.Jobs().Register(bad, nil)
	require.ErrorContains(t, err, "400")
	require.ErrorContains(t, err, `meta "drover.surge"`)
	require.ErrorContains(t, err, `static port "admin" (9000)`)
	bad = surgeJob("surge", "0", true, false)
	bad.TaskGroups[0].Volumes = map[string]*api.VolumeRequest{"data": {Name: "data", Type: "host", Source: "shared"}}
	_, _, err = c.Jobs().Register(bad, nil)
	require.ErrorContains(t, err, `meta "drover.surge"`)
	require.ErrorContains(t, err, `host volume "data"`)

	// Version 0, then version 1 by surge.
	_, _, err = c.Jobs().Register(surgeJob("surge", "0", true, false), nil)
	require.NoError(t, err)
	waitJobDeployment(t, c, "surge", 0, "successful")
	waitSettled(t, c, "surge", 0, nodes)
	started := time.Now()
	_, _, err = c.Jobs().Register(surgeJob("surge", "1", true, false), nil)
	require.NoError(t, err)
	waitJobDeployment(t, c, "surge", 1, "successful")
	waitSettled(t, c, "surge", 1, nodes)
	rollout := time.Since(started)
	v1 := liveOf(t, c, "surge")
	require.Len(t, v1, nodes)

	// Version 2 fails on its first node: the old allocation there keeps
	// running, the deployment fails and auto_revert registers version 3
	// (version 1's spec), which updates the version 1 allocations in place.
	_, _, err = c.Jobs().Register(surgeJob("surge", "2", true, true), nil)
	require.NoError(t, err)
	failed := waitJobDeployment(t, c, "surge", 2, "failed")
	require.Contains(t, failed.StatusDescription, "rolling back to job version 1")
	waitJobDeployment(t, c, "surge", 3, "successful")
	waitSettled(t, c, "surge", 3, nodes)
	for id := range v1 {
		a, _, err := c.Allocations().Info(id, nil)
		require.NoError(t, err)
		require.Equal(t, "run", a.DesiredStatus, "version 1 allocation %s was stopped", id)
		require.Equal(t, "running", a.ClientStatus, id)
	}
	var v2failed int
	stubs, _, err := c.Jobs().Allocations("surge", true, nil)
	require.NoError(t, err)
	for _, s := range stubs {
		if s.JobVersion == 2 {
			require.Equal(t, "failed", s.ClientStatus, s.ID)
			v2failed++
		}
	}
	require.Equal(t, 1, v2failed, "max_parallel 1: the failing version reached one node")

	surgeCov := nodeCoverage(t, c, "surge", time.Now())
	require.Len(t, surgeCov, nodes)
	for node, cov := range surgeCov {
		t.Logf("surge: node %s: %v without a running allocation, %v with two", node, cov.gap, cov.overlap)
		require.Zero(t, cov.gap, "node %s was without a running allocation of the job", node)
		require.Positive(t, cov.overlap, "node %s: the new allocation did not start beside the old one", node)
	}
	t.Logf("surge: rollout of %d nodes took %v", nodes, rollout)

	// The same rollout without surge: each node stops the old allocation
	// before the new one starts.
	_, _, err = c.Jobs().Register(surgeJob("plain", "0", false, false), nil)
	require.NoError(t, err)
	waitJobDeployment(t, c, "plain", 0, "successful")
	waitSettled(t, c, "plain", 0, nodes)
	started = time.Now()
	_, _, err = c.Jobs().Register(surgeJob("plain", "1", false, false), nil)
	require.NoError(t, err)
	waitJobDeployment(t, c, "plain", 1, "successful")
	waitSettled(t, c, "plain", 1, nodes)
	t.Logf("plain: rollout of %d nodes took %v", nodes, time.Since(started))
	for node, cov := range nodeCoverage(t, c, "plain", time.Now()) {
		t.Logf("plain: node %s: %v without a running allocation, %v with two", node, cov.gap, cov.overlap)
		require.Positive(t, cov.gap, "node %s: without surge the old allocation stops before the new one starts", node)
	}
}
