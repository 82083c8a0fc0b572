package e2e

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// TestExecDriverEndToEnd runs an exec batch task through a real client
// agent. As root, the task looks around and its log shows it isolated: its
// parent is PID 1 of its own PID namespace (the namespace's init, not the
// host's), it sees a handful of processes, it runs as nobody, host paths
// outside its chroot do not exist for it and /usr is read-only. Not as
// root (or without namespaces), the client reports the driver undetected
// with the reason and the job is not placed ("missing drivers").
func TestExecDriverEndToEnd(t *testing.T) {
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(t, srv)
	c := srv.client(t)
	client := newClientAgent(t, "client-1", srv.httpHostPort())
	waitReadyNodes(t, c, 1)
	nodes, _, err := c.Nodes().List(nil)
	require.NoError(t, err)

	var exec *api.DriverInfo
	require.Eventually(t, func() bool {
		n, _, err := c.Nodes().Info(nodes[0].ID, nil)
		require.NoError(t, err)
		exec = n.Drivers["exec"]
		return exec != nil
	}, 30*time.Second, 100*time.Millisecond, "the client fingerprints the exec driver")

	// A host file the task must not see: the client's own config.
	hostOnly := client.config
	script := strings.Join([]string{
		`echo "ppid=$PPID"`,
		`echo "pid1=$(tr '\0' ' ' < /proc/1/cmdline)"`,
		`echo "procs=$(ls /proc | grep -c '^[0-9]')"`,
		`echo "uid=$(id -u)"`,
		`if [ -e ` + hostOnly + ` ]; then echo host=visible; else echo host=hidden; fi`,
		`if touch /usr/drover-e2e 2>/dev/null; then echo usr=writable; else echo usr=readonly; fi`,
		`echo "taskdir=$NOMAD_TASK_DIR"`,
	}, "; ")
	job := api.NewBatchJob("isolated", "isolated", "global", 50)
	job.Datacenters = []string{"dc1"}
	task := api.NewTask("look", "exec").SetConfig("command", "/bin/sh").SetConfig("args", []string{"-c", script})
	task.Resources = &api.Resources{CPU: new(100), MemoryMB: new(64)}
	job.AddTaskGroup(api.NewTaskGroup("g", 1).AddTask(task))
	resp, _, err := c.Jobs().Register(job, nil)
	require.NoError(t, err)

	if !exec.Detected {
		// Not root, or a root without namespaces (an unprivileged
		// container): the driver says why, and nothing is placed.
		t.Logf("EXEC DRIVER UNDETECTED (euid %d): %s; checking placement refuses the job", os.Geteuid(), exec.HealthDescription)
		if os.Geteuid() != 0 {
			require.Equal(t, "exec driver must run as root", exec.HealthDescription)
		} else {
			require.Contains(t, exec.HealthDescription, "namespaces")
		}
		var eval *api.Evaluation
		require.Eventually(t, func() bool {
			eval, _, err = c.Evaluations().Info(resp.EvalID, nil)
			return err == nil && eval.Status == "complete"
		}, 30*time.Second, 100*time.Millisecond)
		require.Contains(t, eval.FailedTGAllocs, "g")
		require.Equal(t, 1, eval.FailedTGAllocs["g"].ConstraintFiltered["missing drivers"])
		return
	}
	require.Equal(t, 0, os.Geteuid(), "only root detects the exec driver")
	require.True(t, exec.Healthy, exec.HealthDescription)

	var allocID string
	require.Eventually(t, func() bool {
		allocs, _, err := c.Jobs().Allocations("isolated", true, nil)
		if err != nil || len(allocs) != 1 || allocs[0].ClientStatus != "complete" {
			return false
		}
		allocID = allocs[0].ID
		return true
	}, 60*time.Second, 200*time.Millisecond, "the exec task runs to completion")
	code, out := drover(t, srv.httpAddr(), "alloc", "logs", allocID)
	require.Equal(t, 0, code, out)
	seen := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(l, "=")
		seen[k] = v
	}
	require.Equal(t, "1", seen["ppid"], out)
	require.Contains(t, seen["pid1"], "__drover_exec_init", out)
	require.Equal(t, "65534", seen["uid"], out)
	require.Equal(t, "hidden", seen["host"], out)
	require.Equal(t, "readonly", seen["usr"], out)
	require.Equal(t, "/local", seen["taskdir"], out)
	require.Less(t, len(seen["procs"]), 2, "fewer than ten processes visible: %s", out)
}

// TestExecDriverAllocExec runs `drover alloc exec` into a running exec task
// through a real client agent: the command sees the task's root, PID
// namespace and user, and its exit code becomes the CLI's. It skips,
// loudly, where the exec driver is undetected.
func TestExecDriverAllocExec(t *testing.T) {
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(t, srv)
	c := srv.client(t)
	client := newClientAgent(t, "client-1", srv.httpHostPort())
	waitReadyNodes(t, c, 1)
	nodes, _, err := c.Nodes().List(nil)
	require.NoError(t, err)
	var exec *api.DriverInfo
	require.Eventually(t, func() bool {
		n, _, err := c.Nodes().Info(nodes[0].ID, nil)
		require.NoError(t, err)
		exec = n.Drivers["exec"]
		return exec != nil
	}, 30*time.Second, 100*time.Millisecond, "the client fingerprints the exec driver")
	if !exec.Detected {
		t.Skipf("SKIPPED: the exec driver is undetected here (euid %d): %s", os.Geteuid(), exec.HealthDescription)
	}

	job := api.NewServiceJob("sleeper", "sleeper", "global", 50)
	job.Datacenters = []string{"dc1"}
	task := api.NewTask("sleep", "exec").SetConfig("command", "/bin/sleep").SetConfig("args", []string{"600"})
	task.Resources = &api.Resources{CPU: new(100), MemoryMB: new(64)}
	job.AddTaskGroup(api.NewTaskGroup("g", 1).AddTask(task))
	_, _, err = c.Jobs().Register(job, nil)
	require.NoError(t, err)
	var allocID string
	require.Eventually(t, func() bool {
		allocs, _, err := c.Jobs().Allocations("sleeper", false, nil)
		if err != nil || len(allocs) != 1 || allocs[0].ClientStatus != "running" {
			return false
		}
		allocID = allocs[0].ID
		return true
	}, 60*time.Second, 200*time.Millisecond, "the exec task runs")

	script := strings.Join([]string{
		`echo "pid1=$(tr '\0' ' ' < /proc/1/cmdline)"`,
		`echo "uid=$(id -u)"`,
		`if [ -e ` + client.config + ` ]; then echo host=visible; else echo host=hidden; fi`,
		`echo "taskdir=$NOMAD_TASK_DIR"`,
		`exit 3`,
	}, "; ")
	code, out := drover(t, srv.httpAddr(), "alloc", "exec", "-task", "sleep", allocID[:8], "/bin/sh", "-c", script)
	require.Equal(t, 3, code, out)
	seen := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(l, "=")
		seen[k] = v
	}
	require.Contains(t, seen["pid1"], "__drover_exec_init", out)
	require.Equal(t, "65534", seen["uid"], out)
	require.Equal(t, "hidden", seen["host"], out)
	require.Equal(t, "/local", seen["taskdir"], out)
}
