package client

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

func TestParseExecQuery(t *testing.T) {
	for query, want := range map[string]string{
		"command=%5B%22ls%22%5D":                          "task not present",
		"task=t":                                          "command is not present",
		"task=t&command=%5B%5D":                           "command is not present",
		"task=t&command=ls":                               "command must be a JSON array of strings",
		"task=t&command=%5B%22ls%22%5D&tty=maybe":         `tty must be a bool, got "maybe"`,
		"task=t&command=%5B%22ls%22%2C%22-l%22%5D&tty=1":  "",
		"task=t&command=%5B%22sh%22%5D&tty=false&extra=1": "",
	} {
		r := httptest.NewRequest(http.MethodGet, "/v1/client/allocation/x/exec?"+query, nil)
		task, cmd, _, err := ParseExecQuery(r)
		if want == "" {
			require.NoError(t, err, query)
			require.Equal(t, "t", task)
			require.NotEmpty(t, cmd)
			continue
		}
		require.ErrorContains(t, err, want, query)
	}
	r := httptest.NewRequest(http.MethodGet, "/x?task=t&command=%5B%22ls%22%2C%22-l%22%5D&tty=true", nil)
	task, cmd, tty, err := ParseExecQuery(r)
	require.NoError(t, err)
	require.Equal(t, "t", task)
	require.Equal(t, []string{"ls", "-l"}, cmd)
	require.True(t, tty)
}

// execClient starts a client with ACLs on and raw_exec enabled, running one
// raw_exec allocation whose task "t" sleeps; it returns an HTTP server for
// the client's endpoints and the allocation.
func execClient(t *testing.T) (*httptest.Server, *api.Allocation) {
	t.Helper()
	srv := newFakeServer(t)
	srv.rights = map[string]*clientRights{
		"":         {ACLEnabled: true},
		"exec":     {ACLEnabled: true, Capabilities: []string{"alloc-exec"}},
		"nodeexec": {ACLEnabled: true, Capabilities: []string{"alloc-exec", "alloc-node-exec"}},
	}
	cfg := testConfig(srv, t.TempDir())
	cfg.ACLEnabled = true
	cfg.Plugins = map[string]map[string]any{"raw_exec": {"enabled": true}}
	c := startClient(t, cfg)
	waitRegistered(t, c)
	a := mockAlloc(c.NodeID(), map[string]any{"command": "/bin/sleep", "args": []any{"3600"}})
	a.Job.TaskGroups[0].Tasks[0].Driver = "raw_exec"
	srv.upsertAlloc(a)
	require.Eventually(t, func() bool { return srv.clientStatus(a.ID) == "running" }, waitFor, tick)
	hs := httptest.NewServer(c.Handler())
	t.Cleanup(hs.Close)
	return hs, a
}

// TestAllocExec_ACLAndSession: the api client's Exec against the client's
// own endpoint: a raw_exec task needs alloc-exec and alloc-node-exec; with
// both the command runs with its output and exit code.
func TestAllocExec_ACLAndSession(t *testing.T) {
	hs, a := execClient(t)
	exec := func(token string, cmd ...string) (int, string, error) {
		c, err := api.NewClient(&api.Config{Address: hs.URL, SecretID: token})
		require.NoError(t, err)
		var out bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		code, err := c.Allocations().Exec(ctx, a, "t", false, cmd, strings.NewReader("piped in"), &out, &out,
			make(chan api.TerminalSize), nil)
		return code, out.String(), err
	}
	_, _, err := exec("", "true")
	require.EqualError(t, err, "Permission denied")
	_, _, err = exec("exec", "true")
	require.EqualError(t, err, "Permission denied", "raw_exec needs alloc-node-exec too")
	_, _, err = exec("stolen", "true")
	require.EqualError(t, err, "ACL token not found")
	code, out, err := exec("nodeexec", "/bin/sh", "-c", "cat; echo; echo done; exit 2")
	require.NoError(t, err)
	require.Equal(t, 2, code)
	require.Equal(t, "piped in\ndone\n", out)

	// A request that is not a websocket gets its error as plain HTTP.
	req, err := http.NewRequest(http.MethodGet, hs.URL+"/v1/client/allocation/"+a.ID+"/exec?task=t", nil)
	require.NoError(t, err)
	req.Header.Set("X-Nomad-Token", "nodeexec")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

// TestAllocExec_CallerGoneKillsCommand: when the caller's connection ends,
// the command (and what it started) is killed.
func TestAllocExec_CallerGoneKillsCommand(t *testing.T) {
	hs, a := execClient(t)
	marker := filepath.Join(t.TempDir(), "marker")
	q := url.Values{"task": {"t"}, "command": {`["/bin/sh","-c","echo started; sleep 1; touch ` + marker + `"]`}}
	u := "ws" + strings.TrimPrefix(hs.URL, "http") + "/v1/client/allocation/" + a.ID + "/exec?" + q.Encode()
	conn, _, err := websocket.DefaultDialer.Dial(u, http.Header{"X-Nomad-Token": {"nodeexec"}})
	require.NoError(t, err)
	var frame api.ExecStreamingOutput
	require.NoError(t, conn.ReadJSON(&frame))
	require.NotNil(t, frame.Stdout, "the first frame is the command's output")
	require.Equal(t, "started\n", string(frame.Stdout.Data))
	conn.Close()
	time.Sleep(1500 * time.Millisecond)
	_, err = os.Stat(marker)
	require.True(t, errors.Is(err, os.ErrNotExist), "the command outlived its caller")
}

// TestAllocExec_CallerGoneWhileInputBlocked: a command that does not read
// its input while the caller sent more than the pipes hold is still killed
// when the caller goes (the heartbeat notices).
func TestAllocExec_CallerGoneWhileInputBlocked(t *testing.T) {
	old := execHeartbeat
	execHeartbeat = 50 * time.Millisecond
	t.Cleanup(func() { execHeartbeat = old })
	hs, a := execClient(t)
	marker := filepath.Join(t.TempDir(), "marker")
	q := url.Values{"task": {"t"}, "command": {`["/bin/sh","-c","sleep 1; touch ` + marker + `"]`}}
	u := "ws" + strings.TrimPrefix(hs.URL, "http") + "/v1/client/allocation/" + a.ID + "/exec?" + q.Encode()
	conn, _, err := websocket.DefaultDialer.Dial(u, http.Header{"X-Nomad-Token": {"nodeexec"}})
	require.NoError(t, err)
	chunk := bytes.Repeat([]byte("x"), 32<<10)
	for range 8 { // 256 KiB: more than the OS pipe holds
		require.NoError(t, conn.WriteJSON(api.ExecStreamingInput{Stdin: &api.ExecStreamingIOOperation{Data: chunk}}))
	}
	conn.Close()
	time.Sleep(1500 * time.Millisecond)
	_, err = os.Stat(marker)
	require.True(t, errors.Is(err, os.ErrNotExist), "the command outlived its caller")
}
