package scheduler

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// disconnectJob is service job "web" (count 2) whose group has
// disconnect { lost_after = "1m" } with replace and reconcile as given
// (reconcile "" leaves the default).
func disconnectJob(replace bool, reconcile string) *structs.Job {
	job := serviceJob("web", 2)
	d := time.Minute
	job.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{LostAfter: &d, Replace: &replace}
	if reconcile != "" {
		job.TaskGroups[0].Disconnect.Reconcile = &reconcile
	}
	return job
}

// genericOutcome is a generic group's decision as IDs and counts.
type genericOutcome struct {
	place    []placementWant
	unknown  []string
	lost     []string
	stop     []string // "id: reason"
	ignore   []string
	followup time.Time
}

func outcomeOf(t *testing.T, res GenericResult) genericOutcome {
	t.Helper()
	require.Len(t, res.Groups, 1)
	g := res.Groups[0]
	ids := func(as []*structs.Allocation) []string {
		var out []string
		for _, a := range as {
			out = append(out, a.ID)
		}
		slices.Sort(out)
		return out
	}
	o := genericOutcome{unknown: ids(g.Unknown), lost: ids(g.Lost), ignore: ids(g.Ignore), followup: res.FollowupAt}
	for _, p := range g.Place {
		pw := placementWant{name: p.Name, reschedule: p.Reschedule}
		if p.Previous != nil {
			pw.previous = p.Previous.ID
		}
		o.place = append(o.place, pw)
	}
	slices.SortFunc(o.place, func(a, b placementWant) int { return nameIndex(a.name) - nameIndex(b.name) })
	for _, s := range g.Stop {
		o.stop = append(o.stop, s.Alloc.ID+": "+s.Reason)
	}
	slices.Sort(o.stop)
	return o
}

// TestReconcileGeneric_Disconnect: allocations of a disconnected node are
// unknown within lost_after (replaced when replace), lost past it or
// without a window, and on reconnection one of original and replacement is
// kept.
func TestReconcileGeneric_Disconnect(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	const (
		running = structs.AllocClientStatusRunning
		unknown = structs.AllocClientStatusUnknown
	)
	nodes := func(aStatus string) []*structs.Node {
		a := testNode("a")
		a.Status = aStatus
		return []*structs.Node{a, testNode("b")}
	}
	on := func(a *structs.Allocation, node string) *structs.Allocation {
		a.NodeID, a.NodeName = node, node
		return a
	}
	unknownSince := func(a *structs.Allocation, ago time.Duration) *structs.Allocation {
		a.ClientStatus = unknown
		a.DisconnectedAt = now.Add(-ago).UnixNano()
		return a
	}
	replacedBy := func(orig, rep *structs.Allocation) {
		orig.NextAllocation, rep.PreviousAllocation = rep.ID, orig.ID
	}
	withJob := func(job *structs.Job) []*structs.Allocation {
		return []*structs.Allocation{
			genericAlloc("orig", job, 0, running, now),
			on(genericAlloc("other", job, 1, running, now), "b"),
		}
	}

	cases := []struct {
		name   string
		job    *structs.Job
		status string // of node "a"
		allocs func(job *structs.Job) []*structs.Allocation
		want   genericOutcome
	}{
		{
			name: "no disconnect block: lost and replaced at once", job: serviceJob("web", 2),
			status: structs.NodeStatusDisconnected, allocs: withJob,
			want: genericOutcome{lost: []string{"orig"}, ignore: []string{"other"},
				place: []placementWant{{name: "web.web[0]", previous: "orig"}}},
		},
		{
			name: "disconnected within lost_after: marked unknown, replaced, deadline follows up", job: disconnectJob(true, ""),
			status: structs.NodeStatusDisconnected, allocs: withJob,
			want: genericOutcome{unknown: []string{"orig"}, ignore: []string{"other"},
				place: []placementWant{{name: "web.web[0]", previous: "orig", reschedule: true}}, followup: now.Add(time.Minute)},
		},
		{
			name: "reschedule policy exhausted: unknown, not replaced",
			job: func() *structs.Job {
				j := disconnectJob(true, "")
				j.TaskGroups[0].ReschedulePolicy = &structs.ReschedulePolicy{Attempts: 1, Interval: time.Hour}
				return j
			}(),
			status: structs.NodeStatusDisconnected,
			allocs: func(job *structs.Job) []*structs.Allocation {
				allocs := withJob(job)
				allocs[0].RescheduleTracker = &structs.RescheduleTracker{Events: []*structs.RescheduleEvent{
					{RescheduleTime: now.Add(-time.Minute).UnixNano(), PrevAllocID: "earlier"}}}
				return allocs
			},
			want: genericOutcome{unknown: []string{"orig"}, ignore: []string{"other"}, followup: now.Add(time.Minute)},
		},
		{
			name: "replace = false: unknown, holds its slot, no replacement, no deadline", job: disconnectJob(false, ""),
			status: structs.NodeStatusDisconnected, allocs: withJob,
			want: genericOutcome{unknown: []string{"orig"}, ignore: []string{"other"}},
		},
		{
			name: "replace = false, node down: unknown, not lost", job: disconnectJob(false, ""),
			status: structs.NodeStatusDown, allocs: withJob,
			want: genericOutcome{unknown: []string{"orig"}, ignore: []string{"other"}},
		},
		{
			name: "prevent_reschedule_on_lost, node down: unknown, not lost",
			job: func() *structs.Job {
				j := serviceJob("web", 2)
				j.TaskGroups[0].PreventRescheduleOnLost = true
				return j
			}(),
			status: structs.NodeStatusDown, allocs: withJob,
			want: genericOutcome{unknown: []string{"orig"}, ignore: []string{"other"}},
		},
		{
			name: "already unknown and replaced: left alone, no second replacement", job: disconnectJob(true, ""),
			status: structs.NodeStatusDisconnected,
			allocs: func(job *structs.Job) []*structs.Allocation {
				orig := unknownSince(genericAlloc("orig", job, 0, running, now), 20*time.Second)
				rep := on(genericAlloc("rep", job, 0, running, now), "b")
				replacedBy(orig, rep)
				return []*structs.Allocation{orig, rep, on(genericAlloc("other", job, 1, running, now), "b")}
			},
			want: genericOutcome{ignore: []string{"orig", "other", "rep"}, followup: now.Add(40 * time.Second)},
		},
		{
			name: "already unknown, its replacement itself replaced by an update: no second replacement", job: disconnectJob(true, ""),
			status: structs.NodeStatusDisconnected,
			allocs: func(job *structs.Job) []*structs.Allocation {
				orig := unknownSince(genericAlloc("orig", job, 0, running, now), 20*time.Second)
				rep := withDesiredStop(on(genericAlloc("rep", job, 0, structs.AllocClientStatusComplete, now), "b"))
				rep2 := on(genericAlloc("rep2", job, 0, running, now), "b")
				replacedBy(orig, rep)
				replacedBy(rep, rep2)
				return []*structs.Allocation{orig, rep, rep2, on(genericAlloc("other", job, 1, running, now), "b")}
			},
			want: genericOutcome{ignore: []string{"orig", "other", "rep2"}, followup: now.Add(40 * time.Second)},
		},
		{
			name: "already unknown, replacement failed to place earlier: replaced now", job: disconnectJob(true, ""),
			status: structs.NodeStatusDisconnected,
			allocs: func(job *structs.Job) []*structs.Allocation {
				return []*structs.Allocation{unknownSince(genericAlloc("orig", job, 0, running, now), 20*time.Second),
					on(genericAlloc("other", job, 1, running, now), "b")}
			},
			want: genericOutcome{ignore: []string{"orig", "other"}, place: []placementWant{{name: "web.web[0]", previous: "orig", reschedule: true}},
				followup: now.Add(40 * time.Second)},
		},
		{
			name: "past lost_after: lost, not replaced again", job: disconnectJob(true, ""),
			status: structs.NodeStatusDisconnected,
			allocs: func(job *structs.Job) []*structs.Allocation {
				orig := unknownSince(genericAlloc("orig", job, 0, running, now), time.Minute)
				rep := on(genericAlloc("rep", job, 0, running, now), "b")
				replacedBy(orig, rep)
				return []*structs.Allocation{orig, rep, on(genericAlloc("other", job, 1, running, now), "b")}
			},
			want: genericOutcome{lost: []string{"orig"}, ignore: []string{"other", "rep"}},
		},
		{
			name: "past lost_after without replacement: lost and replaced", job: disconnectJob(true, ""),
			status: structs.NodeStatusDisconnected,
			allocs: func(job *structs.Job) []*structs.Allocation {
				return []*structs.Allocation{unknownSince(genericAlloc("orig", job, 0, running, now), 2*time.Minute),
					on(genericAlloc("other", job, 1, running, now), "b")}
			},
			want: genericOutcome{lost: []string{"orig"}, ignore: []string{"other"}, place: []placementWant{{name: "web.web[0]", previous: "orig"}}},
		},
		{
			name: "replace = false, past lost_after: still unknown, not replaced", job: disconnectJob(false, ""),
			status: structs.NodeStatusDisconnected,
			allocs: func(job *structs.Job) []*structs.Allocation {
				return []*structs.Allocation{unknownSince(genericAlloc("orig", job, 0, running, now), 2*time.Minute),
					on(genericAlloc("other", job, 1, running, now), "b")}
			},
			want: genericOutcome{ignore: []string{"orig", "other"}},
		},
		{
			name: "node down within lost_after: lost", job: disconnectJob(true, ""),
			status: structs.NodeStatusDown,
			allocs: func(job *structs.Job) []*structs.Allocation {
				orig := unknownSince(genericAlloc("orig", job, 0, running, now), 10*time.Second)
				rep := on(genericAlloc("rep", job, 0, running, now), "b")
				replacedBy(orig, rep)
				return []*structs.Allocation{orig, rep, on(genericAlloc("other", job, 1, running, now), "b")}
			},
			want: genericOutcome{lost: []string{"orig"}, ignore: []string{"other", "rep"}},
		},
		{
			name: "reconnected, client not reported yet: waits, no replacement, deadline kept", job: disconnectJob(true, ""),
			status: structs.NodeStatusReady,
			allocs: func(job *structs.Job) []*structs.Allocation {
				return []*structs.Allocation{unknownSince(genericAlloc("orig", job, 0, running, now), 30*time.Second),
					on(genericAlloc("other", job, 1, running, now), "b")}
			},
			want: genericOutcome{ignore: []string{"orig", "other"}, followup: now.Add(30 * time.Second)},
		},
		{
			name: "reconnected without replacement: kept", job: disconnectJob(false, ""),
			status: structs.NodeStatusReady,
			allocs: func(job *structs.Job) []*structs.Allocation {
				orig := unknownSince(genericAlloc("orig", job, 0, running, now), 30*time.Second)
				orig.ClientStatus = running
				return []*structs.Allocation{orig, on(genericAlloc("other", job, 1, running, now), "b")}
			},
			want: genericOutcome{ignore: []string{"orig", "other"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := ReconcileGeneric(GenericInput{Job: tc.job, Nodes: nodes(tc.status), Allocs: tc.allocs(tc.job), Now: now})
			got := outcomeOf(t, res)
			assert.Equal(t, tc.want, got)
			d := res.DesiredTGUpdates["web"]
			assert.Equal(t, uint64(len(tc.want.ignore)+len(tc.want.unknown)), d.Ignore, "unknown allocations count as ignored")
			assert.Equal(t, uint64(len(tc.want.stop)+len(tc.want.lost)), d.Stop)
		})
	}
}

// TestReconcileGeneric_Reconnect: when the node of a replaced unknown
// allocation reconnects and its client reports it running, the group's
// reconcile strategy keeps one and stops the other.
func TestReconcileGeneric_Reconnect(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	const running = structs.AllocClientStatusRunning
	started := func(a *structs.Allocation, at time.Time, score float64) *structs.Allocation {
		a.TaskStates = map[string]*structs.TaskState{"server": {State: "running", StartedAt: at}}
		a.Metrics = &structs.AllocationMetric{ScoreMetaData: []*structs.NodeScoreMeta{{NodeID: a.NodeID, NormScore: score}}}
		return a
	}
	cases := []struct {
		name      string
		reconcile string
		origStart time.Time
		origScore float64
		repStatus string
		repStart  time.Time
		repScore  float64
		wantKeep  string
		restarted bool // the original's task restarted after the replacement started
	}{
		{name: "keep_original", reconcile: structs.ReconcileKeepOriginal, origScore: 0.1, repScore: 0.9, wantKeep: "orig"},
		{name: "keep_replacement", reconcile: structs.ReconcileKeepReplacement, origScore: 0.9, repScore: 0.1, wantKeep: "rep"},
		{name: "longest_running: the original ran longer", reconcile: structs.ReconcileLongestRunning,
			origStart: now.Add(-time.Hour), repStart: now.Add(-time.Minute), wantKeep: "orig"},
		{name: "longest_running: the original restarted since", reconcile: structs.ReconcileLongestRunning,
			origStart: now.Add(-time.Hour), repStart: now.Add(-time.Minute), restarted: true, wantKeep: "rep"},
		{name: "longest_running: a pending replacement loses", reconcile: structs.ReconcileLongestRunning,
			origStart: now.Add(-time.Second), repStatus: structs.AllocClientStatusPending, wantKeep: "orig"},
		{name: "best_score: the replacement's node scored better", reconcile: structs.ReconcileBestScore,
			origScore: 0.2, repScore: 0.7, wantKeep: "rep"},
		{name: "best_score: the original's node scored better", reconcile: structs.ReconcileBestScore,
			origScore: 0.7, repScore: 0.2, wantKeep: "orig"},
		{name: "best_score: a tie keeps the original", reconcile: structs.ReconcileBestScore,
			origScore: 0.5, repScore: 0.5, wantKeep: "orig"},
		{name: "best_score is the default", reconcile: "", origScore: 0.2, repScore: 0.7, wantKeep: "rep"},
		{name: "best_score: a pending replacement does not beat a running original", reconcile: structs.ReconcileBestScore,
			origScore: 0.2, repScore: 0.7, repStatus: structs.AllocClientStatusPending, wantKeep: "orig"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := disconnectJob(true, tc.reconcile)
			job.TaskGroups[0].Count = 1
			orig := started(genericAlloc("orig", job, 0, running, now), tc.origStart, tc.origScore)
			orig.DisconnectedAt = now.Add(-30 * time.Second).UnixNano()
			if tc.restarted {
				orig.TaskStates["server"].LastRestart = now.Add(-10 * time.Second)
			}
			rep := started(genericAlloc("rep", job, 0, running, now), tc.repStart, tc.repScore)
			rep.NodeID = "b"
			if tc.repStatus != "" {
				rep.ClientStatus = tc.repStatus
			}
			orig.NextAllocation, rep.PreviousAllocation = rep.ID, orig.ID
			res := ReconcileGeneric(GenericInput{Job: job, Nodes: []*structs.Node{testNode("a"), testNode("b")},
				Allocs: []*structs.Allocation{orig, rep}, Now: now})
			lose := map[string]string{"orig": "rep", "rep": "orig"}[tc.wantKeep]
			assert.Equal(t, genericOutcome{stop: []string{lose + ": " + DescReconnected}, ignore: []string{tc.wantKeep}},
				outcomeOf(t, res))
		})
	}
}

// TestReconcileGeneric_StopOnClientAfter: a lost allocation of a group
// with stop_on_client_after is replaced only once its client has stopped
// it.
func TestReconcileGeneric_StopOnClientAfter(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	job := serviceJob("web", 1)
	wait := 2 * time.Minute
	job.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{StopOnClientAfter: &wait}
	gone := testNode("a")
	down(gone)
	nodes := []*structs.Node{gone, testNode("b")}

	live := genericAlloc("orig", job, 0, structs.AllocClientStatusRunning, now)
	got := outcomeOf(t, ReconcileGeneric(GenericInput{Job: job, Nodes: nodes, Allocs: []*structs.Allocation{live}, Now: now}))
	assert.Equal(t, genericOutcome{lost: []string{"orig"}, followup: now.Add(wait)}, got, "lost now, replaced later")

	lost := live.Copy()
	lost.ClientStatus, lost.DesiredStatus = structs.AllocClientStatusLost, structs.AllocDesiredStatusStop
	lost.DisconnectedAt = now.UnixNano()
	got = outcomeOf(t, ReconcileGeneric(GenericInput{Job: job, Nodes: nodes, Allocs: []*structs.Allocation{lost}, Now: now.Add(time.Minute)}))
	assert.Equal(t, genericOutcome{followup: now.Add(wait)}, got, "still waiting: nothing placed in its slot")

	got = outcomeOf(t, ReconcileGeneric(GenericInput{Job: job, Nodes: nodes, Allocs: []*structs.Allocation{lost}, Now: now.Add(wait)}))
	assert.Equal(t, genericOutcome{place: []placementWant{{name: "web.web[0]", previous: "orig"}}}, got, "replaced at the deadline")
}

// TestReconcileSystem_Disconnect: a system allocation of a disconnected
// node is unknown within lost_after and never replaced; lost past it.
func TestReconcileSystem_Disconnect(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	job := testJob("sys")
	d := time.Minute
	job.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{LostAfter: &d}
	a := testNode("a")
	disconnected(a)
	nodes := []*structs.Node{a, testNode("b")}
	onA := testAlloc("on-a", job, "a")
	onB := testAlloc("on-b", job, "b")

	group := func(res SystemReconcileResult) *SystemGroupResult {
		require.Len(t, res.Groups, 1)
		return res.Groups[0]
	}
	res := ReconcileSystem(SystemReconcileInput{Job: job, Nodes: nodes, Allocs: []*structs.Allocation{onA, onB}, Now: now})
	g := group(res)
	assert.Equal(t, []*structs.Allocation{onA}, g.Unknown)
	assert.Empty(t, g.Lost)
	assert.Empty(t, g.Place, "a system job is not placed elsewhere")
	assert.Equal(t, now.Add(time.Minute), res.FollowupAt)

	marked := onA.Copy()
	marked.ClientStatus, marked.DisconnectedAt = structs.AllocClientStatusUnknown, now.UnixNano()
	res = ReconcileSystem(SystemReconcileInput{Job: job, Nodes: nodes, Allocs: []*structs.Allocation{marked, onB}, Now: now.Add(30 * time.Second)})
	g = group(res)
	assert.Empty(t, g.Unknown, "marked once")
	assert.Contains(t, g.Ignore, marked)
	assert.Equal(t, now.Add(time.Minute), res.FollowupAt)

	res = ReconcileSystem(SystemReconcileInput{Job: job, Nodes: nodes, Allocs: []*structs.Allocation{marked, onB}, Now: now.Add(time.Minute)})
	g = group(res)
	assert.Equal(t, []*structs.Allocation{marked}, g.Lost, "lost at the deadline")
	assert.True(t, res.FollowupAt.IsZero())

	plain := testJob("sys")
	res = ReconcileSystem(SystemReconcileInput{Job: plain, Nodes: nodes, Allocs: []*structs.Allocation{testAlloc("on-a", plain, "a")}, Now: now})
	assert.Len(t, group(res).Lost, 1, "without lost_after: lost at once")
}

// TestServiceScheduler_DisconnectPlan: the service scheduler's plan marks
// the allocation of a disconnected node unknown without stopping it,
// places its replacement on another node naming it as previous, and
// follows up at the lost_after deadline, when the allocation is lost.
func TestServiceScheduler_DisconnectPlan(t *testing.T) {
	h := newHarness(t)
	h.state.upsertNode(testNode("a"))
	job := disconnectJob(true, "")
	job.TaskGroups[0].Count = 1
	h.state.upsertJob(job)
	h.process(job)
	orig := h.state.liveAllocs("web")
	require.Len(t, orig, 1)
	require.Equal(t, "a", orig[0].NodeID)

	n := h.state.nodes["a"].Copy()
	disconnected(n)
	h.state.upsertNode(n)
	h.state.upsertNode(testNode("b"))
	eval := h.process(job)

	plan := h.lastPlan()
	require.Len(t, plan.NodeUpdate["a"], 1)
	marked := plan.NodeUpdate["a"][0]
	assert.Equal(t, structs.AllocClientStatusUnknown, marked.ClientStatus)
	assert.Equal(t, structs.AllocDesiredStatusRun, marked.DesiredStatus, "an unknown allocation is not stopped")
	require.Len(t, plan.NodeAllocation["b"], 1)
	assert.Equal(t, orig[0].ID, plan.NodeAllocation["b"][0].PreviousAllocation)
	tracker := plan.NodeAllocation["b"][0].RescheduleTracker
	require.NotNil(t, tracker, "the replacement is a reschedule")
	require.Len(t, tracker.Events, 1)
	assert.Equal(t, orig[0].ID, tracker.Events[0].PrevAllocID)
	require.NotEmpty(t, eval.NextEval, "a follow-up evaluation for the deadline")
	follow := h.created[len(h.created)-1]
	assert.Equal(t, h.now.Add(time.Minute), follow.WaitUntil)
	stored := h.state.allocs[orig[0].ID]
	assert.Equal(t, h.now.UnixNano(), stored.DisconnectedAt)

	h.now = h.now.Add(time.Minute)
	h.process(job)
	plan = h.lastPlan()
	require.Len(t, plan.NodeUpdate["a"], 1)
	assert.Equal(t, structs.AllocClientStatusLost, plan.NodeUpdate["a"][0].ClientStatus, "lost at the deadline")
	assert.Empty(t, plan.NodeAllocation, "its replacement runs already")
}

// TestReconcileGeneric_KeptOriginalReschedules: an original kept on
// reconnection still names the replacement that was stopped as its next
// allocation; when it fails later it is rescheduled as any other.
func TestReconcileGeneric_KeptOriginalReschedules(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	job := disconnectJob(true, structs.ReconcileKeepOriginal)
	job.TaskGroups[0].Count = 1
	orig := genericAlloc("orig", job, 0, structs.AllocClientStatusFailed, now)
	orig.DisconnectedAt = now.Add(-2 * time.Hour).UnixNano()
	rep := genericAlloc("rep", job, 0, structs.AllocClientStatusComplete, now)
	rep.NodeID, rep.DesiredStatus, rep.DesiredDescription = "b", structs.AllocDesiredStatusStop, DescReconnected
	orig.NextAllocation, rep.PreviousAllocation = rep.ID, orig.ID
	nodes := []*structs.Node{testNode("a"), testNode("b")}

	got := outcomeOf(t, ReconcileGeneric(GenericInput{Job: job, Nodes: nodes, Allocs: []*structs.Allocation{orig, rep}, Now: now}))
	assert.Equal(t, genericOutcome{place: []placementWant{{name: "web.web[0]", previous: "orig", reschedule: true}}}, got)

	rep.DesiredDescription = DescUpdating // an ordinary replacement: orig is not rescheduled again
	got = outcomeOf(t, ReconcileGeneric(GenericInput{Job: job, Nodes: nodes, Allocs: []*structs.Allocation{orig, rep}, Now: now}))
	assert.Equal(t, genericOutcome{place: []placementWant{{name: "web.web[0]"}}}, got)
}

// TestReconcileSystem_ReplaceFalse: with replace = false a system
// allocation of a down node stays unknown, with no deadline.
func TestReconcileSystem_ReplaceFalse(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	job := testJob("sys")
	no := false
	job.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{Replace: &no}
	a := testNode("a")
	down(a)
	onA := testAlloc("on-a", job, "a")
	res := ReconcileSystem(SystemReconcileInput{Job: job, Nodes: []*structs.Node{a, testNode("b")}, Allocs: []*structs.Allocation{onA}, Now: now})
	require.Len(t, res.Groups, 1)
	assert.Equal(t, []*structs.Allocation{onA}, res.Groups[0].Unknown)
	assert.Empty(t, res.Groups[0].Lost)
	assert.True(t, res.FollowupAt.IsZero(), "no deadline")

	res = ReconcileSystem(SystemReconcileInput{Job: job, Nodes: []*structs.Node{testNode("b")}, Allocs: []*structs.Allocation{onA}, Now: now})
	assert.Equal(t, []*structs.Allocation{onA}, res.Groups[0].Lost, "a node that is gone for good loses it")
}
