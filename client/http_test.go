package client

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// runningLogAlloc starts a client with one mock allocation that wrote
// stdout and runs for runFor; it returns the client and the alloc.
func runningLogAlloc(t *testing.T, config map[string]any) (*Client, *fakeServer, *api.Allocation) {
	t.Helper()
	srv := newFakeServer(t)
	cfg := testConfig(srv, t.TempDir())
	cfg.timing.logPoll = 10 * time.Millisecond
	cfg.timing.logHeartbeat = 50 * time.Millisecond
	c := startClient(t, cfg)
	waitRegistered(t, c)
	a := mockAlloc(c.NodeID(), config)
	srv.upsertAlloc(a)
	require.Eventually(t, func() bool { return srv.clientStatus(a.ID) != "" && srv.clientStatus(a.ID) != "pending" }, waitFor, tick)
	return c, srv, a
}

func TestLogs_PlainAndFramed(t *testing.T) {
	c, _, a := runningLogAlloc(t, map[string]any{"run_for": "1h", "stdout_string": "hello from mock\n"})
	h := c.Handler()
	base := "/v1/client/fs/logs/" + a.ID

	code, body := getBody(t, h, base+"?task=t&type=stdout&plain=true")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "hello from mock\n", body)

	code, body = getBody(t, h, base+"?plain=true&origin=end&offset=5") // task and type defaulted
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "mock\n", body)

	code, body = getBody(t, h, base+"?task=t&type=stderr&plain=true")
	require.Equal(t, http.StatusOK, code)
	require.Empty(t, body, "nothing written to stderr")

	code, body = getBody(t, h, base+"?task=t&type=stdout")
	require.Equal(t, http.StatusOK, code)
	dec := json.NewDecoder(bytes.NewReader([]byte(body)))
	var data []byte
	for {
		var f api.StreamFrame
		if err := dec.Decode(&f); err == io.EOF {
			break
		} else {
			require.NoError(t, err)
		}
		data = append(data, f.Data...)
		require.Equal(t, "alloc/logs/t.stdout.0", f.File)
		require.Equal(t, int64(len(data)), f.Offset)
	}
	require.Equal(t, "hello from mock\n", string(data))
}

func TestLogs_Errors(t *testing.T) {
	c, _, a := runningLogAlloc(t, map[string]any{"run_for": "1h"})
	h := c.Handler()
	for path, want := range map[string]int{
		"/v1/client/fs/logs/nope?task=t":                   http.StatusNotFound,
		"/v1/client/fs/logs/" + a.ID + "?task=zz":          http.StatusNotFound,
		"/v1/client/fs/logs/" + a.ID + "?type=stdin":       http.StatusBadRequest,
		"/v1/client/fs/logs/" + a.ID + "?origin=middle":    http.StatusBadRequest,
		"/v1/client/fs/logs/" + a.ID + "?offset=-1":        http.StatusBadRequest,
		"/v1/client/fs/logs/" + a.ID + "?follow=sometimes": http.StatusBadRequest,
	} {
		code, body := getBody(t, h, path)
		require.Equal(t, want, code, "%s: %s", path, body)
	}
}

// TestLogs_NomadAPIClientFollows reads logs the way `nomad alloc logs -f`
// does, through the official api client, while the task keeps writing.
func TestLogs_NomadAPIClientFollows(t *testing.T) {
	c, _, a := runningLogAlloc(t, map[string]any{
		"run_for": "1h", "stdout_string": "tick\n", "stdout_repeat": 3, "stdout_repeat_duration": "30ms",
	})
	hs := httptest.NewServer(c.Handler())
	defer hs.Close()
	apiClient, err := api.NewClient(&api.Config{Address: hs.URL})
	require.NoError(t, err)

	cancel := make(chan struct{})
	defer close(cancel)
	frames, errs := apiClient.AllocFS().Logs(&api.Allocation{ID: a.ID, NodeID: a.NodeID}, true, "t", "stdout", "start", 0, cancel, nil)
	var got []byte
	deadline := time.After(waitFor)
	for string(got) != "tick\ntick\ntick\ntick\n" {
		select {
		case f, ok := <-frames:
			require.True(t, ok, "stream ended early with %q", got)
			got = append(got, f.Data...)
		case err := <-errs:
			t.Fatalf("log stream failed: %v", err)
		case <-deadline:
			t.Fatalf("got %q so far", got)
		}
	}
}

func TestLogs_FollowEndsWhenAllocIsDone(t *testing.T) {
	c, srv, a := runningLogAlloc(t, map[string]any{"run_for": "50ms", "stdout_string": "bye\n"})
	require.Eventually(t, func() bool { return srv.clientStatus(a.ID) == "complete" }, waitFor, tick)
	done := make(chan string)
	go func() {
		_, body := getBody(t, c.Handler(), "/v1/client/fs/logs/"+a.ID+"?task=t&plain=true&follow=true")
		done <- body
	}()
	select {
	case body := <-done:
		require.Equal(t, "bye\n", body)
	case <-time.After(waitFor):
		t.Fatal("following the log of a finished allocation did not end")
	}
}

func TestAllocStats(t *testing.T) {
	c, _, a := runningLogAlloc(t, map[string]any{"run_for": "1h"})
	var u api.AllocResourceUsage
	require.Equal(t, http.StatusOK, getJSON(t, c.Handler(), "/v1/client/allocation/"+a.ID+"/stats", &u))
	require.NotNil(t, u.ResourceUsage)
	require.NotNil(t, u.ResourceUsage.CpuStats)
	require.NotNil(t, u.ResourceUsage.MemoryStats)
	require.Contains(t, u.Tasks, "t")
	require.NotNil(t, u.Tasks["t"].ResourceUsage.CpuStats)
	require.Positive(t, u.Timestamp)

	require.Equal(t, http.StatusNotFound, getJSON(t, c.Handler(), "/v1/client/allocation/nope/stats", nil))
}

func TestHostStats(t *testing.T) {
	srv := newFakeServer(t)
	c := startClient(t, testConfig(srv, t.TempDir()))
	var st api.HostStats
	require.Equal(t, http.StatusOK, getJSON(t, c.Handler(), "/v1/client/stats?node_id="+c.NodeID(), &st))
	require.NotNil(t, st.Memory)
	require.Equal(t, uint64(8048576*1024), st.Memory.Total)
	require.Equal(t, uint64(4194304*1024), st.Memory.Available)
	require.Equal(t, uint64((8048576-4194304)*1024), st.Memory.Used)
	require.Equal(t, uint64(12345), st.Uptime)
	require.Len(t, st.CPU, 2)
	require.Equal(t, "cpu0", st.CPU[0].CPU)
	require.InDelta(t, 100*4050.0/4815, st.CPU[0].Idle, 0.01)
	require.InDelta(t, 10000*(100-100*8100.0/9630)/100, st.CPUTicksConsumed, 0.01)
	require.Len(t, st.DiskStats, 1)
	require.Positive(t, st.DiskStats[0].Size)
	require.NotNil(t, st.AllocDirStats)
}
