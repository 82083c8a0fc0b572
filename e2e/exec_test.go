package e2e

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// execJob is a raw_exec system job whose task sleeps, to exec into.
func execJob() *api.Job {
	job := api.NewSystemJob("execme", "execme", "global", 50)
	job.Datacenters = []string{"dc1"}
	task := api.NewTask("server", "raw_exec").SetConfig("command", "/bin/sleep").SetConfig("args", []string{"3600"})
	task.Env = map[string]string{"GREETING": "hello from the task"}
	task.Resources = &api.Resources{CPU: new(20), MemoryMB: new(16)}
	task.KillTimeout = new(time.Second)
	job.AddTaskGroup(api.NewTaskGroup("web", 1).AddTask(task))
	return job
}

// runningAllocOf waits for the job's single running allocation.
func runningAllocOf(t *testing.T, c *api.Client, jobID string) *api.Allocation {
	t.Helper()
	var alloc *api.Allocation
	require.Eventually(t, func() bool {
		running := runningAllocs(t, c, jobID)
		for _, stub := range running {
			a, _, err := c.Allocations().Info(stub.ID, nil)
			if err == nil {
				alloc = a
				return true
			}
		}
		return false
	}, 60*time.Second, 200*time.Millisecond, "a running allocation of %s", jobID)
	return alloc
}

// execThrough runs cmd in the allocation's task with the api client; with
// viaServer the client cannot find the node, so it takes the server's
// route (the server forwards the websocket to the node's client agent).
func execThrough(t *testing.T, c *api.Client, alloc *api.Allocation, task string, viaServer bool, stdin string, cmd ...string) (int, string, string, error) {
	t.Helper()
	a := *alloc
	if viaServer {
		a.NodeID = uuid.NewString()
	}
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code, err := c.Allocations().Exec(ctx, &a, task, false, cmd, strings.NewReader(stdin), &out, &errOut,
		make(chan api.TerminalSize), nil)
	return code, out.String(), errOut.String(), err
}

// TestExecRawExecThroughServer: a server and a separate client agent; the
// api client's Allocations().Exec, sent to the server, runs a command in a
// raw_exec task on the client and gets its stdout, stderr and exit code,
// both when it reaches the node directly and when the server forwards the
// websocket. The CLI's exit code is the command's.
func TestExecRawExecThroughServer(t *testing.T) {
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(t, srv)
	c := srv.client(t)
	newClientAgent(t, "client-1", srv.httpHostPort())
	waitReadyNodes(t, c, 1)
	_, _, err := c.Jobs().Register(execJob(), nil)
	require.NoError(t, err)
	alloc := runningAllocOf(t, c, "execme")

	for _, viaServer := range []bool{true, false} {
		code, stdout, stderr, err := execThrough(t, c, alloc, "server", viaServer, "",
			"/bin/sh", "-c", "echo $GREETING; echo oops >&2; exit 5")
		require.NoError(t, err, "via server: %t", viaServer)
		require.Equal(t, 5, code)
		require.Equal(t, "hello from the task\n", stdout)
		require.Equal(t, "oops\n", stderr)
	}
	code, stdout, _, err := execThrough(t, c, alloc, "server", true, "one\ntwo\n", "cat")
	require.NoError(t, err)
	require.Equal(t, 0, code)
	require.Equal(t, "one\ntwo\n", stdout)

	_, _, _, err = execThrough(t, c, alloc, "nope", true, "", "true")
	require.EqualError(t, err, `unknown task name "nope"`)

	code, out := drover(t, srv.httpAddr(), "alloc", "exec", "-task", "server", alloc.ID[:8], "/bin/sh", "-c", "echo from the cli; exit 3")
	require.Equal(t, 3, code, out)
	require.Equal(t, "from the cli\n", out)
	code, out = drover(t, srv.httpAddr(), "alloc", "exec", "-job", "exec", "/bin/sh", "-c", "echo $NOMAD_ALLOC_ID")
	require.Equal(t, 0, code, out)
	require.Equal(t, alloc.ID+"\n", out, "-job picks the job's running allocation")
	code, out = drover(t, srv.httpAddr(), "alloc", "exec", alloc.ID, "/no/such/program")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "failed to exec into task")
}

// TestExecDocker: exec in a Docker task runs inside its container, through
// the server. The fixture image holds only its web server: a second copy
// of it, run by exec, finds the container's port taken (the container's own
// network) and exits 1 with the error on stderr.
func TestExecDocker(t *testing.T) {
	dc := newDockerClusterN(t, 1, 19000) // host ports 20000-20099: below the ephemeral range
	ref := dc.pushVersion(t, "1", 0)
	code, out := dc.run(t, "-var", "image="+ref)
	require.Equal(t, 0, code, out)
	dc.waitAllAnswer(t, "version 1", 60*time.Second)
	alloc := runningAllocOf(t, dc.api, "web")

	code, stdout, stderr, err := execThrough(t, dc.api, alloc, "server", true, "", "/server")
	require.NoError(t, err)
	require.Equal(t, 1, code, "stdout %q stderr %q", stdout, stderr)
	require.Contains(t, stderr, "address already in use")

	code, _, _, err = execThrough(t, dc.api, alloc, "server", true, "", "/no/such/program")
	require.NoError(t, err, "the engine reports a missing program as the exec's exit code")
	require.NotEqual(t, 0, code)
}
