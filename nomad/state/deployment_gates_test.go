package state

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// TestDeploymentGateRecords: a status update with gate records stores
// them with the status; a resume clears PausedBy of the records it does
// not replace; a plan's stale copy of the deployment keeps them; a name
// the deployment has no group of is ignored.
func TestDeploymentGateRecords(t *testing.T) {
	f := newHealthFixture(t, healthPD)
	update := func(status string, gates map[string]*structs.DeploymentGate) {
		t.Helper()
		require.NoError(t, f.s.UpdateDeploymentStatus(f.next(), &structs.DeploymentStatusUpdate{
			DeploymentID: f.d.ID, Status: status, StatusDescription: "x", Gates: gates,
		}, healthT1.UnixNano()))
	}
	held := &structs.DeploymentGate{PausedBy: structs.GateWebhook, Checkpoint: "wave 2", Gate: structs.GateWebhook, Result: structs.GateResultFail}
	update(structs.DeploymentStatusPaused, map[string]*structs.DeploymentGate{"web": held, "nope": {Passed: 9}})
	got := f.stored(t)
	require.Equal(t, held, got.TaskGroups["web"].Gate)
	require.NotContains(t, got.TaskGroups, "nope")
	require.Equal(t, structs.DeploymentStatusPaused, got.Status)

	require.NoError(t, f.s.UpsertPlanResults(f.next(), &structs.ApplyPlanResultsRequest{Job: f.job, Deployment: f.d.Copy(), UpdatedAt: healthT2.UnixNano()}))
	require.Equal(t, held, f.stored(t).TaskGroups["web"].Gate, "a stale plan keeps the record")

	update(structs.DeploymentStatusRunning, nil) // an operator's resume
	rec := f.stored(t).TaskGroups["web"].Gate
	require.Empty(t, rec.PausedBy, "no gate holds a resumed deployment")
	require.Equal(t, "wave 2", rec.Checkpoint, "the rest stays")

	passed := &structs.DeploymentGate{PassedAt: 1, Passed: 1, Result: structs.GateResultPass}
	update(structs.DeploymentStatusRunning, map[string]*structs.DeploymentGate{"web": passed})
	require.Equal(t, passed, f.stored(t).TaskGroups["web"].Gate)
}
