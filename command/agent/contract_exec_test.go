package agent

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// runningAlloc registers job and returns its running allocation.
func runningAlloc(t *testing.T, c *api.Client, job *api.Job) *api.Allocation {
	t.Helper()
	registerAndWait(t, c, job)
	var alloc *api.Allocation
	require.Eventually(t, func() bool {
		stubs, _, err := c.Jobs().Allocations(*job.ID, false, nil)
		if err != nil || len(stubs) != 1 || stubs[0].ClientStatus != "running" {
			return false
		}
		alloc, _, err = c.Allocations().Info(stubs[0].ID, nil)
		return err == nil
	}, 20*time.Second, 50*time.Millisecond)
	return alloc
}

// execResult is what one exec through the api client gave.
type execResult struct {
	code           int
	stdout, stderr string
	err            error
}

func execIn(c *api.Client, alloc *api.Allocation, task string, tty bool, stdin string, cmd ...string) execResult {
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	code, err := c.Allocations().Exec(ctx, alloc, task, tty, cmd, strings.NewReader(stdin), &out, &errOut,
		make(chan api.TerminalSize), nil)
	return execResult{code: code, stdout: out.String(), stderr: errOut.String(), err: err}
}

// TestContractAllocExec: the api client's Allocations().Exec runs commands
// in a raw_exec task (its directory, its environment, stdin, stdout and
// stderr apart, a terminal with tty) and reports the exit code; errors come
// back as the api client reports them.
func TestContractAllocExec(t *testing.T) {
	_, c := newDevAgent(t)
	alloc := runningAlloc(t, c, testJob("web"))

	r := execIn(c, alloc, "server", false, "",
		"/bin/sh", "-c", "echo out; echo err >&2; echo $NOMAD_TASK_NAME; echo $(pwd)/local; echo $NOMAD_TASK_DIR; exit 3")
	require.NoError(t, r.err)
	require.Equal(t, 3, r.code)
	lines := strings.Split(r.stdout, "\n")
	require.Len(t, lines, 5, r.stdout)
	require.Equal(t, []string{"out", "server"}, lines[:2])
	require.Equal(t, lines[3], lines[2], "runs in the task dir, whose local/ is NOMAD_TASK_DIR")
	require.True(t, strings.HasSuffix(lines[2], alloc.ID+"/server/local"), lines[2])
	require.Equal(t, "err\n", r.stderr)

	r = execIn(c, alloc, "server", false, "hello\nworld\n", "cat")
	require.NoError(t, r.err)
	require.Equal(t, 0, r.code)
	require.Equal(t, "hello\nworld\n", r.stdout)

	r = execIn(c, alloc, "server", true, "", "/bin/sh", "-c", "test -t 0 && test -t 1 && echo on a terminal")
	require.NoError(t, r.err)
	require.Equal(t, 0, r.code)
	require.Equal(t, "on a terminal\r\n", r.stdout, "a terminal turns \\n into \\r\\n")

	r = execIn(c, alloc, "server", false, "", "/no/such/program")
	require.Equal(t, -2, r.code)
	require.ErrorContains(t, r.err, "/no/such/program")

	r = execIn(c, alloc, "nope", false, "", "true")
	require.Equal(t, -2, r.code)
	require.EqualError(t, r.err, `unknown task name "nope"`)

	missing := &api.Allocation{ID: uuid.NewString(), NodeID: uuid.NewString()}
	r = execIn(c, missing, "server", false, "", "true")
	require.Equal(t, -2, r.code)
	require.EqualError(t, r.err, fmt.Sprintf("Unknown allocation %q", missing.ID))
}

// TestContractAllocExecMockRefuses: a driver without exec says so.
func TestContractAllocExecMockRefuses(t *testing.T) {
	_, c := newDevAgent(t)
	job := testJob("mocked")
	job.TaskGroups[0].Tasks[0].Driver = "mock"
	job.TaskGroups[0].Tasks[0].Config = map[string]any{}
	alloc := runningAlloc(t, c, job)
	r := execIn(c, alloc, "server", false, "", "true")
	require.Equal(t, -2, r.code)
	require.EqualError(t, r.err, "driver does not support exec")
}

// TestContractAllocExecACL: the server refuses an exec without alloc-exec
// in the allocation's namespace, and a raw_exec one without
// alloc-node-exec too, before reaching the node; with both, the session is
// forwarded to the node (here a registered node without an HTTP address).
func TestContractAllocExecACL(t *testing.T) {
	ta := newACLTestAgent(t)
	nodeID := ta.registerNode(t, "node-1")
	alloc := allocOnNode(t, ta.client, testJob("web"), nodeID)

	cases := map[string]string{
		`namespace "default" { capabilities = ["read-job"] }`:                      "Permission denied",
		`namespace "default" { capabilities = ["alloc-exec"] }`:                    "Permission denied",
		`namespace "default" { capabilities = ["alloc-exec", "alloc-node-exec"] }`: "node " + nodeID + " has no HTTP address",
	}
	i := 0
	for rules, want := range cases {
		i++
		tok := ta.tokenFor(t, fmt.Sprintf("exec-%d", i), rules)
		r := execIn(ta.clientWith(t, tok.SecretID), alloc, "server", false, "", "true")
		require.Equal(t, -2, r.code)
		require.EqualError(t, r.err, want, rules)
	}
}

// allocOnNode registers job and returns its allocation on nodeID
// (a registered node without a client agent: the allocation stays pending).
func allocOnNode(t *testing.T, c *api.Client, job *api.Job, nodeID string) *api.Allocation {
	t.Helper()
	registerAndWait(t, c, job)
	stubs, _, err := c.Jobs().Allocations(*job.ID, false, nil)
	require.NoError(t, err)
	require.Len(t, stubs, 1)
	require.Equal(t, nodeID, stubs[0].NodeID)
	alloc, _, err := c.Allocations().Info(stubs[0].ID, nil)
	require.NoError(t, err)
	return alloc
}
