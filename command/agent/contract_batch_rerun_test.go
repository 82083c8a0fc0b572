package agent

import (
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// reportStatus plays the client of allocation id: it reports status.
func (ta *testAgent) reportStatus(t *testing.T, id, status string) {
	t.Helper()
	_, err := ta.Server().AllocClientUpdate([]*structs.Allocation{{ID: id, ClientStatus: status}})
	require.NoError(t, err)
}

// onlyAlloc returns the single allocation `job status` lists for jobID
// (allocations?all=false), failing when there is not exactly one.
func onlyAlloc(t *testing.T, c *api.Client, jobID string) *api.AllocationListStub {
	t.Helper()
	allocs, _, err := c.Jobs().Allocations(jobID, false, nil)
	require.NoError(t, err)
	require.Len(t, allocs, 1, "allocations of %s", jobID)
	return allocs[0]
}

// purgeAndWait stops and purges jobID and waits for its evaluation.
func purgeAndWait(t *testing.T, c *api.Client, jobID string) {
	t.Helper()
	evalID, _, err := c.Jobs().Deregister(jobID, true, nil)
	require.NoError(t, err)
	waitEvalComplete(t, c, evalID)
	_, _, err = c.Jobs().Info(jobID, nil)
	requireStatus(t, err, 404, "job not found")
}

// TestContractBatchPurgedJobRunsAgain: a batch job whose allocation failed
// (no reschedule left), stopped with -purge and registered again under the
// same ID, runs: a new allocation is placed, and the job's allocation list
// and summary show the new job's allocation only (the predecessor's with
// all=true).
func TestContractBatchPurgedJobRunsAgain(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	ta.registerNode(t, "node-1")
	job := batchJob("vol")
	job.TaskGroups[0].ReschedulePolicy = &api.ReschedulePolicy{Attempts: new(0), Unlimited: new(false)}
	registerAndWait(t, c, job)
	old := onlyAlloc(t, c, "vol")
	ta.reportStatus(t, old.ID, structs.AllocClientStatusFailed)

	purgeAndWait(t, c, "vol")
	eval := registerAndWait(t, c, job)
	require.Equal(t, "complete", eval.Status)
	require.Equal(t, uint64(1), eval.PlanAnnotations.DesiredTGUpdates["work"].Place, "the re-registered job is placed")
	require.Equal(t, uint64(1), eval.PlanAnnotations.DesiredTGUpdates["work"].Ignore, "the predecessor's allocation is ignored")

	fresh := onlyAlloc(t, c, "vol")
	require.NotEqual(t, old.ID, fresh.ID, "job status lists the new allocation, not the predecessor's")
	require.Equal(t, structs.AllocDesiredStatusRun, fresh.DesiredStatus)
	require.Empty(t, fresh.RescheduleTracker, "a fresh run, not a reschedule of the predecessor's failure")
	all, _, err := c.Jobs().Allocations("vol", true, nil)
	require.NoError(t, err)
	require.Len(t, all, 2, "all=true lists the predecessor's allocation too")
	sum, _, err := c.Jobs().Summary("vol", nil)
	require.NoError(t, err)
	require.Equal(t, api.TaskGroupSummary{Starting: 1}, sum.Summary["work"], "the summary counts the new job's allocation only")

	ta.reportStatus(t, fresh.ID, structs.AllocClientStatusRunning)
	info, _, err := c.Jobs().Info("vol", nil)
	require.NoError(t, err)
	require.Equal(t, "running", *info.Status)
}

// TestContractBatchChangedVersionRunsAgain: a completed batch job
// registered with a changed meta value (a new version) runs again, as in
// Nomad; registered unchanged, it does not.
func TestContractBatchChangedVersionRunsAgain(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	ta.registerNode(t, "node-1")
	job := batchJob("rep")
	registerAndWait(t, c, job)
	first := onlyAlloc(t, c, "rep")
	ta.reportStatus(t, first.ID, structs.AllocClientStatusComplete)

	eval := registerAndWait(t, c, job)
	require.Equal(t, uint64(0), eval.PlanAnnotations.DesiredTGUpdates["work"].Place, "an unchanged job does not run again")
	require.Equal(t, first.ID, onlyAlloc(t, c, "rep").ID)

	job.Meta = map[string]string{"run": "2"}
	eval = registerAndWait(t, c, job)
	require.Equal(t, uint64(1), eval.PlanAnnotations.DesiredTGUpdates["work"].Place, "the new version runs")
	allocs, _, err := c.Jobs().Allocations("rep", false, nil)
	require.NoError(t, err)
	require.Len(t, allocs, 2)
	var second *api.AllocationListStub
	for _, a := range allocs {
		if a.ID != first.ID {
			second = a
		}
	}
	require.NotNil(t, second)
	require.Equal(t, uint64(1), second.JobVersion)
	require.Equal(t, structs.AllocDesiredStatusRun, second.DesiredStatus)
	ta.reportStatus(t, second.ID, structs.AllocClientStatusComplete)

	eval = registerAndWait(t, c, job)
	require.Equal(t, uint64(0), eval.PlanAnnotations.DesiredTGUpdates["work"].Place, "once the new version completed, it is not run again")
}

// TestContractSysbatchPurgedJobRunsAgain: the same for sysbatch, whose
// nodes run each incarnation and version once.
func TestContractSysbatchPurgedJobRunsAgain(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	ta.registerNode(t, "node-1")
	job := batchJob("sweep")
	job.Type = new(api.JobTypeSysbatch)
	job.TaskGroups[0].ReschedulePolicy = nil
	registerAndWait(t, c, job)
	old := onlyAlloc(t, c, "sweep")
	ta.reportStatus(t, old.ID, structs.AllocClientStatusComplete)
	eval := registerAndWait(t, c, job)
	require.Equal(t, uint64(0), eval.PlanAnnotations.DesiredTGUpdates["work"].Place, "a node where it completed does not run it again")

	purgeAndWait(t, c, "sweep")
	registerAndWait(t, c, job)
	fresh := onlyAlloc(t, c, "sweep")
	require.NotEqual(t, old.ID, fresh.ID)
	require.Equal(t, structs.AllocDesiredStatusRun, fresh.DesiredStatus)

	ta.reportStatus(t, fresh.ID, structs.AllocClientStatusComplete)
	job.Meta = map[string]string{"run": "2"}
	registerAndWait(t, c, job)
	allocs, _, err := c.Jobs().Allocations("sweep", false, nil)
	require.NoError(t, err)
	require.Len(t, allocs, 2, "a changed version runs again on the node")
}
