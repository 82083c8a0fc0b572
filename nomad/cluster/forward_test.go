package cluster

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestForwardToLeader_NoLeader(t *testing.T) {
	// bootstrap_expect=0 and nobody to join: never a leader.
	n := startNode(t, "lonely", nodeOpts{expect: 0})
	n.c.leaderWait = 200 * time.Millisecond

	start := time.Now()
	resp, err := http.Post(n.api.URL+"/v1/apply", "text/plain", strings.NewReader("x"))
	require.NoError(t, err)
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode) // POST not routed by the test mux
	resp.Body.Close()

	req, _ := http.NewRequest(http.MethodPut, n.api.URL+"/v1/apply", strings.NewReader("x"))
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	require.Equal(t, "No cluster leader", string(body))
	require.GreaterOrEqual(t, time.Since(start), n.c.leaderWait)
	require.Empty(t, n.fsm.Entries())
	require.Greater(t, n.c.LastContact(), time.Duration(0))
}

func TestForwardToLeader_RefusesLoop(t *testing.T) {
	n := startNode(t, "lonely", nodeOpts{expect: 0})
	req := httptest.NewRequest(http.MethodPut, "/v1/apply", strings.NewReader("x"))
	req.Header.Set(ForwardedHeader, "1")
	rec := httptest.NewRecorder()
	require.True(t, n.c.ForwardToLeader(rec, req))
	require.Equal(t, http.StatusInternalServerError, rec.Code)
	require.Equal(t, msgForwardLoop, rec.Body.String())
}

func TestForwardToLeader_LeaderHandlesLocally(t *testing.T) {
	n := startNode(t, "solo", nodeOpts{expect: 1})
	waitLeader(t, []*testNode{n})
	rec := httptest.NewRecorder()
	require.False(t, n.c.ForwardToLeader(rec, httptest.NewRequest(http.MethodPut, "/v1/apply", nil)))
	require.Zero(t, rec.Body.Len())
}

// The proxy keeps method, path, query, headers and body, strips hop-by-hop
// headers, marks the request, and copies status, headers and body back.
func TestProxy_CopiesRequestAndResponse(t *testing.T) {
	var got *http.Request
	var gotBody string
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	m := newMux(ln, advertised(ln.Addr().String()), nil, testLogger("mux"))
	m.start()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		b, _ := io.ReadAll(r.Body)
		gotBody = string(b)
		w.Header().Set("X-Nomad-Index", "42")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, "created")
	})}
	go func() { _ = srv.Serve(m.http) }()
	defer func() { _ = srv.Close(); _ = m.close() }()
	front := startNode(t, "front", nodeOpts{expect: 0})

	req := httptest.NewRequest(http.MethodPost, "/v1/jobs/a%2Fb?index=7&wait=1s", strings.NewReader("payload"))
	req.Header.Set("X-Nomad-Token", "secret")
	req.Header.Set("Connection", "X-Drop-Me")
	req.Header.Set("X-Drop-Me", "1")
	rec := httptest.NewRecorder()
	front.c.proxy(rec, req, ln.Addr().String())

	require.Equal(t, http.StatusCreated, rec.Code)
	require.Equal(t, "created", rec.Body.String())
	require.Equal(t, "42", rec.Header().Get("X-Nomad-Index"))
	require.NotNil(t, got)
	require.Equal(t, http.MethodPost, got.Method)
	require.Equal(t, "/v1/jobs/a%2Fb", got.URL.EscapedPath())
	require.Equal(t, "index=7&wait=1s", got.URL.RawQuery)
	require.Equal(t, "payload", gotBody)
	require.Equal(t, "secret", got.Header.Get("X-Nomad-Token"))
	require.Equal(t, "1", got.Header.Get(ForwardedHeader))
	require.Empty(t, got.Header.Get("X-Drop-Me"))
	host, _, _ := net.SplitHostPort(req.RemoteAddr)
	require.Equal(t, host, got.Header.Get("X-Forwarded-For"))
}
