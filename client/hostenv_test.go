package client

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A raw_exec task starts from the client's environment less env.denylist,
// as in Nomad: PATH and HOME are there, VAULT_TOKEN (Nomad's default list)
// and a name added to the list are not, and NOMAD_* is the task's own.
func TestRawExecInheritsHostEnvLessDenylist(t *testing.T) {
	t.Setenv("VAULT_TOKEN", "s.must-not-leak")
	t.Setenv("DROVER_TEST_DENIED", "must-not-leak")
	t.Setenv("DROVER_TEST_KEPT", "kept")
	t.Setenv("NOMAD_ALLOC_ID", "from-the-agent")
	srv := newFakeServer(t)
	cfg := testConfig(srv, t.TempDir())
	cfg.Plugins = map[string]map[string]any{"raw_exec": {"enabled": true}}
	cfg.Options["env.denylist"] = "VAULT_TOKEN,DROVER_TEST_DENIED"
	c := startClient(t, cfg)
	waitRegistered(t, c)

	a := mockAlloc(c.NodeID(), map[string]any{
		"command": "/bin/sh", "args": []any{"-c", `env > "$NOMAD_TASK_DIR/env.txt"`},
	})
	a.Job.TaskGroups[0].Tasks[0].Driver = "raw_exec"
	srv.upsertAlloc(a)
	require.Eventually(t, func() bool { return srv.clientStatus(a.ID) == "complete" }, waitFor, tick)

	out, err := os.ReadFile(filepath.Join(cfg.DataDir, "alloc", a.ID, "t", "local", "env.txt"))
	require.NoError(t, err)
	env := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	require.Equal(t, os.Getenv("PATH"), env["PATH"])
	require.Equal(t, "kept", env["DROVER_TEST_KEPT"])
	require.NotContains(t, env, "VAULT_TOKEN")
	require.NotContains(t, env, "DROVER_TEST_DENIED")
	require.Equal(t, a.ID, env["NOMAD_ALLOC_ID"], "the task's own NOMAD_* wins")
}
