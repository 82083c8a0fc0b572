package command

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/command/agent"
	"github.com/drover-project/drover/command/agent/config"
	"github.com/drover-project/drover/nodesim"
)

// startServerAgent starts an in-process single-server agent without a
// client and returns its HTTP address and an API client.
func startServerAgent(t *testing.T) (string, *api.Client) {
	t.Helper()
	cfg := config.DevConfig()
	cfg.Name = fmt.Sprintf("nodesim-%d", time.Now().UnixNano())
	cfg.Ports.HTTP, cfg.Ports.RPC = 0, 0
	cfg.Client.Enabled = false
	cfg.DataDir = t.TempDir()
	a, err := agent.NewAgent(cfg, hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Warn, Output: os.Stderr}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Shutdown() })
	c, err := api.NewClient(&api.Config{Address: "http://" + a.HTTPAddr()})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return a.Server().IsLeader() }, 10*time.Second, 20*time.Millisecond)
	return "http://" + a.HTTPAddr(), c
}

// mockSystemJob is a system job of one mock task rolled out in waves of
// maxParallel, healthy after minHealthy of running.
func mockSystemJob(id, version string, maxParallel int, minHealthy time.Duration) *api.Job {
	job := api.NewSystemJob(id, id, "global", 50)
	job.Datacenters = []string{"dc1"}
	task := api.NewTask("app", "mock").SetConfig("run_for", "0s").SetConfig("start_block_for", "20ms")
	task.Env = map[string]string{"VERSION": version}
	task.Resources = &api.Resources{CPU: new(10), MemoryMB: new(16)}
	tg := api.NewTaskGroup("app", 1).AddTask(task)
	tg.Update = &api.UpdateStrategy{
		MaxParallel: new(maxParallel), HealthCheck: new("task_states"), MinHealthyTime: new(minHealthy),
		HealthyDeadline: new(30 * time.Second), ProgressDeadline: new(60 * time.Second), AutoRevert: new(false),
	}
	job.AddTaskGroup(tg)
	return job
}

// TestNodesimSmoke runs a few hundred simulated nodes against a real
// in-process server: every node registers and heartbeats, a system job is
// placed and running on all of them, and a rollout of a new version in
// waves succeeds with every node running the new version.
func TestNodesimSmoke(t *testing.T) {
	const nodes = 200
	addr, c := startServerAgent(t)
	sim, err := nodesim.New(nodesim.Config{Servers: []string{addr}, Nodes: nodes, UpdateInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = sim.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	wctx, wcancel := context.WithTimeout(ctx, 15*time.Second)
	defer wcancel()
	require.NoError(t, sim.WaitRegistered(wctx))
	list, _, err := c.Nodes().List(nil)
	require.NoError(t, err)
	require.Len(t, list, nodes)
	for _, n := range list {
		require.Equal(t, "ready", n.Status, n.Name)
		require.True(t, strings.HasPrefix(n.Name, "sim-"), n.Name)
		require.True(t, n.Drivers["mock"].Healthy)
	}

	_, _, err = c.Jobs().Register(mockSystemJob("fleet", "1", nodes/10, 100*time.Millisecond), nil)
	require.NoError(t, err)
	waitRunningVersion(t, c, "fleet", 0, nodes)
	require.Equal(t, nodes, sim.Stats().Running)

	resp, _, err := c.Jobs().Register(mockSystemJob("fleet", "2", nodes/10, 100*time.Millisecond), nil)
	require.NoError(t, err)
	require.NotEmpty(t, resp.EvalID)
	require.Eventually(t, func() bool {
		d, _, err := c.Jobs().LatestDeployment("fleet", nil)
		return err == nil && d != nil && d.JobVersion == 1 && d.Status == "successful"
	}, 90*time.Second, 100*time.Millisecond, "the rollout did not succeed")
	waitRunningVersion(t, c, "fleet", 1, nodes)
	st := sim.Stats()
	require.Zero(t, st.Missed)
	require.Zero(t, st.UpdateErrors)

	// A forced GC removes the replaced version's allocations and the
	// first deployment, and nothing live: every node keeps running its
	// allocation, the current deployment and the revertable versions stay.
	before, _, err := c.Jobs().Allocations("fleet", true, nil)
	require.NoError(t, err)
	require.Len(t, before, 2*nodes)
	require.NoError(t, c.System().GarbageCollect())
	after, _, err := c.Jobs().Allocations("fleet", true, nil)
	require.NoError(t, err)
	require.Len(t, after, nodes)
	for _, a := range after {
		require.Equal(t, uint64(1), a.JobVersion)
		require.Equal(t, "running", a.ClientStatus)
	}
	deps, _, err := c.Jobs().Deployments("fleet", true, nil)
	require.NoError(t, err)
	require.Len(t, deps, 1)
	require.Equal(t, uint64(1), deps[0].JobVersion)
	versions, _, _, err := c.Jobs().Versions("fleet", false, nil)
	require.NoError(t, err)
	require.Len(t, versions, 2, "a revert still finds version 0")
	time.Sleep(300 * time.Millisecond) // the nodes' long polls answer
	require.Equal(t, nodes, sim.Stats().Running, "no node lost a live allocation")

	// A stopped job is purged once its allocations are done.
	_, _, err = c.Jobs().Deregister("fleet", false, nil)
	require.NoError(t, err)
	require.True(t, assertEventually(func() bool { return sim.Stats().Running == 0 }, 15*time.Second))
	require.True(t, assertEventually(func() bool {
		require.NoError(t, c.System().GarbageCollect())
		_, _, err := c.Jobs().Info("fleet", nil)
		return err != nil && strings.Contains(err.Error(), "404")
	}, 15*time.Second), "the stopped job was not purged")
	all, _, err := c.Allocations().List(nil)
	require.NoError(t, err)
	require.Empty(t, all)
}

// waitRunningVersion waits until want allocations of job version run,
// one per node.
func waitRunningVersion(t *testing.T, c *api.Client, job string, version uint64, want int) {
	t.Helper()
	var last string
	ok := assertEventually(func() bool {
		allocs, _, err := c.Jobs().Allocations(job, false, nil)
		if err != nil {
			last = err.Error()
			return false
		}
		nodes := map[string]bool{}
		for _, a := range allocs {
			if a.JobVersion == version && a.ClientStatus == "running" && a.DesiredStatus == "run" {
				nodes[a.NodeID] = true
			}
		}
		last = fmt.Sprintf("%d of %d running version %d", len(nodes), want, version)
		return len(nodes) == want
	}, 20*time.Second)
	require.True(t, ok, last)
}

func assertEventually(cond func() bool, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return cond()
}

// TestNodesimFlags checks the flag parsing of `drover nodesim`.
func TestNodesimFlags(t *testing.T) {
	var out, errb bytes.Buffer
	m := &Meta{Stdout: &out, Stderr: &errb}
	cfg, every, _, ok := parseNodesim(m, []string{"-address", "http://a:1,http://b:2", "-nodes", "7", "-datacenter", "eu",
		"-node-pool", "edge", "-attr", "rack=r1", "-meta", "team=x", "-heartbeat-jitter", "0.5", "-stats-interval", "0"})
	require.True(t, ok, errb.String())
	require.Equal(t, []string{"http://a:1", "http://b:2"}, cfg.Servers)
	require.Equal(t, 7, cfg.Nodes)
	require.Equal(t, "eu", cfg.Datacenter)
	require.Equal(t, "edge", cfg.NodePool)
	require.Equal(t, map[string]string{"rack": "r1"}, cfg.Attributes)
	require.Equal(t, map[string]string{"team": "x"}, cfg.Meta)
	require.Equal(t, 0.5, cfg.HeartbeatJitter)
	require.Zero(t, every)

	for _, bad := range [][]string{{"-nodes", "0"}, {"-heartbeat-jitter", "2"}, {"-attr", "novalue"}} {
		errb.Reset()
		_, _, code, ok := parseNodesim(m, bad)
		require.False(t, ok, bad)
		require.Equal(t, 1, code, bad)
		require.Contains(t, errb.String(), "Error", bad)
	}
}
