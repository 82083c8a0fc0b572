package agent

import (
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/drover-project/drover/wire"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// TestContractNodeAllocs_AnswersServerChangesOnly: a node's blocking query
// for its allocations is not answered by the node's own status reports
// (which leave AllocModifyIndex alone), and is answered at once when the
// server stops one of them or garbage-collects it.
func TestContractNodeAllocs_AnswersServerChangesOnly(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	nodeID, secret := ta.registerNodeWithSecret(t, "node-1")
	nc := ta.clientWith(t, secret)
	path := "/v1/internal/node/" + url.PathEscape(nodeID) + "/allocs"
	query := func(index uint64, wait time.Duration) ([]*api.Allocation, uint64, time.Duration) {
		t.Helper()
		var out []*api.Allocation
		start := time.Now()
		meta, err := nc.Raw().Query(path, &out, &api.QueryOptions{WaitIndex: index, WaitTime: wait})
		require.NoError(t, err)
		return out, meta.LastIndex, time.Since(start)
	}

	resp, _, err := c.Jobs().Register(testJob("web"), nil)
	require.NoError(t, err)
	require.Equal(t, "complete", waitEvalComplete(t, c, resp.EvalID).Status)
	allocs, index, _ := query(0, 0)
	require.Len(t, allocs, 1)
	require.NotNil(t, allocs[0].Job, "each allocation comes with its job")
	id := allocs[0].ID

	// The node reports its allocation running: stored, but the node's
	// own query stays blocked until its wait ends.
	type result struct {
		allocs []*api.Allocation
		index  uint64
		took   time.Duration
	}
	blocked := make(chan result, 1)
	go func() {
		a, i, d := query(index, 1500*time.Millisecond)
		blocked <- result{a, i, d}
	}()
	time.Sleep(200 * time.Millisecond) // the query is waiting
	_, err = nc.Raw().Write(path, &wire.AllocUpdateRequest{Allocs: []*api.Allocation{{ID: id, ClientStatus: "running"}}}, nil, nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		a, _, err := c.Allocations().Info(id, nil)
		return err == nil && a.ClientStatus == "running"
	}, 5*time.Second, 20*time.Millisecond)
	r := <-blocked
	require.Equal(t, index, r.index, "a client's own report does not move its index")
	require.GreaterOrEqual(t, r.took, 1400*time.Millisecond, "answered at the end of the wait, not by the report")

	// The server stops it: answered at once, with a newer index.
	go func() {
		a, i, d := query(index, 30*time.Second)
		blocked <- result{a, i, d}
	}()
	_, _, err = c.Jobs().Deregister("web", false, nil)
	require.NoError(t, err)
	r = <-blocked
	require.Less(t, r.took, 10*time.Second)
	require.Greater(t, r.index, index)
	require.Len(t, r.allocs, 1)
	require.Equal(t, "stop", r.allocs[0].DesiredStatus)
	index = r.index

	// The node reports it complete, and the garbage collector removes it:
	// answered, with an empty list.
	_, err = nc.Raw().Write(path, &wire.AllocUpdateRequest{Allocs: []*api.Allocation{{ID: id, ClientStatus: "complete"}}}, nil, nil)
	require.NoError(t, err)
	go func() {
		a, i, d := query(index, 30*time.Second)
		blocked <- result{a, i, d}
	}()
	require.Eventually(t, func() bool {
		a, _, err := c.Allocations().Info(id, nil)
		return err == nil && a.ClientStatus == "complete"
	}, 5*time.Second, 20*time.Millisecond)
	require.NoError(t, c.System().GarbageCollect())
	r = <-blocked
	require.Less(t, r.took, 10*time.Second)
	require.Greater(t, r.index, index, "index %s", strconv.FormatUint(r.index, 10))
	require.Empty(t, r.allocs)
}
