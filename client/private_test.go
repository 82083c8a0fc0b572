package client

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/testutil/taskprocs"
)

// fsNames lists the names alloc fs shows at path of alloc id.
func fsNames(t *testing.T, h http.Handler, id, path string) []string {
	t.Helper()
	code, body := fsGet(t, h, "/v1/client/fs/ls/"+id+"?path="+path)
	require.Equal(t, http.StatusOK, code, body)
	var entries []*api.AllocFileInfo
	require.NoError(t, json.Unmarshal([]byte(body), &entries))
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name)
	}
	sort.Strings(names)
	return names
}

// TestRawExecDriverFilesOutOfTheTaskDir: alloc fs of a raw_exec task,
// running or exited, shows only the task's directories, none of the
// driver's files; a
// restarted client recovers the task (its executor's files are in the
// private dir), and an exit record a task plants where older clients kept
// theirs changes nothing: the task keeps running and its exit is the real
// one. The restarted client serves the task's task API socket again.
func TestRawExecDriverFilesOutOfTheTaskDir(t *testing.T) {
	srv := newFakeServer(t)
	dataDir := t.TempDir()
	cfg := testConfig(srv, dataDir)
	cfg.Plugins = map[string]map[string]any{"raw_exec": {"enabled": true}}
	c1 := startClient(t, cfg)
	waitRegistered(t, c1)
	a := rawExecAlloc(c1.NodeID(), 5*time.Second, "/bin/sleep", "3600")
	a.Job.TaskGroups[0].Tasks[0].ShutdownDelay = 0
	srv.upsertAlloc(a)
	require.Eventually(t, func() bool { return srv.clientStatus(a.ID) == "running" }, waitFor, tick)

	h := c1.Handler()
	require.Equal(t, []string{"alloc", "t"}, fsNames(t, h, a.ID, "/"))
	require.Equal(t, []string{"local", "secrets", "tmp"}, fsNames(t, h, a.ID, "t"))
	for _, n := range fsNames(t, h, a.ID, "alloc") {
		require.NotContains(t, n, "drover", "alloc/ holds no driver file")
	}

	// The task forges an exit record for its own executor where older
	// executors wrote theirs.
	var exec taskprocs.Process
	for _, p := range taskprocs.Find(dataDir) {
		if p.Executor {
			exec = p
		}
	}
	require.NotZero(t, exec.PID, "the task's executor runs")
	forged, err := json.Marshal(map[string]any{"ExitCode": 9, "ExecutorPID": exec.PID})
	require.NoError(t, err)
	planted := filepath.Join(cfg.AllocDir(), a.ID, "t", ".drover-exit.json")
	require.NoError(t, os.WriteFile(planted, forged, 0o644))

	before := srv.taskState(a.ID, "t")
	require.NoError(t, c1.Shutdown())
	srv.resetBatches()
	cfg2 := testConfig(srv, dataDir)
	cfg2.Plugins = cfg.Plugins
	c2 := startClient(t, cfg2)
	waitRegistered(t, c2)
	require.Eventually(t, func() bool {
		r := srv.reported(a.ID)
		return len(r) > 0 && r[len(r)-1] == "running"
	}, waitFor, tick, "the restored allocation reports running")
	after := srv.taskState(a.ID, "t")
	require.Equal(t, "running", after.State)
	require.True(t, before.StartedAt.Equal(after.StartedAt), "the task was recovered, not restarted")

	// The restarted client listens on the recovered task's task API
	// socket again (through a short link: the test's data dir is deep).
	link := filepath.Join(t.TempDir(), "s")
	require.NoError(t, os.Symlink(filepath.Join(cfg.AllocDir(), a.ID, "t", "secrets"), link))
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", filepath.Join(link, "api.sock"))
	}}}
	resp, err := hc.Get("http://task-api/v1/jobs")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "served again, and wants credentials")

	srv.stopAlloc(a.ID)
	require.Eventually(t, func() bool {
		st := srv.taskState(a.ID, "t")
		return st != nil && st.State == "dead"
	}, waitFor, tick)
	var exits []string
	for _, e := range srv.taskState(a.ID, "t").Events {
		if e.Type == "Terminated" {
			exits = append(exits, e.DisplayMessage+" "+strings.TrimSpace(e.Details["exit_code"]))
			require.NotEqual(t, 9, e.ExitCode, "the planted record is not the exit")
			require.Equal(t, 15, e.Signal, "the task ended on the stop's SIGTERM")
		}
	}
	require.Len(t, exits, 1, "one real exit: %v", exits)

	// Once the task has exited (its exit recorded), alloc fs still shows
	// no driver file, the planted one aside.
	require.NoError(t, os.Remove(planted))
	require.Equal(t, []string{"local", "secrets", "tmp"}, fsNames(t, c2.Handler(), a.ID, "t"))

	// The private dir goes with the allocation.
	private := filepath.Join(cfg.AllocDir(), ".private", a.ID)
	require.DirExists(t, private)
	srv.deleteAlloc(a.ID)
	require.Eventually(t, func() bool {
		_, err := os.Stat(private)
		return os.IsNotExist(err)
	}, waitFor, tick, "the collected allocation's private dir is removed")
}
