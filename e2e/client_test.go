package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// runningAllocs returns the job's live allocations by node ID, once each is
// running.
func runningAllocs(t testing.TB, c *api.Client, jobID string) map[string]*api.AllocationListStub {
	t.Helper()
	allocs, _, err := c.Jobs().Allocations(jobID, false, nil)
	require.NoError(t, err)
	out := map[string]*api.AllocationListStub{}
	for _, a := range allocs {
		if a.DesiredStatus == "run" && a.ClientStatus == "running" {
			out[a.NodeID] = a
		}
	}
	return out
}

func waitReadyNodes(t testing.TB, c *api.Client, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		nodes, _, err := c.Nodes().List(nil)
		if err != nil {
			return false
		}
		ready := 0
		for _, node := range nodes {
			if node.Status == "ready" {
				ready++
			}
		}
		return ready == n
	}, 30*time.Second, 100*time.Millisecond, "want %d ready nodes", n)
}

func nodeIDOf(t testing.TB, c *api.Client, name string) string {
	t.Helper()
	nodes, _, err := c.Nodes().List(nil)
	require.NoError(t, err)
	for _, n := range nodes {
		if n.Name == name {
			return n.ID
		}
	}
	t.Fatalf("no node named %s", name)
	return ""
}

// taskPID reads the PID the task wrote into its task dir on client p.
func taskPID(t testing.TB, p *agentProc, allocID string) int {
	t.Helper()
	var pid int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(p.dataDir, "alloc", allocID, "server", "local", "pid"))
		if err != nil {
			b, err = os.ReadFile(filepath.Join(p.dataDir, "alloc", allocID, "server", "pid"))
		}
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	}, 10*time.Second, 50*time.Millisecond)
	return pid
}

func processAlive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func TestClientsRunSystemJobEndToEnd(t *testing.T) {
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1,
		extra: `min_heartbeat_ttl = "2s"
  heartbeat_grace = "1s"`})
	waitLeader(t, srv)
	c := srv.client(t)
	clients := []*agentProc{}
	for i := 1; i <= 3; i++ {
		clients = append(clients, newClientAgent(t, fmt.Sprintf("client-%d", i), srv.httpHostPort()))
	}
	waitReadyNodes(t, c, 3)

	// A raw_exec system job runs on all three.
	code, out := drover(t, srv.httpAddr(), "job", "run", "-detach", writeJobFile(t, rawExecJobHCL))
	require.Equal(t, 0, code, out)
	require.Eventually(t, func() bool { return len(runningAllocs(t, c, "web")) == 3 }, 60*time.Second, 200*time.Millisecond)
	code, out = drover(t, srv.httpAddr(), "job", "status", "web")
	require.Equal(t, 0, code, out)
	require.Regexp(t, regexp.MustCompile(`(?m)^web\s+0\s+0\s+3\s+0\s+0\s+0\s+0\s*$`), out, "summary: 3 running")

	// alloc logs reads the task's stdout through the server.
	for _, a := range runningAllocs(t, c, "web") {
		code, out = drover(t, srv.httpAddr(), "alloc", "logs", a.ID[:8])
		require.Equal(t, 0, code, out)
		require.Contains(t, out, "started")
		break
	}

	// Draining a node stops its allocation and completes; the node stays
	// ineligible until made eligible again, then gets its allocation back.
	drained := nodeIDOf(t, c, clients[0].name)
	code, out = drover(t, srv.httpAddr(), "node", "drain", "-enable", "-yes", drained[:8])
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Drain complete for node "+drained)
	require.NotContains(t, runningAllocs(t, c, "web"), drained)
	node, _, err := c.Nodes().Info(drained, nil)
	require.NoError(t, err)
	require.Equal(t, "ineligible", node.SchedulingEligibility)
	require.False(t, node.Drain)
	code, out = drover(t, srv.httpAddr(), "node", "eligibility", "-enable", drained[:8])
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "eligible for scheduling")
	require.Eventually(t, func() bool { return runningAllocs(t, c, "web")[drained] != nil }, 30*time.Second, 200*time.Millisecond)

	// A fourth client joining gets an allocation within seconds.
	fourth := newClientAgent(t, "client-4", srv.httpHostPort())
	clients = append(clients, fourth)
	require.Eventually(t, func() bool { return len(runningAllocs(t, c, "web")) == 4 }, 30*time.Second, 200*time.Millisecond)

	// A client restarted quickly finds its task still running, same PID.
	restarted := clients[1]
	restartedNode := nodeIDOf(t, c, restarted.name)
	before := runningAllocs(t, c, "web")[restartedNode]
	require.NotNil(t, before)
	pid := taskPID(t, restarted, before.ID)
	restarted.kill()
	require.True(t, processAlive(pid), "the task outlives its client")
	restarted.start(t)
	require.Eventually(t, func() bool {
		a, _, err := c.Allocations().Info(before.ID, nil)
		return err == nil && a.ClientStatus == "running" && a.DesiredStatus == "run" &&
			a.TaskStates["server"] != nil && a.TaskStates["server"].Restarts == 0
	}, 30*time.Second, 200*time.Millisecond)
	require.True(t, processAlive(pid), "the restarted client reattached without restarting the task")
	require.Equal(t, pid, taskPID(t, restarted, before.ID))

	// A client killed and kept down is marked down after its TTL; its
	// allocation is lost.
	lostNode := nodeIDOf(t, c, clients[2].name)
	lostAlloc := runningAllocs(t, c, "web")[lostNode]
	require.NotNil(t, lostAlloc)
	clients[2].kill()
	require.Eventually(t, func() bool {
		n, _, err := c.Nodes().Info(lostNode, nil)
		return err == nil && n.Status == "down"
	}, 30*time.Second, 200*time.Millisecond)
	require.Eventually(t, func() bool {
		a, _, err := c.Allocations().Info(lostAlloc.ID, nil)
		return err == nil && a.ClientStatus == "lost"
	}, 30*time.Second, 200*time.Millisecond)

	// A sysbatch job runs once per ready node and completes.
	code, out = drover(t, srv.httpAddr(), "job", "run", writeJobFile(t, sysbatchJobHCL))
	require.Equal(t, 0, code, out)
	require.Eventually(t, func() bool {
		allocs, _, err := c.Jobs().Allocations("cleanup", false, nil)
		if err != nil || len(allocs) != 3 {
			return false
		}
		for _, a := range allocs {
			if a.ClientStatus != "complete" {
				return false
			}
		}
		job, _, err := c.Jobs().Info("cleanup", nil)
		return err == nil && *job.Status == "dead"
	}, 60*time.Second, 200*time.Millisecond)

	// job stop stops everything.
	code, out = drover(t, srv.httpAddr(), "job", "stop", "-yes", "web")
	require.Equal(t, 0, code, out)
	require.Eventually(t, func() bool {
		allocs, _, err := c.Jobs().Allocations("web", false, nil)
		if err != nil {
			return false
		}
		for _, a := range allocs {
			if a.NodeID == lostNode {
				continue
			}
			if a.ClientStatus == "running" || a.ClientStatus == "pending" {
				return false
			}
		}
		return true
	}, 30*time.Second, 200*time.Millisecond)
	require.Eventually(t, func() bool { return !processAlive(pid) }, 10*time.Second, 100*time.Millisecond)
}

const rawExecJobHCL = `
job "web" {
  type        = "system"
  datacenters = ["dc1"]
  group "web" {
    task "server" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo $$ > \"$NOMAD_TASK_DIR/pid\"; echo started; exec sleep 3600"]
      }
      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
`

const sysbatchJobHCL = `
job "cleanup" {
  type        = "sysbatch"
  datacenters = ["dc1"]
  group "cleanup" {
    task "sweep" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo swept"]
      }
      resources {
        cpu    = 20
        memory = 16
      }
    }
  }
}
`

func writeJobFile(t testing.TB, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "job.nomad.hcl")
	require.NoError(t, os.WriteFile(p, []byte(src), 0o600))
	return p
}
