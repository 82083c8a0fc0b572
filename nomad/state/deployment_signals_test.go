package state

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// TestResumeRecordsSignals: resuming a paused deployment records each
// group's rollout signal counts over its allocations in the same write; a
// plan's stale copy of the deployment does not undo them; a pause alone
// does not set them.
func TestResumeRecordsSignals(t *testing.T) {
	f := newHealthFixture(t, healthPD)
	status := func(s string) {
		require.NoError(t, f.s.UpdateDeploymentStatus(f.next(), &structs.DeploymentStatusUpdate{DeploymentID: f.d.ID, Status: s}, healthT1.UnixNano()))
	}
	restarts := func(i int, n uint64) {
		u := &structs.Allocation{ID: f.allocs[i].ID, ClientStatus: structs.AllocClientStatusRunning,
			TaskStates: map[string]*structs.TaskState{"server": {State: "running", Restarts: n}}}
		require.NoError(t, f.s.UpdateAllocsFromClient(f.next(), []*structs.Allocation{u}, healthT1.UnixNano()))
	}
	restarts(0, 2)
	restarts(1, 1)
	status(structs.DeploymentStatusPaused)
	require.Nil(t, f.stored(t).TaskGroups["web"].SignalsAtResume, "a pause records nothing")
	status(structs.DeploymentStatusRunning)
	require.Equal(t, map[string]int{structs.SignalRestarts: 3}, f.stored(t).TaskGroups["web"].SignalsAtResume)

	require.NoError(t, f.s.UpsertPlanResults(f.next(), &structs.ApplyPlanResultsRequest{Job: f.job, Deployment: f.d.Copy(), UpdatedAt: healthT2.UnixNano()}))
	require.Equal(t, map[string]int{structs.SignalRestarts: 3}, f.stored(t).TaskGroups["web"].SignalsAtResume, "a stale plan keeps them")

	restarts(2, 4)
	status(structs.DeploymentStatusPaused)
	status(structs.DeploymentStatusRunning)
	require.Equal(t, map[string]int{structs.SignalRestarts: 7}, f.stored(t).TaskGroups["web"].SignalsAtResume, "the next resume replaces them")
}
