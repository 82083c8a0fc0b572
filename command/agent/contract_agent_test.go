package agent

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/command/agent/config"
	"github.com/drover-project/drover/testutil/taskprocs"
)

// TestContractAgentMembersHealthWorkers: members lists the raft servers,
// health reports the leader, the scheduler worker pool can be resized
// (bad values are 400 "Invalid request" and change nothing), and
// force-leave of an unknown server is not an error.
func TestContractAgentMembersHealthWorkers(t *testing.T) {
	ta := newTestAgent(t, "")
	a := ta.client.Agent()

	mem, err := a.Members()
	require.NoError(t, err)
	require.Len(t, mem.Members, 1)
	m := mem.Members[0]
	require.Equal(t, ta.config.Name+".global", m.Name)
	require.Equal(t, "alive", m.Status)
	require.NotZero(t, m.Port)
	require.Equal(t, "leader", m.Tags["raft_role"])

	health, err := a.Health()
	require.NoError(t, err)
	require.True(t, health.Server.Ok)
	require.Nil(t, health.Client, "no client on this agent")

	cfg, err := a.GetSchedulerWorkerConfig(nil)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"service", "batch", "system", "sysbatch", "_core"}, cfg.EnabledSchedulers)
	set, err := a.SetSchedulerWorkerConfig(api.SchedulerWorkerPoolArgs{NumSchedulers: 1, EnabledSchedulers: []string{"_core", "system"}}, nil)
	require.NoError(t, err)
	require.Equal(t, 1, set.NumSchedulers)
	// Workers run once the leader has taken up its duties.
	var info *api.AgentSchedulerWorkersInfo
	require.Eventually(t, func() bool {
		info, err = a.GetSchedulerWorkersInfo(nil)
		return err == nil && len(info.Schedulers) == 1 && info.Schedulers[0].Status == "Started"
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, []string{"_core", "system"}, info.Schedulers[0].EnabledSchedulers)

	for _, bad := range []api.SchedulerWorkerPoolArgs{
		{NumSchedulers: -1, EnabledSchedulers: []string{"_core"}},
		{NumSchedulers: 1, EnabledSchedulers: []string{"system"}},
		{NumSchedulers: 1, EnabledSchedulers: []string{"_core", "nope"}},
	} {
		_, err := a.SetSchedulerWorkerConfig(bad, nil)
		require.ErrorContains(t, err, "400 (Invalid request)", "%+v", bad)
	}
	after, err := a.GetSchedulerWorkerConfig(nil)
	require.NoError(t, err)
	require.Equal(t, 1, after.NumSchedulers)

	// A job is still scheduled by the single system worker.
	ta.registerNode(t, "node-1")
	registerAndWait(t, ta.client, testJob("web"))

	require.NoError(t, a.ForceLeave("nope"))
	require.ErrorContains(t, a.ForceLeave(ta.config.Name), "cannot force itself")

	_, err = a.Servers()
	require.ErrorContains(t, err, "501")
}

// TestContractAgentMonitor: /v1/agent/monitor streams the agent's log at
// the level asked for, whatever the agent's own level; an unknown level is
// a 400.
func TestContractAgentMonitor(t *testing.T) {
	cfg := config.DevConfig()
	cfg.Name = fmt.Sprintf("mon-%d", time.Now().UnixNano())
	cfg.Ports.HTTP, cfg.Ports.RPC = 0, 0
	cfg.DataDir = t.TempDir()
	logger := hclog.NewInterceptLogger(&hclog.LoggerOptions{Name: "agent", Level: hclog.Warn, Output: os.Stderr})
	ag, err := NewAgent(cfg, logger)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ag.Shutdown() })
	c, err := api.NewClient(&api.Config{Address: "http://" + ag.HTTPAddr()})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return ag.Server().IsLeader() }, 10*time.Second, 20*time.Millisecond)

	resp, err := http.Get("http://" + ag.HTTPAddr() + "/v1/agent/monitor?log_level=loud")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)

	stop := make(chan struct{})
	defer close(stop)
	frames, errs := c.Agent().Monitor(stop, &api.QueryOptions{Params: map[string]string{"log_level": "debug"}})
	deadline := time.After(10 * time.Second)
	for {
		_, _ = c.Agent().Region() // a request is logged at debug
		select {
		case f := <-frames:
			if f != nil && strings.Contains(string(f.Data), "[DEBUG]") {
				require.Contains(t, string(f.Data), "request complete")
				return
			}
		case err := <-errs:
			t.Fatalf("monitor: %v", err)
		case <-deadline:
			t.Fatal("no debug line streamed")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// newDevAgent starts an in-process dev agent (server and client) with an
// intercept logger, and waits for its node to register. Its Shutdown stops
// its tasks; any executor still left under its data dir (a test that failed
// half-way) is killed after it.
func newDevAgent(t *testing.T) (*Agent, *api.Client) {
	t.Helper()
	cfg := config.DevConfig()
	cfg.Name = fmt.Sprintf("dev-%d", time.Now().UnixNano())
	cfg.Ports.HTTP, cfg.Ports.RPC = 0, 0
	cfg.DataDir = t.TempDir()
	taskprocs.Cleanup(t, cfg.DataDir)
	logger := hclog.NewInterceptLogger(&hclog.LoggerOptions{Name: "agent", Level: hclog.Warn, Output: os.Stderr})
	ag, err := NewAgent(cfg, logger)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ag.Shutdown() })
	c, err := api.NewClient(&api.Config{Address: "http://" + ag.HTTPAddr()})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		nodes, _, err := c.Nodes().List(nil)
		return err == nil && len(nodes) == 1
	}, 20*time.Second, 50*time.Millisecond)
	return ag, c
}

// TestContractDynamicNodeMeta: /v1/client/metadata on a server reaches the
// node's client; the node's Meta then changes in the servers' state.
func TestContractDynamicNodeMeta(t *testing.T) {
	ag, c := newDevAgent(t)
	nodeID := ag.Client().NodeID()
	read, err := c.Nodes().Meta().Read(nodeID, nil)
	require.NoError(t, err)
	require.Empty(t, read.Dynamic)

	bar := "bar"
	resp, err := c.Nodes().Meta().Apply(&api.NodeMetaApplyRequest{NodeID: nodeID, Meta: map[string]*string{"foo": &bar}}, nil)
	require.NoError(t, err)
	require.Equal(t, "bar", resp.Meta["foo"])
	require.Eventually(t, func() bool {
		n, _, err := c.Nodes().Info(nodeID, nil)
		return err == nil && n.Meta["foo"] == "bar"
	}, 10*time.Second, 50*time.Millisecond)

	_, err = c.Nodes().Meta().Apply(&api.NodeMetaApplyRequest{NodeID: "12345678-abcd-efab-cdef-123456789abc",
		Meta: map[string]*string{"foo": &bar}}, nil)
	require.ErrorContains(t, err, "Unknown node")
}

// TestContractAllocRestartSignalStop: through the server, an allocation's
// task is restarted in place (counted in Restarts), signalled, and the
// allocation stopped: a system job's node then gets a new allocation.
func TestContractAllocRestartSignalStop(t *testing.T) {
	_, c := newDevAgent(t)
	job := testJob("web")
	job.TaskGroups[0].Tasks[0].Driver = "mock" // runs until stopped, in process
	job.TaskGroups[0].Tasks[0].Config = map[string]any{}
	registerAndWait(t, c, job)
	var alloc *api.Allocation
	require.Eventually(t, func() bool {
		stubs, _, err := c.Jobs().Allocations("web", false, nil)
		if err != nil || len(stubs) != 1 || stubs[0].ClientStatus != "running" {
			return false
		}
		alloc, _, err = c.Allocations().Info(stubs[0].ID, nil)
		return err == nil
	}, 20*time.Second, 50*time.Millisecond)

	require.NoError(t, c.Allocations().Restart(alloc, "server", nil))
	require.Eventually(t, func() bool {
		a, _, err := c.Allocations().Info(alloc.ID, nil)
		st := a.TaskStates["server"]
		return err == nil && st != nil && st.Restarts == 1 && st.State == "running"
	}, 20*time.Second, 50*time.Millisecond)
	err := c.Allocations().Restart(alloc, "nope", nil)
	require.ErrorContains(t, err, "400")

	require.NoError(t, c.Allocations().Signal(alloc, nil, "server", "SIGWINCH"))
	err = c.Allocations().Signal(alloc, nil, "server", "SIGNOPE")
	require.ErrorContains(t, err, "400")

	resp, err := c.Allocations().Stop(alloc, nil)
	require.NoError(t, err)
	require.NotEmpty(t, resp.EvalID)
	waitEvalComplete(t, c, resp.EvalID)
	stopped, _, err := c.Allocations().Info(alloc.ID, nil)
	require.NoError(t, err)
	require.Equal(t, "stop", stopped.DesiredStatus)
	require.True(t, stopped.DesiredTransition.ShouldMigrate())
	require.Eventually(t, func() bool {
		stubs, _, err := c.Jobs().Allocations("web", false, nil)
		if err != nil {
			return false
		}
		for _, s := range stubs {
			if s.ID != alloc.ID && s.DesiredStatus == "run" && s.NodeID == alloc.NodeID {
				return true
			}
		}
		return false
	}, 20*time.Second, 50*time.Millisecond, "a replacement on the node")
}

// TestContractAllocFS: the api client's AllocFS reads an allocation's
// directory through the server (ls, stat, cat, readat).
func TestContractAllocFS(t *testing.T) {
	_, c := newDevAgent(t)
	job := testJob("web")
	job.TaskGroups[0].Tasks[0].Driver = "mock"
	job.TaskGroups[0].Tasks[0].Config = map[string]any{"stdout_string": "hello from the task\n"}
	registerAndWait(t, c, job)
	var alloc *api.Allocation
	require.Eventually(t, func() bool {
		stubs, _, err := c.Jobs().Allocations("web", false, nil)
		if err != nil || len(stubs) != 1 || stubs[0].ClientStatus != "running" {
			return false
		}
		alloc, _, err = c.Allocations().Info(stubs[0].ID, nil)
		return err == nil
	}, 20*time.Second, 50*time.Millisecond)

	fs := c.AllocFS()
	entries, _, err := fs.List(alloc, "alloc/logs", nil)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name)
	}
	require.Contains(t, names, "server.stdout.0")
	st, _, err := fs.Stat(alloc, "alloc/logs/server.stdout.0", nil)
	require.NoError(t, err)
	require.EqualValues(t, len("hello from the task\n"), st.Size)
	rc, err := fs.Cat(alloc, "alloc/logs/server.stdout.0", nil)
	require.NoError(t, err)
	body, _ := io.ReadAll(rc)
	rc.Close()
	require.Equal(t, "hello from the task\n", string(body))
	rc, err = fs.ReadAt(alloc, "alloc/logs/server.stdout.0", 6, 4, nil)
	require.NoError(t, err)
	body, _ = io.ReadAll(rc)
	rc.Close()
	require.Equal(t, "from", string(body))
	_, _, err = fs.Stat(alloc, "alloc/nope", nil)
	require.ErrorContains(t, err, "404")
}
