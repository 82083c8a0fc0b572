package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// serviceJob returns a service job with group "web" of count instances.
func serviceJob(id string, count int) *structs.Job {
	job := testJob(id)
	job.Type = structs.JobTypeService
	job.TaskGroups[0].Count = count
	job.TaskGroups[0].ReschedulePolicy = &structs.ReschedulePolicy{
		Unlimited: true, Delay: 30 * time.Second, DelayFunction: structs.DelayFunctionExponential, MaxDelay: time.Hour}
	return job
}

func batchJob(id string, count int) *structs.Job {
	job := serviceJob(id, count)
	job.Type = structs.JobTypeBatch
	job.TaskGroups[0].ReschedulePolicy = &structs.ReschedulePolicy{
		Attempts: 1, Interval: 24 * time.Hour, Delay: 5 * time.Second, DelayFunction: structs.DelayFunctionConstant}
	return job
}

func addNodes(h *harness, n int, opts ...nodeOpt) {
	for i := range n {
		h.state.upsertNode(testNode(fmt.Sprintf("node-%d", i), opts...))
	}
}

// liveByNode counts the job's live allocations per node.
func liveByNode(h *harness, jobID string) map[string]int {
	out := map[string]int{}
	for _, a := range h.state.liveAllocs(jobID) {
		out[a.NodeID]++
	}
	return out
}

func setStatus(h *harness, jobID, status string) {
	for _, a := range h.state.liveAllocs(jobID) {
		c := a.Copy()
		c.ClientStatus = status
		h.state.upsertAlloc(c)
	}
}

func TestGeneric_PlacesCountOnDistinctNodes(t *testing.T) {
	h := newHarness(t)
	addNodes(h, 4)
	job := serviceJob("web", 3)
	h.state.upsertJob(job)
	eval := h.process(job)
	assert.Equal(t, structs.EvalStatusComplete, eval.Status)
	live := h.state.liveAllocs("web")
	require.Len(t, live, 3)
	assert.Len(t, liveByNode(h, "web"), 3, "job anti-affinity spreads 3 allocations over 3 of 4 nodes")
	names := map[string]bool{}
	for _, a := range live {
		names[a.Name] = true
	}
	assert.Equal(t, map[string]bool{"web.web[0]": true, "web.web[1]": true, "web.web[2]": true}, names)
	assert.Equal(t, uint64(3), eval.PlanAnnotations.DesiredTGUpdates["web"].Place)

	// Re-evaluating changes nothing.
	plans := len(h.plans)
	h.process(job)
	assert.Len(t, h.plans, plans, "no-op evaluation submits no plan")
}

func TestGeneric_ScaleUpAndDown(t *testing.T) {
	h := newHarness(t)
	addNodes(h, 2)
	job := serviceJob("web", 2)
	h.state.upsertJob(job)
	h.process(job)
	require.Len(t, h.state.liveAllocs("web"), 2)

	up := job.Copy()
	up.TaskGroups = []*structs.TaskGroup{cloneGroup(job.TaskGroups[0], func(tg *structs.TaskGroup) { tg.Count = 5 })}
	h.state.upsertJob(up)
	h.process(up)
	require.Len(t, h.state.liveAllocs("web"), 5, "a count change scales up in place (no replacement)")

	down := up.Copy()
	down.TaskGroups = []*structs.TaskGroup{cloneGroup(up.TaskGroups[0], func(tg *structs.TaskGroup) { tg.Count = 1 })}
	h.state.upsertJob(down)
	h.process(down)
	live := h.state.liveAllocs("web")
	require.Len(t, live, 1)
	assert.Equal(t, "web.web[0]", live[0].Name, "scale down stops the highest indexes")
}

func cloneGroup(tg *structs.TaskGroup, mutate func(*structs.TaskGroup)) *structs.TaskGroup {
	c := *tg
	mutate(&c)
	return &c
}

func TestGeneric_NeverPlacesOnInfeasibleNodes(t *testing.T) {
	h := newHarness(t)
	h.state.upsertNode(testNode("a", withAttr("rack", "r1")))
	h.state.upsertNode(testNode("b", withAttr("rack", "r2")))
	h.state.upsertNode(testNode("c", withAttr("rack", "r1"), inDC("dc2")))
	h.state.upsertNode(testNode("d", withAttr("rack", "r1"), inPool("other")))
	h.state.upsertNode(testNode("e", withAttr("rack", "r1"), draining))
	job := serviceJob("web", 4)
	job.TaskGroups[0].Constraints = []*structs.Constraint{{LTarget: "${attr.rack}", Operand: "=", RTarget: "r1"}}
	h.state.upsertJob(job)
	eval := h.process(job)
	assert.Equal(t, map[string]int{"a": 4}, liveByNode(h, "web"))
	assert.Empty(t, eval.FailedTGAllocs)
}

func TestGeneric_DistinctHostsFailsAndBlocks(t *testing.T) {
	h := newHarness(t)
	addNodes(h, 2)
	job := serviceJob("web", 3)
	job.Constraints = []*structs.Constraint{{Operand: structs.ConstraintDistinctHosts, RTarget: "true"}}
	h.state.upsertJob(job)
	eval := h.process(job)
	assert.Len(t, liveByNode(h, "web"), 2)
	require.Contains(t, eval.FailedTGAllocs, "web")
	assert.Equal(t, 2, eval.FailedTGAllocs["web"].ConstraintFiltered[ReasonDistinctHosts])
	assert.Equal(t, 1, eval.QueuedAllocations["web"])
	require.NotEmpty(t, eval.BlockedEval)
	blocked := h.created[len(h.created)-1]
	assert.Equal(t, structs.EvalStatusBlocked, blocked.Status)
	assert.Equal(t, eval.BlockedEval, blocked.ID)

	// A new node is capacity: the re-run places the third.
	h.state.upsertNode(testNode("node-9"))
	eval = h.process(job)
	assert.Len(t, liveByNode(h, "web"), 3)
	assert.Empty(t, eval.FailedTGAllocs)
}

func TestGeneric_DistinctProperty(t *testing.T) {
	h := newHarness(t)
	for i, rack := range []string{"r1", "r1", "r2", "r2"} {
		h.state.upsertNode(testNode(fmt.Sprintf("n%d", i), withAttr("rack", rack)))
	}
	job := serviceJob("web", 3)
	job.TaskGroups[0].Constraints = []*structs.Constraint{{LTarget: "${attr.rack}", Operand: structs.ConstraintDistinctProperty}}
	h.state.upsertJob(job)
	eval := h.process(job)
	racks := map[string]int{}
	for _, a := range h.state.liveAllocs("web") {
		racks[h.state.nodes[a.NodeID].Attributes["rack"]]++
	}
	assert.Equal(t, map[string]int{"r1": 1, "r2": 1}, racks)
	assert.Equal(t, 1, eval.QueuedAllocations["web"])
}

func TestGeneric_LostAllocationReplacedElsewhere(t *testing.T) {
	h := newHarness(t)
	addNodes(h, 3)
	job := serviceJob("web", 2)
	h.state.upsertJob(job)
	h.process(job)
	var victim string
	for node := range liveByNode(h, "web") {
		victim = node
		break
	}
	n := h.state.nodes[victim].Copy()
	n.Status = structs.NodeStatusDown
	h.state.upsertNode(n)
	h.process(job)
	byNode := liveByNode(h, "web")
	assert.NotContains(t, byNode, victim)
	assert.Len(t, h.state.liveAllocs("web"), 2)
	for _, a := range h.state.allocs {
		if a.NodeID == victim {
			assert.Equal(t, structs.AllocClientStatusLost, a.ClientStatus)
			assert.NotEmpty(t, a.NextAllocation, "the lost allocation names its replacement")
		}
	}
}

func TestGeneric_DrainMigrates(t *testing.T) {
	h := newHarness(t)
	addNodes(h, 2)
	job := serviceJob("web", 1)
	h.state.upsertJob(job)
	h.process(job)
	from := h.state.liveAllocs("web")[0].NodeID
	n := h.state.nodes[from].Copy()
	draining(n)
	h.state.upsertNode(n)
	eval := h.process(job)
	live := h.state.liveAllocs("web")
	require.Len(t, live, 1)
	assert.NotEqual(t, from, live[0].NodeID)
	assert.Equal(t, uint64(1), eval.PlanAnnotations.DesiredTGUpdates["web"].Migrate)
	stops := h.lastPlan().NodeUpdate[from]
	require.Len(t, stops, 1)
	assert.Equal(t, DescMigrating, stops[0].DesiredDescription)
}

func TestGeneric_BatchRunsToCompletionAndReschedulesPerPolicy(t *testing.T) {
	h := newHarness(t)
	addNodes(h, 2)
	job := batchJob("report", 2)
	h.state.upsertJob(job)
	h.process(job)
	live := h.state.liveAllocs("report")
	require.Len(t, live, 2)

	// One completes, one fails: only the failed one is replaced, on the
	// other node when it can.
	done, failed := live[0].Copy(), live[1].Copy()
	done.ClientStatus = structs.AllocClientStatusComplete
	failed.ClientStatus = structs.AllocClientStatusFailed
	failed.ModifyTime = h.now.Add(-time.Minute).UnixNano()
	h.state.upsertAlloc(done)
	h.state.upsertAlloc(failed)
	h.process(job)
	live = h.state.liveAllocs("report")
	require.Len(t, live, 1, "the completed allocation is not run again")
	repl := live[0]
	assert.Equal(t, failed.ID, repl.PreviousAllocation)
	assert.Equal(t, failed.Name, repl.Name)
	require.NotNil(t, repl.RescheduleTracker)
	assert.Len(t, repl.RescheduleTracker.Events, 1)
	assert.NotEqual(t, failed.NodeID, repl.NodeID, "a rescheduled allocation avoids the node it failed on")

	// The replacement fails too: attempts = 1 within 24h is exhausted.
	f2 := repl.Copy()
	f2.ClientStatus = structs.AllocClientStatusFailed
	f2.ModifyTime = h.now.Add(-time.Minute).UnixNano()
	h.state.upsertAlloc(f2)
	eval := h.process(job)
	assert.Empty(t, h.state.liveAllocs("report"), "no reschedule past the policy's attempts")
	assert.Empty(t, eval.FailedTGAllocs)
}

func TestGeneric_RescheduleDelayCreatesFollowup(t *testing.T) {
	h := newHarness(t)
	addNodes(h, 2)
	job := serviceJob("web", 1)
	h.state.upsertJob(job)
	h.process(job)
	a := h.state.liveAllocs("web")[0].Copy()
	a.ClientStatus = structs.AllocClientStatusFailed
	a.ModifyTime = h.now.UnixNano()
	h.state.upsertAlloc(a)
	eval := h.process(job)
	assert.Empty(t, h.state.liveAllocs("web"), "the 30s delay has not passed")
	require.NotEmpty(t, eval.NextEval)
	f := h.created[len(h.created)-1]
	assert.Equal(t, h.now.Add(30*time.Second), f.WaitUntil)
	assert.Equal(t, structs.EvalStatusPending, f.Status)

	h.now = h.now.Add(30 * time.Second)
	h.process(job)
	require.Len(t, h.state.liveAllocs("web"), 1)
}

func TestRescheduleDelay(t *testing.T) {
	p := func(fn string) *structs.ReschedulePolicy {
		return &structs.ReschedulePolicy{Unlimited: true, Delay: 5 * time.Second, DelayFunction: fn, MaxDelay: 40 * time.Second}
	}
	cases := []struct {
		fn   string
		want []time.Duration
	}{
		{structs.DelayFunctionConstant, []time.Duration{5, 5, 5, 5, 5}},
		{structs.DelayFunctionExponential, []time.Duration{5, 10, 20, 40, 40}},
		{structs.DelayFunctionFibonacci, []time.Duration{5, 5, 10, 15, 25, 40, 40}},
	}
	for _, c := range cases {
		for n, want := range c.want {
			assert.Equal(t, want*time.Second, rescheduleDelay(p(c.fn), n), "%s after %d reschedules", c.fn, n)
		}
	}
}

func TestDecideReschedule(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	failed := &structs.Allocation{ID: "a", ClientStatus: structs.AllocClientStatusFailed, ModifyTime: now.Add(-time.Hour).UnixNano()}
	withEvents := func(ages ...time.Duration) *structs.Allocation {
		c := failed.Copy()
		c.RescheduleTracker = &structs.RescheduleTracker{}
		for _, age := range ages {
			c.RescheduleTracker.Events = append(c.RescheduleTracker.Events, &structs.RescheduleEvent{RescheduleTime: now.Add(-age).UnixNano()})
		}
		return c
	}
	limited := &structs.ReschedulePolicy{Attempts: 2, Interval: time.Hour, Delay: 5 * time.Second, DelayFunction: structs.DelayFunctionConstant}
	cases := []struct {
		name   string
		policy *structs.ReschedulePolicy
		alloc  *structs.Allocation
		want   rescheduleDecision
	}{
		{"no policy", nil, failed, rescheduleNever},
		{"attempts 0", &structs.ReschedulePolicy{Delay: 5 * time.Second}, failed, rescheduleNever},
		{"first attempt", limited, failed, rescheduleNow},
		{"one recent", limited, withEvents(10 * time.Minute), rescheduleNow},
		{"two recent: exhausted", limited, withEvents(10*time.Minute, 20*time.Minute), rescheduleNever},
		{"old events fall out of the interval", limited, withEvents(2*time.Hour, 3*time.Hour), rescheduleNow},
		{"unlimited", &structs.ReschedulePolicy{Unlimited: true, Delay: 5 * time.Second, DelayFunction: "constant"},
			withEvents(1, 2, 3, 4, 5), rescheduleNow},
		{"delay not passed", &structs.ReschedulePolicy{Unlimited: true, Delay: 2 * time.Hour, DelayFunction: "constant"}, failed, rescheduleLater},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _ := decideReschedule(c.policy, c.alloc, now)
			assert.Equal(t, c.want, got)
		})
	}
}

// TestGeneric_DrainHonoursMigrateMaxParallel drains the node holding four
// allocations of a group with migrate { max_parallel = 2 }: at most two
// migrate at once, the next ones once their replacements are healthy.
func TestGeneric_DrainHonoursMigrateMaxParallel(t *testing.T) {
	h := newHarness(t)
	h.state.upsertNode(testNode("node-a"))
	job := serviceJob("web", 4)
	job.TaskGroups[0].Migrate = &structs.MigrateStrategy{MaxParallel: 2}
	h.state.upsertJob(job)
	h.process(job)
	require.Equal(t, map[string]int{"node-a": 4}, liveByNode(h, "web"))
	h.state.upsertNode(testNode("node-b"))
	n := h.state.nodes["node-a"].Copy()
	draining(n)
	h.state.upsertNode(n)

	eval := h.process(job)
	assert.Equal(t, uint64(2), eval.PlanAnnotations.DesiredTGUpdates["web"].Migrate)
	assert.Equal(t, map[string]int{"node-a": 2, "node-b": 2}, liveByNode(h, "web"))

	// Nothing more moves while the replacements are pending.
	eval = h.process(job)
	assert.Zero(t, eval.PlanAnnotations.DesiredTGUpdates["web"].Migrate)
	assert.Equal(t, map[string]int{"node-a": 2, "node-b": 2}, liveByNode(h, "web"))

	// One replacement runs: it still counts until its client finds it
	// healthy per the migrate block; then one more may migrate.
	var first *structs.Allocation
	for _, a := range h.state.liveAllocs("web") {
		if a.NodeID == "node-b" && first == nil {
			first = a.Copy()
			first.ClientStatus = structs.AllocClientStatusRunning
			h.state.upsertAlloc(first)
		}
	}
	eval = h.process(job)
	assert.Zero(t, eval.PlanAnnotations.DesiredTGUpdates["web"].Migrate, "running is not healthy yet")
	first = first.Copy()
	first.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: new(true)}
	h.state.upsertAlloc(first)
	eval = h.process(job)
	assert.Equal(t, uint64(1), eval.PlanAnnotations.DesiredTGUpdates["web"].Migrate)
	assert.Equal(t, map[string]int{"node-a": 1, "node-b": 3}, liveByNode(h, "web"))

	// A replacement that a deployment reports unhealthy still counts.
	for _, a := range h.state.liveAllocs("web") {
		if a.NodeID == "node-b" && a.ClientStatus != structs.AllocClientStatusRunning {
			c := a.Copy()
			c.ClientStatus = structs.AllocClientStatusRunning
			unhealthy := false
			c.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: &unhealthy}
			h.state.upsertAlloc(c)
			break
		}
	}
	eval = h.process(job)
	assert.Zero(t, eval.PlanAnnotations.DesiredTGUpdates["web"].Migrate, "two in flight: one pending, one unhealthy")

	setStatus(h, "web", structs.AllocClientStatusRunning)
	for _, a := range h.state.liveAllocs("web") {
		c := a.Copy()
		c.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: new(true)}
		h.state.upsertAlloc(c)
	}
	h.process(job)
	assert.Equal(t, map[string]int{"node-b": 4}, liveByNode(h, "web"))
}

// An allocation the operator stopped (alloc stop) is replaced by one that
// names it as previous, on another node when there is one; with
// Reschedule the replacement extends its reschedule history. Once
// replaced, it is not replaced again.
func TestGeneric_OperatorStopReplaces(t *testing.T) {
	for _, tc := range []struct {
		name       string
		jobType    string
		reschedule bool
	}{
		{"service migrate", structs.JobTypeService, false},
		{"service reschedule", structs.JobTypeService, true},
		{"batch migrate", structs.JobTypeBatch, false},
		{"batch reschedule", structs.JobTypeBatch, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			addNodes(h, 2)
			job := serviceJob("web", 1)
			job.Type = tc.jobType
			h.state.upsertJob(job)
			h.process(job)
			live := h.state.liveAllocs("web")
			require.Len(t, live, 1)
			stopped := live[0].Copy()
			stopped.DesiredStatus = structs.AllocDesiredStatusStop
			stopped.DesiredTransition = structs.DesiredTransition{Migrate: true, Reschedule: tc.reschedule}
			h.state.upsertAlloc(stopped)

			h.process(job)
			live = h.state.liveAllocs("web")
			require.Len(t, live, 1)
			repl := live[0]
			assert.Equal(t, stopped.ID, repl.PreviousAllocation)
			assert.Equal(t, stopped.Name, repl.Name, "the replacement takes the stopped allocation's slot")
			assert.NotEqual(t, stopped.NodeID, repl.NodeID, "another node is preferred")
			if tc.reschedule {
				require.NotNil(t, repl.RescheduleTracker)
				assert.Equal(t, stopped.ID, repl.RescheduleTracker.Events[0].PrevAllocID)
			} else {
				assert.Nil(t, repl.RescheduleTracker)
			}

			// Linked now: a new evaluation places nothing more.
			stopped = stopped.Copy()
			stopped.NextAllocation = repl.ID
			h.state.upsertAlloc(stopped)
			h.process(job)
			assert.Len(t, h.state.liveAllocs("web"), 1)
		})
	}
}
