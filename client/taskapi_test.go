package client

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/client/taskapi"
)

// TestTaskAPI_ACLsOffAcceptsOwnIdentitiesOnly: with ACLs off, a raw_exec
// task's NOMAD_UNIX_ADDR reaches the API handed to SetTaskAPIHandler with
// a workload identity of the client's allocations (as X-Nomad-Token), and
// is refused (403) with no credentials or a token the client never got.
// A task that is not raw_exec or exec gets no NOMAD_UNIX_ADDR.
func TestTaskAPI_ACLsOffAcceptsOwnIdentitiesOnly(t *testing.T) {
	srv := newFakeServer(t)
	dataDir, err := os.MkdirTemp("", "tapi") // socket paths must stay under 108 bytes
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dataDir) })
	cfg := testConfig(srv, dataDir)
	cfg.Plugins = map[string]map[string]any{"raw_exec": {"enabled": true}}
	c := startClient(t, cfg)
	waitRegistered(t, c)
	seen := make(chan string, 8)
	c.SetTaskAPIHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Get("X-Nomad-Token")
		_, _ = io.WriteString(w, "api "+r.URL.Path)
	}))

	curl := func(out, auth string) string {
		hdr := ""
		if auth != "" {
			hdr = `-H "X-Nomad-Token: ` + auth + `"`
		}
		return `curl -s -w ' %{http_code}' --unix-socket "${NOMAD_UNIX_ADDR#unix://}" ` + hdr + ` http://localhost/v1/jobs > local/` + out
	}
	script := strings.Join([]string{curl("own", "$NOMAD_TOKEN"), curl("forged", "a.b.c"), curl("none", "")}, "; ")
	a := rawExecAlloc(c.NodeID(), time.Second, "/bin/sh", "-c", script)
	a.Job.Type = ptr("batch")
	task := a.Job.TaskGroups[0].Tasks[0]
	task.Identity = &api.WorkloadIdentity{Env: true}
	srv.upsertAllocWithIdentities(a, map[string]string{"t": "jwt.of.t"})
	require.Eventually(t, func() bool { return srv.clientStatus(a.ID) == "complete" }, waitFor, tick, "status %s", srv.clientStatus(a.ID))

	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(cfg.AllocDir(), a.ID, "t", "local", name))
		require.NoError(t, err)
		return string(b)
	}
	require.Equal(t, "api /v1/jobs 200", read("own"))
	require.Equal(t, "jwt.of.t", <-seen)
	require.Contains(t, read("forged"), "403")
	require.Contains(t, read("forged"), taskapi.ErrUnknownIdentity.Error())
	require.Contains(t, read("none"), "403")
	require.Contains(t, read("none"), taskapi.ErrNoCredentials.Error())
	require.Len(t, seen, 0, "refused requests never reach the API")

	m := mockAlloc(c.NodeID(), map[string]any{"run_for": "1h", "stdout_string": "addr=${NOMAD_UNIX_ADDR}.\n"})
	srv.upsertAlloc(m)
	require.Eventually(t, func() bool { return srv.clientStatus(m.ID) == "running" }, waitFor, tick)
	logPath, err := c.runner(m.ID).LogPath("t", "stdout")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		raw, _ := os.ReadFile(logPath)
		return strings.Contains(string(raw), "\n")
	}, waitFor, tick)
	raw, _ := os.ReadFile(logPath)
	require.Equal(t, "addr=${NOMAD_UNIX_ADDR}.\n", string(raw), "the mock driver's task has no NOMAD_UNIX_ADDR")
}
