package agent

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/command/agent/config"
	"github.com/drover-project/drover/testutil/taskprocs"
)

// TestContractTaskAPI_SocketWithWorkloadIdentity: a raw_exec task of an
// ACL-enabled dev agent reaches the agent's API on NOMAD_UNIX_ADDR with
// curl: with its workload identity it reads its own job (200) and is
// refused another namespace's job (403); without credentials it is
// refused (403), though the anonymous policy would let it read. The
// socket is gone once the task is dead.
func TestContractTaskAPI_SocketWithWorkloadIdentity(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	cfg := config.DevConfig()
	cfg.Name = fmt.Sprintf("taskapi-%d", time.Now().UnixNano())
	cfg.Ports.HTTP, cfg.Ports.RPC = 0, 0
	// A short data dir: a client connects to a unix socket by a path of at
	// most 107 bytes, and t.TempDir's are long.
	dataDir, err := os.MkdirTemp("", "tapi")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dataDir) })
	cfg.DataDir = dataDir
	cfg.ACL.Enabled = true
	taskprocs.Cleanup(t, cfg.DataDir)
	ag, err := NewAgent(cfg, hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Warn, Output: os.Stderr}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = ag.Shutdown() })
	c, err := api.NewClient(&api.Config{Address: "http://" + ag.HTTPAddr()})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return ag.Server().IsLeader() }, 10*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool { // identities are signed at placement
		k, err := ag.Server().State().ActiveRootKey(nil)
		return err == nil && k != nil
	}, 10*time.Second, 20*time.Millisecond)
	root, _, err := c.ACLTokens().Bootstrap(nil)
	require.NoError(t, err)
	c.SetSecretID(root.SecretID)
	require.Eventually(t, func() bool {
		nodes, _, err := c.Nodes().List(nil)
		return err == nil && len(nodes) == 1
	}, 20*time.Second, 50*time.Millisecond)
	// The anonymous policy may read jobs: the socket must still refuse a
	// request without credentials.
	_, err = c.ACLPolicies().Upsert(&api.ACLPolicy{Name: "anonymous", Rules: `namespace "*" { policy = "read" }`}, nil)
	require.NoError(t, err)
	_, err = c.Namespaces().Register(&api.Namespace{Name: "other"}, nil)
	require.NoError(t, err)
	other := testJob("elsewhere")
	other.Namespace = new("other")
	_, _, err = c.Jobs().Register(other, nil)
	require.NoError(t, err)

	probe := func(out, path, auth string) string {
		hdr := ""
		if auth != "" {
			hdr = fmt.Sprintf(`-H "Authorization: Bearer %s"`, auth)
		}
		return fmt.Sprintf(`curl -s -o /dev/null -w '%%{http_code}' --unix-socket "${NOMAD_UNIX_ADDR#unix://}" %s 'http://localhost%s' > local/%s`, hdr, path, out)
	}
	script := strings.Join([]string{
		`echo "$NOMAD_UNIX_ADDR" > local/addr`,
		probe("own", "/v1/job/reader", "$NOMAD_TOKEN"),
		probe("other", "/v1/job/elsewhere?namespace=other", "$NOMAD_TOKEN"),
		probe("anon", "/v1/job/reader", ""),
	}, "; ")
	job := api.NewBatchJob("reader", "reader", "global", 50)
	job.Datacenters = []string{"dc1"}
	task := api.NewTask("probe", "raw_exec").SetConfig("command", "/bin/sh").SetConfig("args", []string{"-c", script})
	task.Resources = &api.Resources{CPU: new(100), MemoryMB: new(64)}
	task.Identities = []*api.WorkloadIdentity{{Env: true}}
	job.AddTaskGroup(api.NewTaskGroup("g", 1).AddTask(task))
	_, _, err = c.Jobs().Register(job, nil)
	require.NoError(t, err)

	var alloc *api.AllocationListStub
	require.Eventually(t, func() bool {
		allocs, _, err := c.Jobs().Allocations("reader", false, nil)
		if err != nil || len(allocs) != 1 {
			return false
		}
		alloc = allocs[0]
		return alloc.ClientStatus == "complete" || alloc.ClientStatus == "failed"
	}, 30*time.Second, 50*time.Millisecond)
	require.Equal(t, "complete", alloc.ClientStatus, "%+v", alloc.TaskStates)

	taskDir := filepath.Join(cfg.DataDir, "alloc", alloc.ID, "probe")
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(taskDir, "local", name))
		require.NoError(t, err, name)
		return strings.TrimSpace(string(b))
	}
	require.Equal(t, "unix://"+filepath.Join(taskDir, "secrets", "api.sock"), read("addr"))
	require.Equal(t, "200", read("own"), "its identity reads its own job")
	require.Equal(t, "403", read("other"), "and not another namespace's")
	require.Equal(t, "403", read("anon"), "no credentials, no API")
	require.Eventually(t, func() bool {
		_, err := os.Lstat(filepath.Join(taskDir, "secrets", "api.sock"))
		return os.IsNotExist(err)
	}, 10*time.Second, 20*time.Millisecond, "the socket is removed once the task is dead")
}
