package agent

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/testutil/taskprocs"
)

// TestContractDevAgentShutdownStopsTasks: a dev agent's Shutdown stops its
// allocations before it returns (as `nomad agent -dev` leaves nothing
// behind): the raw_exec task and its executor are gone, not left for a
// next start that a dev agent never has.
func TestContractDevAgentShutdownStopsTasks(t *testing.T) {
	ag, c := newDevAgent(t)
	alloc := runningAlloc(t, c, testJob("web"))
	dataDir := ag.config.DataDir
	var procs []taskprocs.Process
	require.Eventually(t, func() bool { procs = taskprocs.Find(dataDir); return len(procs) == 2 }, 10*time.Second, 20*time.Millisecond,
		"the executor and the task of %s: %v", alloc.ID, &procs)

	require.NoError(t, ag.Shutdown())
	require.Empty(t, taskprocs.Find(dataDir), "no executor or task of the dev agent is left")
	for _, p := range procs {
		require.False(t, taskprocs.Alive(p.PID), "%v is gone", p)
	}
}
