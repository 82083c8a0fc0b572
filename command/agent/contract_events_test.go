package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// nextEvents reads the next non-heartbeat batch from ch.
func nextEvents(t *testing.T, ch <-chan *api.Events) *api.Events {
	t.Helper()
	select {
	case ev, ok := <-ch:
		require.True(t, ok, "stream closed")
		require.NoError(t, ev.Err)
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
		return nil
	}
}

// TestContractEventStream: the api client's EventStream sees a node's
// registration and drain (Nomad's event types, SecretID empty), a job's
// registration with its evaluation under the job's key, and resumes from
// an index.
func TestContractEventStream(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	nodeID := ta.registerNode(t, "node-1")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nodeCh, err := c.EventStream().Stream(ctx, map[api.Topic][]string{api.TopicNode: {nodeID}}, 0, nil)
	require.NoError(t, err)
	ev := nextEvents(t, nodeCh)
	require.Len(t, ev.Events, 1)
	e := ev.Events[0]
	require.Equal(t, "NodeRegistration", e.Type)
	require.Equal(t, nodeID, e.Key)
	node, err := e.Node()
	require.NoError(t, err)
	require.Equal(t, nodeID, node.ID)
	raw := e.Payload["Node"].(map[string]any)
	require.Equal(t, "", raw["SecretID"], "the secret never leaves the server")

	_, err = c.Nodes().UpdateDrainOpts(nodeID, &api.DrainOptions{
		DrainSpec: &api.DrainSpec{Deadline: time.Minute}, Meta: map[string]string{"reason": "test"},
	}, nil)
	require.NoError(t, err)
	var sawDraining, sawComplete bool
	for !sawComplete {
		for _, e := range nextEvents(t, nodeCh).Events {
			require.Equal(t, "NodeDrain", e.Type)
			n, err := e.Node()
			require.NoError(t, err)
			require.NotNil(t, n.LastDrain)
			require.Equal(t, map[string]string{"reason": "test"}, n.LastDrain.Meta)
			require.Equal(t, n.Drain, n.DrainStrategy != nil)
			switch n.LastDrain.Status {
			case api.DrainStatusDraining:
				// (The api client's payload decoder does not fill
				// embedded structs: DrainStrategy.Deadline is read below.)
				require.False(t, n.DrainStrategy.StartedAt.IsZero())
				sawDraining = true
			case api.DrainStatusComplete:
				require.True(t, sawDraining, "draining before complete")
				require.Equal(t, api.NodeSchedulingIneligible, n.SchedulingEligibility)
				sawComplete = true
			}
		}
	}

	info, _, err := c.Nodes().Info(nodeID, nil)
	require.NoError(t, err)
	require.Nil(t, info.DrainStrategy)
	require.Equal(t, api.DrainStatusComplete, info.LastDrain.Status)

	// A job's evaluation is found under the job's key.
	jobCh, err := c.EventStream().Stream(ctx, map[api.Topic][]string{api.TopicEvaluation: {"web"}, api.TopicJob: {"web"}}, 0, nil)
	require.NoError(t, err)
	resp, _, err := c.Jobs().Register(testJob("web"), nil)
	require.NoError(t, err)
	ev = nextEvents(t, jobCh)
	types := map[string]string{}
	for _, e := range ev.Events {
		types[string(e.Topic)] = e.Type
	}
	require.Equal(t, map[string]string{"Job": "JobRegistered", "Evaluation": "JobRegistered"}, types)
	require.Equal(t, resp.EvalCreateIndex, ev.Index)

	// Resuming at that index starts there, and skips older entries.
	resumed, err := c.EventStream().Stream(ctx, map[api.Topic][]string{api.TopicAll: {"*"}}, ev.Index, nil)
	require.NoError(t, err)
	require.Equal(t, ev.Index, nextEvents(t, resumed).Index)
}

// TestContractEventStreamWire: bad topics are 400s naming the problem, and
// an idle stream sends `{}` heartbeats.
func TestContractEventStreamWire(t *testing.T) {
	ta := newTestAgent(t, "")
	base := "http://" + ta.HTTPAddr() + "/v1/event/stream"
	for _, q := range []string{"?topic=Evaluation:::*", "?topic=Jobs", "?index=x"} {
		resp, err := http.Get(base + q)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, q)
	}

	old := eventHeartbeat.Swap(int64(50 * time.Millisecond))
	defer eventHeartbeat.Store(old)
	resp, err := http.Get(base + "?topic=Job:nothing-here")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	line, err := bufio.NewReader(resp.Body).ReadBytes('\n')
	require.NoError(t, err)
	var hb map[string]any
	require.NoError(t, json.Unmarshal(line, &hb))
	require.Empty(t, hb)
}
