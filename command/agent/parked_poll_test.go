package agent

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/wire"
)

// pollClient asks one node's allocation query over plain HTTP/1.1 with
// its own transport, recording whether each request reused a connection.
type pollClient struct {
	t              *testing.T
	url            string
	nodeID, secret string
	http           *http.Client
}

func newPollClient(t *testing.T, ta *testAgent, nodeID, secret string) *pollClient {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &pollClient{t: t, url: "http://" + ta.HTTPAddr() + wire.NodePath(wire.RouteNodeAllocs, nodeID),
		nodeID: nodeID, secret: secret, http: &http.Client{Transport: tr}}
}

type pollResult struct {
	allocs []*api.Allocation
	index  uint64
	reused bool
	header http.Header
	err    error
}

// ask runs the query at index with wait; header edits the request.
func (pc *pollClient) ask(index uint64, wait time.Duration, header func(http.Header)) pollResult {
	var res pollResult
	req, err := http.NewRequest("GET", fmt.Sprintf("%s?index=%d&wait=%dms", pc.url, index, wait.Milliseconds()), nil)
	if err != nil {
		return pollResult{err: err}
	}
	req.Header.Set("X-Nomad-Token", pc.secret)
	if header != nil {
		header(req.Header)
	}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) { res.reused = info.Reused },
	}))
	resp, err := pc.http.Do(req)
	if err != nil {
		return pollResult{err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return pollResult{err: err}
	}
	if resp.StatusCode != http.StatusOK {
		return pollResult{err: fmt.Errorf("status %d: %s", resp.StatusCode, body)}
	}
	if err := json.Unmarshal(body, &res.allocs); err != nil {
		return pollResult{err: err}
	}
	res.index, res.err = strconv.ParseUint(resp.Header.Get("X-Nomad-Index"), 10, 64)
	res.header = resp.Header
	return res
}

// askAsync is ask on its own goroutine.
func (pc *pollClient) askAsync(index uint64, wait time.Duration, header func(http.Header)) <-chan pollResult {
	ch := make(chan pollResult, 1)
	go func() { ch <- pc.ask(index, wait, header) }()
	return ch
}

// newParkedPollAgent starts an agent with one registered node and asks
// that node's allocations once, without waiting: the answer's index is
// where the test's polls wait.
func newParkedPollAgent(t *testing.T) (ta *testAgent, pc *pollClient, first pollResult) {
	t.Helper()
	ta = newTestAgent(t, "")
	nodeID, secret := ta.registerNodeWithSecret(t, "node-1")
	pc = newPollClient(t, ta, nodeID, secret)
	first = pc.ask(0, 0, nil)
	require.NoError(t, first.err)
	return ta, pc, first
}

func waitParkedCount(t *testing.T, ta *testAgent, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return ta.polls.count() == n }, 5*time.Second, 5*time.Millisecond,
		"parked polls: want %d", n)
}

// TestParkedPoll_AnsweredOnChangeOnTheSameConnection: a node's poll that
// would wait parks outside net/http, is answered when the server places
// an allocation on the node, with the query meta headers serve sets, and
// the client's next request reuses the connection the answer came on.
func TestParkedPoll_AnsweredOnChangeOnTheSameConnection(t *testing.T) {
	ta, pc, first := newParkedPollAgent(t)
	require.Empty(t, first.allocs)
	require.Equal(t, 0, ta.polls.count(), "an answer due now does not park")

	pending := pc.askAsync(first.index, 30*time.Second, nil)
	waitParkedCount(t, ta, 1)
	resp, _, err := ta.client.Jobs().Register(testJob("web"), nil)
	require.NoError(t, err)
	require.Equal(t, "complete", waitEvalComplete(t, ta.client, resp.EvalID).Status)
	var r pollResult
	select {
	case r = <-pending:
	case <-time.After(10 * time.Second):
		t.Fatal("the parked poll was not answered by the placement")
	}
	require.NoError(t, r.err)
	require.Greater(t, r.index, first.index)
	require.Len(t, r.allocs, 1)
	require.Equal(t, "web", r.allocs[0].JobID)
	require.True(t, r.reused, "the poll went on the first request's connection")
	require.Equal(t, "true", r.header.Get("X-Nomad-KnownLeader"))
	require.NotEmpty(t, r.header.Get("X-Nomad-LastContact"))
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	require.Equal(t, 0, ta.polls.count())

	// The handed-back connection serves the next request, which parks
	// again and is answered at the end of its wait with the same index.
	start := time.Now()
	pending = pc.askAsync(r.index, 300*time.Millisecond, nil)
	waitParkedCount(t, ta, 1)
	next := <-pending
	require.NoError(t, next.err)
	require.True(t, next.reused, "the handed-back connection served the next request")
	require.Equal(t, r.index, next.index, "a wait's end answers with the current index")
	require.Len(t, next.allocs, 1)
	require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	require.Equal(t, 0, ta.polls.count())
}

// TestParkedPoll_WhatDoesNotPark: a request that asks to close its
// connection (TestCanPark: it does not park) is answered at its wait's
// end, and one with a bad secret is refused at once, before any wait.
func TestParkedPoll_WhatDoesNotPark(t *testing.T) {
	ta, pc, first := newParkedPollAgent(t)

	pending := pc.askAsync(first.index, 400*time.Millisecond, func(h http.Header) { h.Set("Connection", "close") })
	r := <-pending
	require.NoError(t, r.err)
	require.Equal(t, first.index, r.index)

	bad := newPollClient(t, ta, pc.nodeID, "not-the-secret")
	start := time.Now()
	r = bad.ask(first.index, 30*time.Second, nil)
	require.Error(t, r.err)
	require.Contains(t, r.err.Error(), "status 403")
	require.Less(t, time.Since(start), 10*time.Second, "refused without waiting out the 30 s")
	require.Equal(t, 0, ta.polls.count())
}

// TestParkedPoll_PipelinedRequestIsServedAfter: a request pipelined
// behind a parked poll on the same connection is served, in order, once
// the poll is answered.
func TestParkedPoll_PipelinedRequestIsServedAfter(t *testing.T) {
	ta, pc, first := newParkedPollAgent(t)

	conn, err := net.Dial("tcp", ta.HTTPAddr())
	require.NoError(t, err)
	defer conn.Close()
	path := wire.NodePath(wire.RouteNodeAllocs, pc.nodeID)
	_, err = fmt.Fprintf(conn, "GET %s?index=%d&wait=300ms HTTP/1.1\r\nHost: x\r\nX-Nomad-Token: %s\r\n\r\n"+
		"GET /v1/status/leader HTTP/1.1\r\nHost: x\r\n\r\n", path, first.index, pc.secret)
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	br := bufio.NewReader(conn)
	poll, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	body, err := io.ReadAll(poll.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, poll.StatusCode)
	require.JSONEq(t, "[]", string(body))
	require.Equal(t, strconv.FormatUint(first.index, 10), poll.Header.Get("X-Nomad-Index"))
	leader, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	body, err = io.ReadAll(leader.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, leader.StatusCode)
	require.Contains(t, string(body), ":", "the leader's address")
}

// TestParkedPoll_ShutdownEndsParkedPolls: an agent shutting down closes
// its parked polls' connections at once instead of waiting out their
// waits.
func TestParkedPoll_ShutdownEndsParkedPolls(t *testing.T) {
	ta, pc, first := newParkedPollAgent(t)
	pending := pc.askAsync(first.index, time.Minute, nil)
	waitParkedCount(t, ta, 1)

	start := time.Now()
	require.NoError(t, ta.Shutdown())
	require.Less(t, time.Since(start), 5*time.Second)
	select {
	case r := <-pending:
		require.Error(t, r.err, "the connection was closed unanswered")
	case <-time.After(5 * time.Second):
		t.Fatal("the parked poll outlived the agent")
	}
	require.Equal(t, 0, ta.polls.count())
}

// TestCanPark: only plain HTTP/1.1 keep-alive requests of the agent's own
// HTTP server park.
func TestCanPark(t *testing.T) {
	own, other := &http.Server{}, &http.Server{}
	p := &parkedPolls{server: own}
	request := func(edit func(r *http.Request)) *http.Request {
		r := httptest.NewRequest("GET", "/v1/internal/node/n1/allocs?index=5", nil)
		r = r.WithContext(context.WithValue(r.Context(), http.ServerContextKey, own))
		if edit != nil {
			edit(r)
		}
		return r
	}
	cases := []struct {
		name string
		p    *parkedPolls
		edit func(*http.Request)
		want bool
	}{
		{"HTTP/1.1 keep-alive", p, nil, true},
		{"an agent with a tls block", nil, nil, false},
		{"over TLS", p, func(r *http.Request) { r.TLS = &tls.ConnectionState{} }, false},
		{"HTTP/2", p, func(r *http.Request) { r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/2.0", 2, 0 }, false},
		{"HTTP/1.0", p, func(r *http.Request) { r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.0", 1, 0 }, false},
		{"Connection: close", p, func(r *http.Request) { r.Close = true }, false},
		{"another server (a task API socket)", p, func(r *http.Request) {
			*r = *r.WithContext(context.WithValue(r.Context(), http.ServerContextKey, other))
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, c.p.canPark(request(c.edit)))
		})
	}
}
