package client

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// TestIdentity_DeliveredInEnvAndFiles: the identities the server signed
// reach the task before it starts: NOMAD_TOKEN in its environment (the
// mock driver interpolates it into its stdout), secrets/nomad_token and
// secrets/nomad_<name>.jwt in its task dir; a named identity without
// env = true is not in the environment.
func TestIdentity_DeliveredInEnvAndFiles(t *testing.T) {
	srv := newFakeServer(t)
	cfg := testConfig(srv, t.TempDir())
	c := startClient(t, cfg)
	waitRegistered(t, c)

	a := mockAlloc(c.NodeID(), map[string]any{
		"run_for": "1h", "stdout_string": "token=${NOMAD_TOKEN} vault=${NOMAD_TOKEN_vault}\n",
	})
	task := a.Job.TaskGroups[0].Tasks[0]
	task.Identity = &api.WorkloadIdentity{Env: true, File: true}
	task.Identities = []*api.WorkloadIdentity{{Name: "vault", Audience: []string{"vault.io"}, File: true}}
	srv.upsertAllocWithIdentities(a, map[string]string{"t": "jwt-default", "t/vault": "jwt-vault"})
	require.Eventually(t, func() bool { return srv.clientStatus(a.ID) == "running" }, waitFor, tick)

	taskDir := filepath.Join(cfg.AllocDir(), a.ID, "t")
	tok, err := os.ReadFile(filepath.Join(taskDir, "secrets", "nomad_token"))
	require.NoError(t, err)
	require.Equal(t, "jwt-default", string(tok))
	vault, err := os.ReadFile(filepath.Join(taskDir, "secrets", "nomad_vault.jwt"))
	require.NoError(t, err)
	require.Equal(t, "jwt-vault", string(vault))

	logPath, err := c.runner(a.ID).LogPath("t", "stdout")
	require.NoError(t, err)
	var out string
	require.Eventually(t, func() bool {
		raw, _ := os.ReadFile(logPath)
		out = string(raw)
		return strings.Contains(out, "\n")
	}, waitFor, tick)
	require.Contains(t, out, "token=jwt-default ")
	require.NotContains(t, out, "jwt-vault", "the named identity has env = false")
}

// TestIdentity_UnsignedFailsTheTask: a task whose identity the server did
// not sign does not start without it; it fails with a setup error.
func TestIdentity_UnsignedFailsTheTask(t *testing.T) {
	srv := newFakeServer(t)
	cfg := testConfig(srv, t.TempDir())
	c := startClient(t, cfg)
	waitRegistered(t, c)

	a := mockAlloc(c.NodeID(), map[string]any{"run_for": "1h"})
	a.Job.TaskGroups[0].Tasks[0].Identity = &api.WorkloadIdentity{Env: true}
	srv.upsertAlloc(a)
	require.Eventually(t, func() bool { return srv.clientStatus(a.ID) == "failed" }, 10*time.Second, tick)
	ts := srv.taskState(a.ID, "t")
	require.NotNil(t, ts)
	var msgs []string
	for _, e := range ts.Events {
		msgs = append(msgs, e.DisplayMessage+" "+e.DriverError+" "+e.SetupError)
	}
	require.Contains(t, strings.Join(msgs, "\n"), `identity "default" of task "t" was not signed by the server`)
}
