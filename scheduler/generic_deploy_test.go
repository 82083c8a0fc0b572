package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// markHealthy marks every live allocation of the job running and healthy.
func markHealthy(h *harness, jobID string) {
	for _, a := range h.state.liveAllocs(jobID) {
		c := a.Copy()
		c.ClientStatus = structs.AllocClientStatusRunning
		healthy := true
		ds := &structs.AllocDeploymentStatus{Healthy: &healthy}
		if a.DeploymentStatus != nil {
			ds.Canary = a.DeploymentStatus.Canary
		}
		c.DeploymentStatus = ds
		h.state.upsertAlloc(c)
	}
}

// setDeployment rewrites the job's latest deployment with mutate applied.
func setDeployment(h *harness, jobID string, mutate func(d *structs.Deployment)) *structs.Deployment {
	d, _ := h.state.LatestDeploymentByJobID(nil, structs.DefaultNamespace, jobID)
	c := d.Copy()
	mutate(c)
	h.state.deployments[c.ID] = c
	return c
}

func versions(h *harness, jobID string) map[uint64]int {
	out := map[uint64]int{}
	for _, a := range h.state.liveAllocs(jobID) {
		out[a.JobVersion]++
	}
	return out
}

func canaryJob(count, canary, maxParallel int) *structs.Job {
	job := withUpdate(serviceJob("web", count))
	job.TaskGroups[0].Update.Canary = canary
	job.TaskGroups[0].Update.MaxParallel = maxParallel
	return job
}

func TestGenericDeployment_CanaryBesideOldThenRoll(t *testing.T) {
	h := newHarness(t)
	addNodes(h, 4)
	v0 := canaryJob(3, 1, 1)
	h.state.upsertJob(v0)
	eval := h.process(v0)
	require.NotEmpty(t, eval.DeploymentID, "the first version of a service job gets a deployment")
	require.Len(t, h.state.liveAllocs("web"), 3, "placements of missing allocations are not limited by max_parallel")
	markHealthy(h, "web")
	setDeployment(h, "web", func(d *structs.Deployment) { d.Status = structs.DeploymentStatusSuccessful })

	v1 := nextVersion(v0, destructiveChange)
	h.state.upsertJob(v1)
	eval = h.process(v1)
	assert.Equal(t, map[uint64]int{0: 3, 1: 1}, versions(h, "web"), "the canary runs beside the three old allocations")
	d, _ := h.state.LatestDeploymentByJobID(nil, structs.DefaultNamespace, "web")
	st := d.TaskGroups["web"]
	assert.Equal(t, 1, st.DesiredCanaries)
	assert.Len(t, st.PlacedCanaries, 1)
	assert.Equal(t, 3, st.DesiredTotal)
	assert.Equal(t, structs.DeploymentStatusDescriptionRunningNeedsPromotion, d.StatusDescription)
	assert.Equal(t, uint64(1), eval.PlanAnnotations.DesiredTGUpdates["web"].Canary)

	// Healthy canary, not promoted: nothing moves.
	markHealthy(h, "web")
	h.process(v1)
	assert.Equal(t, map[uint64]int{0: 3, 1: 1}, versions(h, "web"))

	// Promotion: one old allocation stops for the canary; the rest roll
	// one at a time.
	setDeployment(h, "web", func(d *structs.Deployment) { d.TaskGroups["web"].Promoted = true })
	h.process(v1)
	assert.Equal(t, map[uint64]int{0: 1, 1: 2}, versions(h, "web"), "promotion stops an old one and starts a wave of 1")
	h.process(v1)
	assert.Equal(t, map[uint64]int{0: 1, 1: 2}, versions(h, "web"), "the wave waits for health")
	markHealthy(h, "web")
	h.process(v1)
	assert.Equal(t, map[uint64]int{1: 3}, versions(h, "web"))
}

func TestGenericDeployment_BlueGreen(t *testing.T) {
	h := newHarness(t)
	addNodes(h, 3)
	v0 := canaryJob(2, 2, 2)
	h.state.upsertJob(v0)
	h.process(v0)
	markHealthy(h, "web")
	setDeployment(h, "web", func(d *structs.Deployment) { d.Status = structs.DeploymentStatusSuccessful })
	v1 := nextVersion(v0, destructiveChange)
	h.state.upsertJob(v1)
	h.process(v1)
	assert.Equal(t, map[uint64]int{0: 2, 1: 2}, versions(h, "web"), "canary == count: a full green set beside blue")
	markHealthy(h, "web")
	setDeployment(h, "web", func(d *structs.Deployment) { d.TaskGroups["web"].Promoted = true })
	h.process(v1)
	assert.Equal(t, map[uint64]int{1: 2}, versions(h, "web"), "promotion retires blue")
}

func TestGenericDeployment_PausedAndFailedHoldUpdates(t *testing.T) {
	for _, status := range []string{structs.DeploymentStatusPaused, structs.DeploymentStatusFailed} {
		t.Run(status, func(t *testing.T) {
			h := newHarness(t)
			addNodes(h, 3)
			v0 := canaryJob(2, 0, 1)
			h.state.upsertJob(v0)
			h.process(v0)
			markHealthy(h, "web")
			setDeployment(h, "web", func(d *structs.Deployment) { d.Status = structs.DeploymentStatusSuccessful })
			v1 := nextVersion(v0, destructiveChange)
			h.state.upsertJob(v1)
			h.process(v1)
			require.Equal(t, map[uint64]int{0: 1, 1: 1}, versions(h, "web"))
			markHealthy(h, "web")
			setDeployment(h, "web", func(d *structs.Deployment) { d.Status = status })
			h.process(v1)
			assert.Equal(t, map[uint64]int{0: 1, 1: 1}, versions(h, "web"))
		})
	}
}

func TestGenericDeployment_BatchHasNone(t *testing.T) {
	h := newHarness(t)
	addNodes(h, 1)
	job := batchJob("b", 2)
	withUpdate(job) // rejected by validation; the scheduler ignores it anyway
	h.state.upsertJob(job)
	eval := h.process(job)
	assert.Empty(t, eval.DeploymentID)
	assert.Len(t, h.state.liveAllocs("b"), 2)
	_ = time.Second
}

func TestGenericDeployment_CreatedWhenNoNodeFits(t *testing.T) {
	h := newHarness(t)
	job := withUpdate(serviceJob("web", 2))
	h.state.upsertJob(job)
	eval := h.process(job)
	require.Contains(t, eval.FailedTGAllocs, "web")
	require.NotEmpty(t, eval.DeploymentID, "the version's rollout exists even before a node fits")
	d, _ := h.state.LatestDeploymentByJobID(nil, structs.DefaultNamespace, "web")
	require.NotNil(t, d)
	assert.Equal(t, eval.DeploymentID, d.ID)
	assert.Equal(t, structs.DeploymentStatusRunning, d.Status)
	assert.Equal(t, 2, d.TaskGroups["web"].DesiredTotal)
	assert.Zero(t, d.TaskGroups["web"].PlacedAllocs)

	// Capacity appears: the re-run places into the same deployment.
	addNodes(h, 2)
	eval = h.process(job)
	assert.Empty(t, eval.FailedTGAllocs)
	assert.Equal(t, d.ID, eval.DeploymentID)
	for _, a := range h.state.liveAllocs("web") {
		assert.Equal(t, d.ID, a.DeploymentID)
	}
	d, _ = h.state.LatestDeploymentByJobID(nil, structs.DefaultNamespace, "web")
	assert.Equal(t, 2, d.TaskGroups["web"].PlacedAllocs)
}
