package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/testutil/taskprocs"
)

// newPlainClientAgent starts a client-only agent whose configuration has
// no plugin blocks at all, as a production client's file may.
func newPlainClientAgent(t testing.TB, name string, servers ...string) *agentProc {
	t.Helper()
	dir := t.TempDir()
	p := &agentProc{name: name, dataDir: filepath.Join(dir, "data"), httpPort: freePort(t), rpcPort: freePort(t)}
	p.config = filepath.Join(dir, "agent.hcl")
	quoted := ""
	for i, s := range servers {
		if i > 0 {
			quoted += ", "
		}
		quoted += fmt.Sprintf("%q", s)
	}
	hcl := fmt.Sprintf(`name = %q
data_dir = %q
bind_addr = "127.0.0.1"
ports {
  http = %d
  rpc  = %d
}
client {
  enabled = true
  servers = [%s]
}
`, name, p.dataDir, p.httpPort, p.rpcPort, quoted)
	require.NoError(t, os.WriteFile(p.config, []byte(hcl), 0o600))
	p.logPath = filepath.Join(dir, "agent.log")
	taskprocs.Cleanup(t, p.dataDir) // after the kill below: executors outlive a killed agent
	p.start(t)
	t.Cleanup(p.kill)
	return p
}

// TestRawExecOffUnlessEnabled: a client (not -dev) whose configuration
// does not enable raw_exec reports it undetected, "disabled", as Nomad
// does; a raw_exec job is not placed there ("missing drivers") and waits
// blocked until a client with plugin "raw_exec" { config { enabled = true
// } } joins, which runs it.
func TestRawExecOffUnlessEnabled(t *testing.T) {
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(t, srv)
	c := srv.client(t)
	newPlainClientAgent(t, "plain", srv.httpHostPort())
	waitReadyNodes(t, c, 1)
	plainID := nodeIDOf(t, c, "plain")

	var node *api.Node
	require.Eventually(t, func() bool {
		var err error
		node, _, err = c.Nodes().Info(plainID, nil)
		return err == nil && node.Drivers["raw_exec"] != nil
	}, 30*time.Second, 100*time.Millisecond)
	raw := node.Drivers["raw_exec"]
	require.False(t, raw.Detected, "raw_exec is not detected unless enabled")
	require.False(t, raw.Healthy)
	require.Equal(t, "disabled", raw.HealthDescription)
	require.NotContains(t, node.Attributes, "driver.raw_exec")

	job := api.NewBatchJob("raw", "raw", "global", 50)
	job.Datacenters = []string{"dc1"}
	task := api.NewTask("t", "raw_exec").SetConfig("command", "/bin/true")
	task.Resources = &api.Resources{CPU: new(50), MemoryMB: new(32)}
	job.AddTaskGroup(api.NewTaskGroup("g", 1).AddTask(task))
	resp, _, err := c.Jobs().Register(job, nil)
	require.NoError(t, err)
	var eval *api.Evaluation
	require.Eventually(t, func() bool {
		eval, _, err = c.Evaluations().Info(resp.EvalID, nil)
		return err == nil && eval.Status == "complete"
	}, 30*time.Second, 100*time.Millisecond)
	require.Contains(t, eval.FailedTGAllocs, "g")
	require.Equal(t, 1, eval.FailedTGAllocs["g"].ConstraintFiltered["missing drivers"])
	allocs, _, err := c.Jobs().Allocations("raw", true, nil)
	require.NoError(t, err)
	require.Empty(t, allocs, "nothing is placed on a node without raw_exec")
	code, out := drover(t, srv.httpAddr(), "eval", "status", resp.EvalID)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, `Constraint "missing drivers": 1 node excluded by filter`)

	// The operator enables it on another client: the blocked job runs there.
	newClientAgent(t, "enabled", srv.httpHostPort())
	require.Eventually(t, func() bool {
		allocs, _, err = c.Jobs().Allocations("raw", true, nil)
		return err == nil && len(allocs) == 1 && allocs[0].ClientStatus == "complete"
	}, 60*time.Second, 200*time.Millisecond, "the job runs once an enabled client joins")
	require.Equal(t, "enabled", allocs[0].NodeName)
}
