package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// planAllocs flattens a plan's NodeAllocation or NodeUpdate.
func planAllocs(m map[string][]*structs.Allocation) []*structs.Allocation {
	var out []*structs.Allocation
	for _, l := range m {
		out = append(out, l...)
	}
	return out
}

func TestSystemSched_FreshPlacementCreatesDeployment(t *testing.T) {
	h := newHarness(t)
	for _, n := range []*structs.Node{testNode("a"), testNode("b"), testNode("c", down)} {
		h.state.upsertNode(n)
	}
	job := withUpdate(testJob("web"))
	h.state.upsertJob(job)

	eval := h.process(job)
	require.Equal(t, structs.EvalStatusComplete, eval.Status)
	plan := h.lastPlan()
	require.NotNil(t, plan.Deployment)
	require.Equal(t, plan.Deployment.ID, eval.DeploymentID)
	require.Equal(t, uint64(2), eval.PlanAnnotations.DesiredTGUpdates["web"].Place)
	require.Equal(t, map[string]int{"web": 0}, eval.QueuedAllocations)
	require.Nil(t, eval.FailedTGAllocs)

	st := plan.Deployment.TaskGroups["web"]
	require.Equal(t, 2, st.DesiredTotal)
	require.Equal(t, 2, st.PlacedAllocs)
	require.Equal(t, h.now.Add(10*time.Minute), st.RequireProgressBy)
	require.Equal(t, structs.DeploymentStatusDescriptionRunning, plan.Deployment.StatusDescription)

	placed := planAllocs(plan.NodeAllocation)
	require.Len(t, placed, 2)
	for _, a := range placed {
		require.NotEmpty(t, a.ID)
		require.Equal(t, "web.web[0]", a.Name)
		require.Equal(t, a.NodeID, a.NodeName)
		require.Equal(t, eval.ID, a.EvalID)
		require.Equal(t, plan.Deployment.ID, a.DeploymentID)
		require.Equal(t, structs.AllocDesiredStatusRun, a.DesiredStatus)
		require.Equal(t, structs.AllocClientStatusPending, a.ClientStatus)
		require.NotNil(t, a.Metrics)
		require.Equal(t, map[string]int{"dc1": 2}, a.Metrics.NodesAvailable)
		require.Equal(t, int64(100), a.AllocatedResources.Tasks["server"].Cpu.CpuShares)
		require.Equal(t, int64(64), a.AllocatedResources.Tasks["server"].Memory.MemoryMB)
	}

	// Nothing left to do: no plan, the active deployment is still named.
	again := h.process(job)
	require.Len(t, h.plans, 1)
	require.Equal(t, eval.DeploymentID, again.DeploymentID)
	require.Equal(t, uint64(2), again.PlanAnnotations.DesiredTGUpdates["web"].Ignore)
}

func TestSystemSched_DestructiveUpdateReplacesAndCancelsOldDeployment(t *testing.T) {
	h := newHarness(t)
	h.state.upsertNode(testNode("a"))
	h.state.upsertNode(testNode("b"))
	v0 := withUpdate(testJob("web"))
	v0.TaskGroups[0].Update.MaxParallel = 2 // one wave
	h.state.upsertJob(v0)
	first := h.process(v0)
	old := h.state.liveAllocs("web")

	v1 := nextVersion(v0, destructiveChange)
	h.state.upsertJob(v1)
	eval := h.process(v1)
	plan := h.lastPlan()
	require.Equal(t, []*structs.DeploymentStatusUpdate{{DeploymentID: first.DeploymentID,
		Status: structs.DeploymentStatusCancelled, StatusDescription: structs.DeploymentStatusDescriptionNewerJob}},
		plan.DeploymentUpdates)
	require.NotEqual(t, first.DeploymentID, eval.DeploymentID)
	require.Equal(t, uint64(2), eval.PlanAnnotations.DesiredTGUpdates["web"].DestructiveUpdate)

	for _, s := range planAllocs(plan.NodeUpdate) {
		require.Equal(t, DescUpdating, s.DesiredDescription)
	}
	live := h.state.liveAllocs("web")
	require.Len(t, live, 2)
	prev := map[string]bool{old[0].ID: true, old[1].ID: true}
	for _, a := range live {
		require.Equal(t, uint64(1), a.JobVersion)
		require.True(t, prev[a.PreviousAllocation], "replacement names the old allocation")
		require.Equal(t, eval.DeploymentID, a.DeploymentID)
	}
}

func TestSystemSched_InplaceUpdateKeepsIDs(t *testing.T) {
	h := newHarness(t)
	h.state.upsertNode(testNode("a"))
	v0 := withUpdate(testJob("web"))
	h.state.upsertJob(v0)
	h.process(v0)
	before := h.state.liveAllocs("web")[0]
	healthy := true
	c := before.Copy()
	c.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: &healthy}
	h.state.upsertAlloc(c)

	v1 := nextVersion(v0, inplaceChange)
	h.state.upsertJob(v1)
	eval := h.process(v1)
	require.Equal(t, uint64(1), eval.PlanAnnotations.DesiredTGUpdates["web"].InPlaceUpdate)
	updated := planAllocs(h.lastPlan().NodeAllocation)
	require.Len(t, updated, 1)
	require.Equal(t, before.ID, updated[0].ID)
	require.Equal(t, uint64(1), updated[0].JobVersion)
	require.Nil(t, updated[0].Job, "the plan carries the job once")
	require.Equal(t, eval.DeploymentID, updated[0].DeploymentID)
	require.Nil(t, updated[0].DeploymentStatus, "health must be reported again")
	require.Empty(t, h.lastPlan().NodeUpdate)
}

func TestSystemSched_JobStopAndPurge(t *testing.T) {
	h := newHarness(t)
	h.state.upsertNode(testNode("a"))
	h.state.upsertNode(testNode("b"))
	job := withUpdate(testJob("web"))
	h.state.upsertJob(job)
	first := h.process(job)

	stopped := job.Copy()
	stopped.Stop = true
	h.state.upsertJob(stopped)
	eval := h.process(stopped)
	require.Equal(t, structs.EvalStatusComplete, eval.Status)
	require.Empty(t, eval.DeploymentID)
	require.Empty(t, h.state.liveAllocs("web"))
	require.Equal(t, structs.DeploymentStatusDescriptionStoppedJob, h.state.deployments[first.DeploymentID].StatusDescription)
	require.Equal(t, uint64(2), eval.PlanAnnotations.DesiredTGUpdates["web"].Stop)

	// A purge after the stop has nothing left to do.
	h.state.deleteJob(stopped)
	plans := len(h.plans)
	h.process(job)
	require.Len(t, h.plans, plans)
}

func TestSystemSched_PurgeStopsAllocs(t *testing.T) {
	h := newHarness(t)
	h.state.upsertNode(testNode("a"))
	job := testJob("web")
	h.state.upsertJob(job)
	h.process(job)
	h.state.deleteJob(job)
	eval := h.process(job)
	require.Equal(t, structs.EvalStatusComplete, eval.Status)
	require.Empty(t, h.state.liveAllocs("web"))
}

func TestSystemSched_NodeDownMarksLost(t *testing.T) {
	h := newHarness(t)
	h.state.upsertNode(testNode("a"))
	job := testJob("web")
	h.state.upsertJob(job)
	h.process(job)
	h.state.upsertNode(testNode("a", down))
	h.process(job)
	stops := planAllocs(h.lastPlan().NodeUpdate)
	require.Len(t, stops, 1)
	require.Equal(t, structs.AllocDesiredStatusStop, stops[0].DesiredStatus)
	require.Equal(t, structs.AllocClientStatusLost, stops[0].ClientStatus)
	require.Equal(t, DescLost, stops[0].DesiredDescription)
}

func TestSystemSched_NodeEvent(t *testing.T) {
	h := newHarness(t)
	h.state.upsertNode(testNode("a"))
	job := testJob("web")
	h.state.upsertJob(job)
	h.process(job)
	h.state.upsertNode(testNode("b"))
	eval := h.process(job)
	placed := planAllocs(h.lastPlan().NodeAllocation)
	require.Len(t, placed, 1)
	require.Equal(t, "b", placed[0].NodeID)
	require.Equal(t, uint64(1), eval.PlanAnnotations.DesiredTGUpdates["web"].Ignore)
}

func TestSystemSched_ResourceExhaustionIsAFailure(t *testing.T) {
	h := newHarness(t)
	small := func(n *structs.Node) { n.NodeResources.Cpu.CpuShares = 50 }
	windows := withAttr("kernel.name", "windows")
	for _, n := range []*structs.Node{testNode("a"), testNode("b", small), testNode("c", windows)} {
		n.NodeClass = "std"
		h.state.upsertNode(n)
	}
	job := withUpdate(testJob("web"))
	job.Constraints = []*structs.Constraint{{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "linux"}}
	h.state.upsertJob(job)

	eval := h.process(job)
	require.Equal(t, structs.EvalStatusComplete, eval.Status)
	require.Equal(t, map[string]int{"web": 1}, eval.QueuedAllocations)
	m := eval.FailedTGAllocs["web"]
	require.NotNil(t, m, "only exhaustion is a failure")
	require.Equal(t, 1, m.NodesExhausted)
	require.Equal(t, map[string]int{structs.DimensionCPU: 1}, m.DimensionExhausted)
	require.Equal(t, map[string]int{"std": 1}, m.ClassExhausted)
	require.Equal(t, 3, m.NodesEvaluated)
	require.Equal(t, 1, m.NodesFiltered)
	require.Equal(t, map[string]int{"${attr.kernel.name} = linux": 1}, m.ConstraintFiltered)
	require.Zero(t, m.CoalescedFailures)

	placed := planAllocs(h.lastPlan().NodeAllocation)
	require.Len(t, placed, 1)
	require.Equal(t, "a", placed[0].NodeID)
	st := h.lastPlan().Deployment.TaskGroups["web"]
	require.Equal(t, 1, st.DesiredTotal, "nodes found exhausted leave DesiredTotal")
	require.Equal(t, 1, st.PlacedAllocs)
}

func TestSystemSched_DestructiveUpdateThatDoesNotFitKeepsOld(t *testing.T) {
	h := newHarness(t)
	h.state.upsertNode(testNode("a", func(n *structs.Node) { n.NodeResources.Cpu.CpuShares = 150 }))
	v0 := testJob("web")
	h.state.upsertJob(v0)
	h.process(v0)
	old := h.state.liveAllocs("web")[0]

	v1 := nextVersion(v0, func(tg *structs.TaskGroup) { tg.Tasks[0].Resources = &structs.Resources{CPU: 200, MemoryMB: 64} })
	h.state.upsertJob(v1)
	eval := h.process(v1)
	require.Equal(t, 1, eval.FailedTGAllocs["web"].NodesExhausted)
	require.Equal(t, []*structs.Allocation{old}, h.state.liveAllocs("web"), "the old allocation keeps running")
}

func TestSystemSched_PortsAcrossJobs(t *testing.T) {
	h := newHarness(t)
	h.state.upsertNode(testNode("a"))
	withPorts := func(id string, static int) *structs.Job {
		job := testJob(id)
		nw := &structs.NetworkResource{DynamicPorts: []structs.Port{{Label: "http"}}}
		if static != 0 {
			nw.ReservedPorts = []structs.Port{{Label: "admin", Value: static}}
		}
		job.TaskGroups[0].Networks = []*structs.NetworkResource{nw}
		return job
	}
	one, two, three := withPorts("one", 9000), withPorts("two", 0), withPorts("three", 9000)
	for _, j := range []*structs.Job{one, two, three} {
		h.state.upsertJob(j)
	}
	h.process(one)
	h.process(two)
	eval := h.process(three)

	ports := func(jobID string) map[string]int {
		return mappings(h.state.liveAllocs(jobID)[0].AllocatedResources)
	}
	require.Equal(t, map[string]int{"admin": 9000, "http": 20000}, ports("one"))
	require.Equal(t, map[string]int{"http": 20001}, ports("two"))
	require.Empty(t, h.state.liveAllocs("three"))
	require.Equal(t, map[string]int{structs.DimensionPorts: 1}, eval.FailedTGAllocs["web"].DimensionExhausted)
}

func TestSystemSched_PartialCommitReplans(t *testing.T) {
	h := newHarness(t)
	h.state.upsertNode(testNode("a"))
	h.state.upsertNode(testNode("b"))
	job := withUpdate(testJob("web"))
	h.state.upsertJob(job)
	h.rejectNodes = map[string]bool{"b": true}
	var eval *structs.Evaluation
	h.rejectOnce = true
	eval = h.process(job)
	require.Equal(t, structs.EvalStatusComplete, eval.Status)
	require.Len(t, h.plans, 2)
	require.Len(t, h.state.liveAllocs("web"), 2)
	d := h.state.deployments[eval.DeploymentID]
	require.Equal(t, 2, d.TaskGroups["web"].PlacedAllocs, "a re-plan does not count placements twice")
	require.Len(t, h.state.deployments, 1, "the re-plan joins the deployment the first plan created")
}

func TestSystemSched_PartialCommitGivesUp(t *testing.T) {
	h := newHarness(t)
	h.state.upsertNode(testNode("a"))
	job := testJob("web")
	h.state.upsertJob(job)
	h.rejectNodes = map[string]bool{"a": true}
	eval := h.process(job)
	require.Equal(t, structs.EvalStatusFailed, eval.Status)
	require.Equal(t, "maximum attempts reached (5)", eval.StatusDescription)
	require.Len(t, h.plans, 5)
}

func TestSysBatchSched_DoesNotRerunFinished(t *testing.T) {
	h := newHarness(t)
	h.state.upsertNode(testNode("a"))
	job := testJob("batch")
	job.Type = structs.JobTypeSysBatch
	h.state.upsertJob(job)
	h.process(job)
	a := h.state.liveAllocs("batch")[0].Copy()
	a.ClientStatus = structs.AllocClientStatusComplete
	h.state.upsertAlloc(a)

	eval := h.process(job)
	require.Len(t, h.plans, 1, "nothing to do")
	require.Equal(t, uint64(1), eval.PlanAnnotations.DesiredTGUpdates["web"].Ignore)
	require.Empty(t, eval.DeploymentID)

	v1 := nextVersion(job, destructiveChange)
	h.state.upsertJob(v1)
	h.process(v1)
	require.Len(t, h.state.liveAllocs("batch"), 1, "a new version runs again")
}
