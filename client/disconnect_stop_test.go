package client

import (
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// TestDisconnectStops: an allocation stops once its group's
// stop_on_client_after (or stop_after_client_disconnect) has passed since
// the servers last answered; others, and allocations the server stops
// anyway, never do.
func TestDisconnectStops(t *testing.T) {
	minute, twoMinutes := time.Minute, 2*time.Minute
	job := &structs.Job{ID: "web", TaskGroups: []*structs.TaskGroup{
		{Name: "plain"},
		{Name: "block", Disconnect: &structs.DisconnectStrategy{StopOnClientAfter: &minute}},
		{Name: "older", StopAfterClientDisconnect: &twoMinutes},
		{Name: "lost_after", Disconnect: &structs.DisconnectStrategy{LostAfter: &minute}},
	}}
	alloc := func(id, group string) *structs.Allocation {
		return &structs.Allocation{ID: id, TaskGroup: group, Job: job, DesiredStatus: structs.AllocDesiredStatusRun}
	}
	stopping := alloc("stopping", "block")
	stopping.DesiredStatus = structs.AllocDesiredStatusStop
	allocs := []*structs.Allocation{alloc("p", "plain"), alloc("b", "block"), alloc("o", "older"), alloc("l", "lost_after"),
		stopping, {ID: "no-job", TaskGroup: "block"}, nil}
	last := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	assert.Empty(t, disconnectStops(last.Add(59*time.Second), last, allocs), "within every window")
	assert.Equal(t, []string{"b"}, disconnectStops(last.Add(time.Minute), last, allocs), "stop_on_client_after passed")
	assert.Equal(t, []string{"b", "o"}, disconnectStops(last.Add(2*time.Minute), last, allocs), "stop_after_client_disconnect too")
}

// TestClient_StopsAllocationsAfterStopOnClientAfter: once heartbeats fail
// for a group's stop_on_client_after, the client stops that group's
// allocation itself; an allocation of a group without it runs on.
func TestClient_StopsAllocationsAfterStopOnClientAfter(t *testing.T) {
	srv := newFakeServer(t)
	c := startClient(t, testConfig(srv, t.TempDir()))
	waitRegistered(t, c)
	withStop := mockAlloc(c.NodeID(), map[string]any{"run_for": "1h"})
	withStop.Job.Type = ptr("service")
	withStop.Job.TaskGroups[0].Disconnect = &api.DisconnectStrategy{StopOnClientAfter: ptr(time.Second)}
	plain := mockAlloc(c.NodeID(), map[string]any{"run_for": "1h"})
	plain.Job.Type = ptr("service")
	srv.upsertAlloc(withStop)
	srv.upsertAlloc(plain)
	require.Eventually(t, func() bool {
		return srv.clientStatus(withStop.ID) == "running" && srv.clientStatus(plain.ID) == "running"
	}, waitFor, tick)

	srv.mu.Lock()
	srv.failBeats = true
	srv.mu.Unlock()
	cut := time.Now()
	require.Eventually(t, func() bool {
		ts := srv.taskState(withStop.ID, "t")
		return ts != nil && ts.State == "dead"
	}, waitFor, tick, "stopped after stop_on_client_after without heartbeats")
	require.GreaterOrEqual(t, time.Since(cut), time.Second, "not before stop_on_client_after passed")
	require.Equal(t, "running", srv.clientStatus(plain.ID), "a group without stop_on_client_after runs on")
}
