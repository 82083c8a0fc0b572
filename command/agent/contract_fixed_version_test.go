package agent

import (
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// reportHealth plays the client of allocation id: it reports status and
// the allocation's deployment health.
func (ta *testAgent) reportHealth(t *testing.T, id, status string, healthy bool) {
	t.Helper()
	_, err := ta.Server().AllocClientUpdate([]*structs.Allocation{{ID: id, ClientStatus: status,
		DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: new(healthy), Timestamp: time.Now()}}})
	require.NoError(t, err)
}

// TestContractFixedVersionAfterFailedDeployment: version 0 of a service job
// (two allocations, max_parallel 1, no auto-revert) fails its deployment:
// both allocations fail unhealthy and wait out the 30 s reschedule delay.
// Version 1, registered then, is placed by its registration's evaluation,
// inside a new deployment that evaluation names, stopping the failed
// allocation it replaces; once healthy the other follows in the same
// deployment, which succeeds, all well before the reschedule delay.
func TestContractFixedVersionAfterFailedDeployment(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	ta.registerNode(t, "node-1")
	ta.registerNode(t, "node-2")
	job := serviceJob("fix", 2)
	job.TaskGroups[0].Update = &api.UpdateStrategy{MaxParallel: new(1), MinHealthyTime: new(time.Second),
		HealthyDeadline: new(time.Minute), ProgressDeadline: new(10 * time.Minute), AutoRevert: new(false)}
	first := registerAndWait(t, c, job)
	require.NotEmpty(t, first.DeploymentID)
	v0, _, err := c.Jobs().Allocations("fix", false, nil)
	require.NoError(t, err)
	require.Len(t, v0, 2)
	for _, a := range v0 {
		ta.reportHealth(t, a.ID, structs.AllocClientStatusFailed, false)
	}
	require.Eventually(t, func() bool {
		d, _, err := c.Deployments().Info(first.DeploymentID, nil)
		return err == nil && d.Status == "failed"
	}, 10*time.Second, 20*time.Millisecond, "the unhealthy allocations fail version 0's deployment")

	fixed := serviceJob("fix", 2)
	fixed.TaskGroups[0].Update = job.TaskGroups[0].Update
	fixed.TaskGroups[0].Tasks[0].Env = map[string]string{"FIXED": "yes"}
	registered := time.Now()
	eval := registerAndWait(t, c, fixed)
	require.Equal(t, "complete", eval.Status)
	require.NotEmpty(t, eval.DeploymentID, "the registration's evaluation names the fixed version's deployment")
	require.NotEqual(t, first.DeploymentID, eval.DeploymentID)
	require.Equal(t, uint64(1), eval.PlanAnnotations.DesiredTGUpdates["web"].DestructiveUpdate)
	placed, _, err := c.Deployments().Allocations(eval.DeploymentID, nil)
	require.NoError(t, err)
	require.Len(t, placed, 1, "max_parallel 1")
	require.Equal(t, uint64(1), placed[0].JobVersion)
	full, _, err := c.Allocations().Info(placed[0].ID, nil)
	require.NoError(t, err)
	require.Nil(t, full.RescheduleTracker, "a destructive update, not a reschedule")
	replaced, _, err := c.Allocations().Info(full.PreviousAllocation, nil)
	require.NoError(t, err)
	require.Equal(t, "stop", replaced.DesiredStatus, "the failed allocation it replaces is stopped")
	require.Equal(t, first.DeploymentID, replaced.DeploymentID)

	ta.reportHealth(t, placed[0].ID, structs.AllocClientStatusRunning, true)
	require.Eventually(t, func() bool {
		in, _, err := c.Deployments().Allocations(eval.DeploymentID, nil)
		return err == nil && len(in) == 2
	}, 10*time.Second, 20*time.Millisecond, "the second allocation joins the same deployment once the first is healthy")
	in, _, err := c.Deployments().Allocations(eval.DeploymentID, nil)
	require.NoError(t, err)
	for _, a := range in {
		if a.ID != placed[0].ID {
			ta.reportHealth(t, a.ID, structs.AllocClientStatusRunning, true)
		}
	}
	require.Eventually(t, func() bool {
		d, _, err := c.Deployments().Info(eval.DeploymentID, nil)
		return err == nil && d.Status == "successful"
	}, 10*time.Second, 20*time.Millisecond, "the fixed version's deployment succeeds")
	require.Less(t, time.Since(registered), 25*time.Second, "no step waited for the reschedule delay")
	live, _, err := c.Jobs().Allocations("fix", false, nil)
	require.NoError(t, err)
	running := 0
	for _, a := range live {
		if a.DesiredStatus == "run" {
			require.Equal(t, uint64(1), a.JobVersion)
			running++
		}
	}
	require.Equal(t, 2, running)
}
