package agent

import (
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// TestContractSchedulerConfigAndEvalDelete: the scheduler configuration
// starts at Nomad's defaults, is set with check-and-set, refuses an unknown
// algorithm, and pause_eval_broker really pauses scheduling: a job's
// evaluation stays pending, may then be deleted (only while paused), and
// resuming schedules what is left.
func TestContractSchedulerConfigAndEvalDelete(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	op := c.Operator()
	nodeID := ta.registerNode(t, "node-1")

	got, _, err := op.SchedulerGetConfiguration(nil)
	require.NoError(t, err)
	cfg := got.SchedulerConfig
	require.Equal(t, api.SchedulerAlgorithmBinpack, cfg.SchedulerAlgorithm)
	require.True(t, cfg.PreemptionConfig.SystemSchedulerEnabled)
	require.Zero(t, cfg.ModifyIndex)

	// Deleting evaluations needs a paused broker.
	_, err = c.Evaluations().Delete([]string{"8e231cf4-ca48-43ff-b694-5801e69e22fa"}, nil)
	require.ErrorContains(t, err, "eval broker is enabled")

	cfg.PauseEvalBroker = true
	cfg.SchedulerAlgorithm = api.SchedulerAlgorithmSpread
	set, _, err := op.SchedulerCASConfiguration(cfg, nil)
	require.NoError(t, err)
	require.True(t, set.Updated)
	// The same CAS index again is stale: not updated.
	stale, _, err := op.SchedulerCASConfiguration(cfg, nil)
	require.NoError(t, err)
	require.False(t, stale.Updated)
	_, _, err = op.SchedulerSetConfiguration(&api.SchedulerConfiguration{SchedulerAlgorithm: "fastest"}, nil)
	require.ErrorContains(t, err, "invalid scheduler algorithm")
	got, _, err = op.SchedulerGetConfiguration(nil)
	require.NoError(t, err)
	require.Equal(t, api.SchedulerAlgorithmSpread, got.SchedulerConfig.SchedulerAlgorithm)
	require.True(t, got.SchedulerConfig.PauseEvalBroker)
	require.NotZero(t, got.SchedulerConfig.ModifyIndex)

	// Paused: the evaluation is not scheduled.
	resp, _, err := c.Jobs().Register(testJob("web"), nil)
	require.NoError(t, err)
	time.Sleep(500 * time.Millisecond)
	ev, _, err := c.Evaluations().Info(resp.EvalID, nil)
	require.NoError(t, err)
	require.Equal(t, "pending", ev.Status)

	// Its job runs nothing yet, so it may be deleted; an unknown one not.
	_, err = c.Evaluations().Delete([]string{"8e231cf4-ca48-43ff-b694-5801e69e22fa"}, nil)
	require.ErrorContains(t, err, "eval not found")
	_, err = c.Evaluations().Delete([]string{resp.EvalID}, nil)
	require.NoError(t, err)
	_, _, err = c.Evaluations().Info(resp.EvalID, nil)
	require.ErrorContains(t, err, "404")
	count, _, err := c.Evaluations().Count(nil)
	require.NoError(t, err)
	require.Zero(t, count.Count)

	// Resumed: a new evaluation (the node's) places the job.
	got.SchedulerConfig.PauseEvalBroker = false
	_, _, err = op.SchedulerCASConfiguration(got.SchedulerConfig, nil)
	require.NoError(t, err)
	// (The api client reads an EvalID field Nomad's response does not
	// have; the response's EvalIDs are checked with a raw write.)
	var forced nodeEvalResponse
	_, err = c.Raw().Write("/v1/node/"+nodeID+"/evaluate", nil, &forced, nil)
	require.NoError(t, err)
	require.Len(t, forced.EvalIDs, 1)
	require.Eventually(t, func() bool {
		allocs, _, err := c.Jobs().Allocations("web", false, nil)
		return err == nil && len(allocs) == 1
	}, 10*time.Second, 50*time.Millisecond)
}

// TestContractNodePurgeAndResources: a node carries its registration
// event, lists include resources on request, and a purged node is gone
// (its jobs are re-evaluated).
func TestContractNodePurgeAndResources(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	nodeID := ta.registerNode(t, "node-1")
	registerAndWait(t, c, testJob("web"))

	node, _, err := c.Nodes().Info(nodeID, nil)
	require.NoError(t, err)
	require.NotEmpty(t, node.Events)
	require.Equal(t, "Node registered", node.Events[0].Message)

	plain, _, err := c.Nodes().List(nil)
	require.NoError(t, err)
	require.Nil(t, plain[0].NodeResources)
	full, _, err := c.Nodes().List(&api.QueryOptions{Params: map[string]string{"resources": "true"}})
	require.NoError(t, err)
	require.NotNil(t, full[0].NodeResources)
	require.EqualValues(t, 4000, full[0].NodeResources.Cpu.CpuShares)

	_, _, err = c.Nodes().Purge("12345678-abcd-efab-cdef-123456789abc", nil)
	require.ErrorContains(t, err, "not found")
	out, _, err := c.Nodes().Purge(nodeID, nil)
	require.NoError(t, err)
	require.Len(t, out.EvalIDs, 1, "the job is evaluated again")
	_, _, err = c.Nodes().Info(nodeID, nil)
	require.ErrorContains(t, err, "not found")
}

// TestContractAutopilot: the autopilot configuration starts at Nomad's
// defaults and is set with check-and-set; health reports the lone server
// healthy with no failure tolerance.
func TestContractAutopilot(t *testing.T) {
	ta := newTestAgent(t, "")
	op := ta.client.Operator()
	cfg, _, err := op.AutopilotGetConfiguration(nil)
	require.NoError(t, err)
	require.True(t, cfg.CleanupDeadServers)
	require.Equal(t, 200*time.Millisecond, cfg.LastContactThreshold)
	require.Equal(t, 10*time.Second, cfg.ServerStabilizationTime)

	cfg.LastContactThreshold = time.Second
	ok, _, err := op.AutopilotCASConfiguration(cfg, nil)
	require.NoError(t, err)
	require.True(t, ok)
	ok, _, err = op.AutopilotCASConfiguration(cfg, nil)
	require.NoError(t, err)
	require.False(t, ok, "stale check-and-set index")
	got, _, err := op.AutopilotGetConfiguration(nil)
	require.NoError(t, err)
	require.Equal(t, time.Second, got.LastContactThreshold)
	cfg.ServerStabilizationTime = -time.Second
	_, err = op.AutopilotSetConfiguration(cfg, nil)
	require.ErrorContains(t, err, "400")

	require.Eventually(t, func() bool {
		health, _, err := op.AutopilotServerHealth(nil)
		return err == nil && health.Healthy && len(health.Servers) == 1 && health.Servers[0].Leader &&
			health.FailureTolerance == 0 && health.Leader == ta.config.Name
	}, 10*time.Second, 50*time.Millisecond)
}
