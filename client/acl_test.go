package client

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestClientEndpoints_ACL: with ACLs on, the client's own endpoints ask a
// server for the caller's rights (cached) and require read-logs for logs,
// read-job for alloc stats, node read for host stats; an unknown token is
// refused with the server's message.
func TestClientEndpoints_ACL(t *testing.T) {
	srv := newFakeServer(t)
	srv.rights = map[string]*clientRights{
		"":     {ACLEnabled: true}, // anonymous: nothing
		"logs": {ACLEnabled: true, Capabilities: []string{"read-logs"}},
		"job":  {ACLEnabled: true, Capabilities: []string{"read-job"}},
		"node": {ACLEnabled: true, NodeRead: true},
		"mgmt": {ACLEnabled: true, Management: true},
	}
	cfg := testConfig(srv, t.TempDir())
	cfg.ACLEnabled = true
	var offset atomic.Int64
	cfg.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	c := startClient(t, cfg)
	waitRegistered(t, c)
	a := mockAlloc(c.NodeID(), map[string]any{"run_for": "1h", "stdout_string": "secret output\n"})
	srv.upsertAlloc(a)
	require.Eventually(t, func() bool { return srv.clientStatus(a.ID) == "running" }, waitFor, tick)

	h := c.Handler()
	get := func(path, token string) (int, string) {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		if token != "" {
			req.Header.Set("X-Nomad-Token", token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	logs := "/v1/client/fs/logs/" + a.ID + "?task=t&type=stdout&plain=true"
	stats := "/v1/client/allocation/" + a.ID + "/stats"
	host := "/v1/client/stats"
	cases := []struct {
		path, token string
		code        int
		body        string
	}{
		{logs, "", http.StatusForbidden, "Permission denied"},
		{logs, "job", http.StatusForbidden, "Permission denied"},
		{logs, "logs", http.StatusOK, "secret output"},
		{logs, "mgmt", http.StatusOK, "secret output"},
		{logs, "stolen", http.StatusForbidden, "ACL token not found"},
		{stats, "logs", http.StatusForbidden, "Permission denied"},
		{stats, "job", http.StatusOK, "ResourceUsage"},
		{host, "job", http.StatusForbidden, "Permission denied"},
		{host, "node", http.StatusOK, "Memory"},
		{"/v1/client/fs/logs/unknown-alloc?task=t", "logs", http.StatusNotFound, "Unknown allocation"},
	}
	for _, tc := range cases {
		code, body := get(tc.path, tc.token)
		require.Equal(t, tc.code, code, "%s with %q: %s", tc.path, tc.token, body)
		require.Contains(t, body, tc.body, "%s with %q", tc.path, tc.token)
	}

	// Rights are cached per token and namespace: asking again costs no call.
	before := srv.resolveCount()
	code, _ := get(logs, "logs")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, before, srv.resolveCount())

	// Past the cache's lifetime the server is asked again (a revoked token
	// stops working).
	srv.mu.Lock()
	delete(srv.rights, "logs")
	srv.mu.Unlock()
	offset.Store(int64(aclCacheTTL + time.Second))
	code, body := get(logs, "logs")
	require.Equal(t, http.StatusForbidden, code, body)
	require.Contains(t, body, "ACL token not found")
}

// TestClientEndpoints_ACLOff: without ACLs the endpoints ask nothing.
func TestClientEndpoints_ACLOff(t *testing.T) {
	c, srv, a := runningLogAlloc(t, map[string]any{"run_for": "1h", "stdout_string": "hi\n"})
	rec := httptest.NewRecorder()
	c.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/client/fs/logs/"+a.ID+"?task=t&plain=true", nil))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.Zero(t, srv.resolveCount())
}
