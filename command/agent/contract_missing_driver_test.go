package agent

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A job on a driver no node has (podman, java, ...) registers, as in Nomad,
// and its placement fails with "missing drivers" instead of a 400.
func TestContractMissingDriverFailsPlacementNotRegistration(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	ta.registerNode(t, "node-1")
	job := serviceJob("pod", 1)
	job.TaskGroups[0].Tasks[0].Driver = "podman"
	job.TaskGroups[0].Tasks[0].Config = map[string]any{"image": "docker.io/library/redis:7"}
	eval := registerAndWait(t, c, job)
	require.Equal(t, "complete", eval.Status)
	require.Contains(t, eval.FailedTGAllocs, "web")
	failed := eval.FailedTGAllocs["web"]
	require.Equal(t, 1, failed.NodesEvaluated)
	require.Equal(t, 1, failed.ConstraintFiltered["missing drivers"], "%+v", failed)
	require.NotEmpty(t, eval.BlockedEval, "blocked until a node with the driver joins")
}
