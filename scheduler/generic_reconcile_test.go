package scheduler

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// placementWant is one expected placement of a generic group: its name,
// the ID of the allocation it replaces ("" for none) and whether it is a
// reschedule.
type placementWant struct {
	name, previous string
	reschedule     bool
}

// genericGroupWant is the expected decision for one generic group, by
// allocation ID (sorted).
type genericGroupWant struct {
	place                 []placementWant
	inplace, ignore, stop []string
	followupAtWant        bool
}

func assertGenericGroup(t *testing.T, want genericGroupWant, res GenericResult, group string) {
	t.Helper()
	var g *GenericGroup
	for _, cand := range res.Groups {
		if cand.Name == group {
			g = cand
		}
	}
	require.NotNil(t, g, "group %q missing from result", group)
	var place []placementWant
	for _, p := range g.Place {
		pw := placementWant{name: p.Name, reschedule: p.Reschedule}
		if p.Previous != nil {
			pw.previous = p.Previous.ID
		}
		place = append(place, pw)
	}
	slices.SortFunc(place, func(a, b placementWant) int { return nameIndex(a.name) - nameIndex(b.name) })
	ids := func(as []*structs.Allocation) []string {
		var out []string
		for _, a := range as {
			out = append(out, a.ID)
		}
		slices.Sort(out)
		return out
	}
	var stops []*structs.Allocation
	for _, s := range g.Stop {
		stops = append(stops, s.Alloc)
	}
	require.Equal(t, want.place, place, "Place")
	require.Equal(t, want.inplace, ids(g.InplaceUpdate), "InplaceUpdate")
	require.Equal(t, want.ignore, ids(g.Ignore), "Ignore")
	require.Equal(t, want.stop, ids(stops), "Stop")
	require.Equal(t, want.followupAtWant, !res.FollowupAt.IsZero(), "FollowupAt set")
	d := res.DesiredTGUpdates[group]
	require.Equal(t, uint64(len(want.ignore)), d.Ignore, "DesiredTGUpdates.Ignore")
}

// genericAlloc is an allocation of job's group "web" with name index idx
// on node "a", in client status status (failed an hour before now).
func genericAlloc(id string, job *structs.Job, idx int, status string, now time.Time) *structs.Allocation {
	a := testAlloc(id, job, "a")
	a.Name = fmt.Sprintf("%s.web[%d]", job.ID, idx)
	a.ClientStatus = status
	if status == structs.AllocClientStatusFailed {
		a.ModifyTime = now.Add(-time.Hour).UnixNano()
	}
	return a
}

// TestReconcileGeneric_BatchIgnoresOlderJobsTerminalAllocs: for a batch
// job, a terminal allocation of an older version, or of a purged job of the
// same ID registered again (an older CreateIndex), is not the job's work:
// it holds no slot, is neither rescheduled nor replaced, and is counted as
// ignored, so the job runs again. Terminal allocations of the current
// version, live allocations of older ones, and service jobs keep their
// rules.
func TestReconcileGeneric_BatchIgnoresOlderJobsTerminalAllocs(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	const (
		complete = structs.AllocClientStatusComplete
		failed   = structs.AllocClientStatusFailed
		running  = structs.AllocClientStatusRunning
	)
	batchAt := func(createIndex, version uint64, mutate func(tg *structs.TaskGroup)) *structs.Job {
		j := batchJob("report", 2)
		j.CreateIndex, j.Version = createIndex, version
		if mutate != nil {
			mutate(j.TaskGroups[0])
		}
		return j
	}
	noReschedule := func(tg *structs.TaskGroup) { tg.ReschedulePolicy = &structs.ReschedulePolicy{} }
	purged := batchAt(10, 3, noReschedule) // the job that was purged, at its version 3
	reRegistered := batchAt(50, 0, nil)    // the same ID registered again
	v0 := batchAt(10, 0, nil)
	v1Meta := batchAt(10, 1, func(tg *structs.TaskGroup) { tg.Meta = map[string]string{"run": "2"} })
	service := serviceJob("report", 2)
	service.CreateIndex = 10
	serviceV1 := service.Copy()
	serviceV1.Version = 1
	operatorStopped := func(a *structs.Allocation) *structs.Allocation {
		a.DesiredStatus = structs.AllocDesiredStatusStop
		a.DesiredTransition = structs.DesiredTransition{Migrate: true}
		return a
	}

	cases := []struct {
		name   string
		job    *structs.Job
		allocs []*structs.Allocation
		want   genericGroupWant
	}{
		{
			name: "purged and registered again: the predecessor's finished allocations do not count",
			job:  reRegistered,
			allocs: []*structs.Allocation{
				genericAlloc("old-done", purged, 0, complete, now),
				genericAlloc("old-failed", purged, 1, failed, now),
			},
			want: genericGroupWant{
				place:  []placementWant{{name: "report.web[0]"}, {name: "report.web[1]"}},
				ignore: []string{"old-done", "old-failed"},
			},
		},
		{
			name: "purged at the same version number: the older CreateIndex decides",
			job:  reRegistered,
			allocs: []*structs.Allocation{
				genericAlloc("old-done", batchAt(10, 0, nil), 0, complete, now),
				withDesiredStop(genericAlloc("old-stopped", batchAt(10, 0, nil), 1, complete, now)), // stopped by the purge
			},
			want: genericGroupWant{
				place:  []placementWant{{name: "report.web[0]"}, {name: "report.web[1]"}},
				ignore: []string{"old-done", "old-stopped"},
			},
		},
		{
			name: "a changed version runs again where the older one completed",
			job:  v1Meta,
			allocs: []*structs.Allocation{
				genericAlloc("v0-done-0", v0, 0, complete, now),
				genericAlloc("v0-done-1", v0, 1, complete, now),
			},
			want: genericGroupWant{
				place:  []placementWant{{name: "report.web[0]"}, {name: "report.web[1]"}},
				ignore: []string{"v0-done-0", "v0-done-1"},
			},
		},
		{
			name: "a failed allocation of an older version is not rescheduled: a fresh one is placed",
			job:  v1Meta,
			allocs: []*structs.Allocation{
				genericAlloc("v0-failed", v0, 0, failed, now),
				genericAlloc("v1-done", v1Meta, 1, complete, now),
			},
			want: genericGroupWant{
				place:  []placementWant{{name: "report.web[0]"}},
				ignore: []string{"v0-failed"},
			},
		},
		{
			name: "an allocation of an older version the operator stopped is not replaced as its successor",
			job:  v1Meta,
			allocs: []*structs.Allocation{
				operatorStopped(genericAlloc("v0-stopped", v0, 0, running, now)),
				genericAlloc("v1-done", v1Meta, 1, complete, now),
			},
			want: genericGroupWant{
				place:  []placementWant{{name: "report.web[0]"}},
				ignore: []string{"v0-stopped"},
			},
		},
		{
			name: "an older version's allocation already replaced is ignored too",
			job:  v1Meta,
			allocs: func() []*structs.Allocation {
				a := genericAlloc("v0-failed", v0, 0, failed, now)
				a.NextAllocation = "v1-run"
				return []*structs.Allocation{a, genericAlloc("v1-run", v1Meta, 0, running, now), genericAlloc("v1-done", v1Meta, 1, complete, now)}
			}(),
			want: genericGroupWant{ignore: []string{"v0-failed", "v1-run"}},
		},
		{
			name: "control: the current version's completed allocations keep their slots",
			job:  v0,
			allocs: []*structs.Allocation{
				genericAlloc("done-0", v0, 0, complete, now),
				genericAlloc("done-1", v0, 1, complete, now),
			},
			want: genericGroupWant{},
		},
		{
			name: "control: the current version's failed allocation is rescheduled",
			job:  v0,
			allocs: []*structs.Allocation{
				genericAlloc("failed", v0, 0, failed, now),
				genericAlloc("done", v0, 1, complete, now),
			},
			want: genericGroupWant{place: []placementWant{{name: "report.web[0]", previous: "failed", reschedule: true}}},
		},
		{
			name: "control: a live allocation of an older version is replaced, not ignored",
			job:  v1Meta,
			allocs: []*structs.Allocation{
				genericAlloc("v0-run", v0, 0, running, now),
				genericAlloc("v1-done", v1Meta, 1, complete, now),
			},
			// A meta change is in-place: the running one is updated.
			want: genericGroupWant{inplace: []string{"v0-run"}},
		},
		{
			name: "service: a failed allocation of an older version is still rescheduled",
			job:  serviceV1,
			allocs: []*structs.Allocation{
				genericAlloc("v0-failed", service, 0, failed, now),
				genericAlloc("v1-run", serviceV1, 1, running, now),
			},
			want: genericGroupWant{
				place:  []placementWant{{name: "report.web[0]", previous: "v0-failed", reschedule: true}},
				ignore: []string{"v1-run"},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nodes := []*structs.Node{testNode("a")}
			res := ReconcileGeneric(GenericInput{Job: tc.job, Nodes: nodes, Allocs: tc.allocs, Now: now})
			assertGenericGroup(t, tc.want, res, "web")
		})
	}
}

// TestGeneric_BatchPurgedAndChangedRunAgain drives the batch scheduler
// through the user's story: a job completes; a changed version (new meta)
// runs again; the job is purged and registered again under the same ID
// (new CreateIndex, version 0) and runs again; registering it unchanged
// does not.
func TestGeneric_BatchPurgedAndChangedRunAgain(t *testing.T) {
	h := newHarness(t)
	addNodes(h, 2)
	job := batchJob("report", 1)
	job.CreateIndex = 5
	h.state.upsertJob(job)
	h.process(job)
	setStatus(h, "report", structs.AllocClientStatusComplete)
	require.Empty(t, h.state.liveAllocs("report"))

	h.process(job)
	require.Empty(t, h.state.liveAllocs("report"), "an unchanged, completed batch job does not run again")

	changed := job.Copy()
	changed.Version = 1
	changed.Meta = map[string]string{"run": "2"}
	h.state.upsertJob(changed)
	eval := h.process(changed)
	live := h.state.liveAllocs("report")
	require.Len(t, live, 1, "a changed version of a completed batch job runs again")
	require.Equal(t, uint64(1), live[0].JobVersion)
	require.Empty(t, live[0].PreviousAllocation, "a fresh run, not a replacement of the old one")
	require.Equal(t, uint64(1), eval.PlanAnnotations.DesiredTGUpdates["web"].Place)
	require.Equal(t, uint64(1), eval.PlanAnnotations.DesiredTGUpdates["web"].Ignore, "the old run is ignored")
	setStatus(h, "report", structs.AllocClientStatusFailed)

	h.state.deleteJob(changed)
	again := batchJob("report", 1)
	again.CreateIndex = 90
	h.state.upsertJob(again)
	h.process(again)
	live = h.state.liveAllocs("report")
	require.Len(t, live, 1, "a purged batch job registered again runs")
	require.Equal(t, uint64(0), live[0].JobVersion)
	require.Nil(t, live[0].RescheduleTracker, "the predecessor's failure is not rescheduled")
	setStatus(h, "report", structs.AllocClientStatusComplete)

	h.process(again)
	require.Empty(t, h.state.liveAllocs("report"), "once it completed, it is not run again")
}
