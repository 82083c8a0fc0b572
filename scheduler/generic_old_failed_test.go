package scheduler

import (
	"cmp"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/drover-project/drover/nomad/structs"
)

// failedAgo is a failed allocation of job's group "web" with name index
// idx, failed ago before now, in deployment deploymentID, rescheduled
// before as many times as events (one minute apart, the latest a minute
// before it failed).
func failedAgo(id string, job *structs.Job, idx int, now time.Time, ago time.Duration, deploymentID string, events int) *structs.Allocation {
	a := genericAlloc(id, job, idx, structs.AllocClientStatusFailed, now)
	a.ModifyTime = now.Add(-ago).UnixNano()
	a.DeploymentID = deploymentID
	a.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: new(false)}
	if events > 0 {
		a.RescheduleTracker = &structs.RescheduleTracker{}
		for i := range events {
			at := now.Add(-ago - time.Duration(events-i)*time.Minute)
			a.RescheduleTracker.Events = append(a.RescheduleTracker.Events,
				&structs.RescheduleEvent{RescheduleTime: at.UnixNano(), PrevAllocID: "earlier", PrevNodeID: "b"})
		}
	}
	return a
}

// deploymentOf is deployment id of job's version in status, with a group
// state for "web".
func deploymentOf(id string, job *structs.Job, status string) *structs.Deployment {
	d := newDeployment(job)
	d.ID, d.Status = id, status
	d.TaskGroups["web"] = &structs.DeploymentState{DesiredTotal: job.TaskGroups[0].Count}
	return d
}

// TestReconcileGeneric_OlderVersionFailuresReplacedNow: a service job's
// version that changes its task destructively replaces the failed
// allocations of an older version at once, by destructive updates inside
// its own (new) deployment and within max_parallel, whatever their
// reschedule delay or exhausted policy; the ones the deployment holds back
// keep their reschedule time (FollowupAt). The current version's failures,
// and older ones under an in-place change, still wait out their delay.
func TestReconcileGeneric_OlderVersionFailuresReplacedNow(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	v0 := withUpdate(serviceJob("web", 2))
	v1 := nextVersion(v0, destructiveChange)
	// variant is job (same version) with its group changed by mutate;
	// mutate replaces what it changes (the copy shares the rest).
	variant := func(job *structs.Job, mutate func(tg *structs.TaskGroup)) *structs.Job {
		c := nextVersion(job, mutate)
		c.Version = job.Version
		return c
	}
	withMaxParallel := func(job *structs.Job, n int) *structs.Job {
		return variant(job, func(tg *structs.TaskGroup) {
			u := *tg.Update
			u.MaxParallel = n
			tg.Update = &u
		})
	}
	withCanary := func(job *structs.Job) *structs.Job {
		return variant(job, func(tg *structs.TaskGroup) {
			u := *tg.Update
			u.Canary = 1
			tg.Update = &u
		})
	}
	noUpdate := func(job *structs.Job) *structs.Job {
		return variant(job, func(tg *structs.TaskGroup) { tg.Update = nil })
	}
	limited := func(job *structs.Job) *structs.Job {
		return variant(job, func(tg *structs.TaskGroup) {
			tg.ReschedulePolicy = &structs.ReschedulePolicy{Attempts: 1, Interval: time.Hour,
				Delay: 30 * time.Second, DelayFunction: structs.DelayFunctionConstant}
		})
	}
	v1Meta := nextVersion(v0, inplaceChange)
	failedV0 := deploymentOf("d0", v0, structs.DeploymentStatusFailed)
	const (
		noDeployment = iota
		newDeploymentWant
		storedDeployment
	)

	cases := []struct {
		name        string
		job         *structs.Job
		deployment  *structs.Deployment
		allocs      []*structs.Allocation
		want        genericGroupWant
		destructive uint64
		deployment2 int // noDeployment, newDeploymentWant or storedDeployment
		// followupIn is FollowupAt - now when want.followupAtWant: 25 s
		// when zero (failed 5 s ago, first reschedule, 30 s delay).
		followupIn time.Duration
	}{
		{
			name:       "after a failed deployment, max_parallel 1: one replaced now in a new deployment, the other held with its reschedule due",
			job:        v1,
			deployment: failedV0,
			allocs: []*structs.Allocation{
				failedAgo("f0", v0, 0, now, 5*time.Second, "d0", 1),
				failedAgo("f1", v0, 1, now, 5*time.Second, "d0", 1),
			},
			want: genericGroupWant{
				place:          []placementWant{{name: "web.web[0]", previous: "f0"}},
				ignore:         []string{"f1"},
				followupAtWant: true,
			},
			destructive: 1,
			deployment2: newDeploymentWant,
			followupIn:  55 * time.Second, // second reschedule: 60 s (exponential)
		},
		{
			name:       "max_parallel 2: both replaced now, nothing left to reschedule later",
			job:        withMaxParallel(v1, 2),
			deployment: failedV0,
			allocs: []*structs.Allocation{
				failedAgo("f0", v0, 0, now, 5*time.Second, "d0", 0),
				failedAgo("f1", v0, 1, now, 5*time.Second, "d0", 0),
			},
			want:        genericGroupWant{place: []placementWant{{name: "web.web[0]", previous: "f0"}, {name: "web.web[1]", previous: "f1"}}},
			destructive: 2,
			deployment2: newDeploymentWant,
		},
		{
			name: "without an update block: both replaced now, outside any deployment",
			job:  noUpdate(v1),
			allocs: []*structs.Allocation{
				failedAgo("f0", noUpdate(v0), 0, now, 5*time.Second, "", 2),
				failedAgo("f1", noUpdate(v0), 1, now, 5*time.Second, "", 0),
			},
			want:        genericGroupWant{place: []placementWant{{name: "web.web[0]", previous: "f0"}, {name: "web.web[1]", previous: "f1"}}},
			destructive: 2,
			deployment2: noDeployment,
		},
		{
			name:       "reschedule policy exhausted: the new version replaces it all the same",
			job:        limited(withMaxParallel(v1, 2)),
			deployment: failedV0,
			allocs: []*structs.Allocation{
				failedAgo("f0", limited(v0), 0, now, 10*time.Minute, "d0", 1), // its one attempt is within the interval
				failedAgo("f1", limited(v0), 1, now, 5*time.Second, "d0", 1),
			},
			want:        genericGroupWant{place: []placementWant{{name: "web.web[0]", previous: "f0"}, {name: "web.web[1]", previous: "f1"}}},
			destructive: 2,
			deployment2: newDeploymentWant,
		},
		{
			name:       "reschedule already due: rescheduled now (history extended), not held by max_parallel",
			job:        v1,
			deployment: failedV0,
			allocs: []*structs.Allocation{
				failedAgo("f0", v0, 0, now, time.Hour, "d0", 0),
				failedAgo("f1", v0, 1, now, time.Hour, "d0", 0),
			},
			want: genericGroupWant{place: []placementWant{
				{name: "web.web[0]", previous: "f0", reschedule: true}, {name: "web.web[1]", previous: "f1", reschedule: true}}},
			deployment2: newDeploymentWant,
		},
		{
			name:       "a live older allocation and a failed one, max_parallel 1: the failed one is replaced first",
			job:        v1,
			deployment: deploymentOf("d0", v0, structs.DeploymentStatusSuccessful),
			allocs: []*structs.Allocation{
				genericAlloc("r0", v0, 0, structs.AllocClientStatusRunning, now),
				failedAgo("f1", v0, 1, now, 5*time.Second, "d0", 0),
			},
			want:        genericGroupWant{place: []placementWant{{name: "web.web[1]", previous: "f1"}}, ignore: []string{"r0"}},
			destructive: 1,
			deployment2: newDeploymentWant,
		},
		{
			name:       "canaries: the fixed version's canary is placed at once; the failed ones keep their reschedule",
			job:        withCanary(v1),
			deployment: failedV0,
			allocs: []*structs.Allocation{
				failedAgo("f0", v0, 0, now, 5*time.Second, "d0", 0),
				failedAgo("f1", v0, 1, now, 5*time.Second, "d0", 0),
			},
			want: genericGroupWant{
				place:          []placementWant{{name: "web.web[0]"}},
				ignore:         []string{"f0", "f1"},
				followupAtWant: true,
			},
			deployment2: newDeploymentWant,
		},
		{
			name:       "the new version's deployment is paused: held, their reschedule still due at its time",
			job:        v1,
			deployment: deploymentOf("d1", v1, structs.DeploymentStatusPaused),
			allocs: []*structs.Allocation{
				failedAgo("f0", v0, 0, now, 5*time.Second, "d0", 0),
				failedAgo("f1", v0, 1, now, 5*time.Second, "d0", 0),
			},
			want:        genericGroupWant{ignore: []string{"f0", "f1"}, followupAtWant: true},
			deployment2: storedDeployment,
		},
		{
			name:       "the new version's deployment failed too: held for good, their reschedule still due at its time",
			job:        v1,
			deployment: deploymentOf("d1", v1, structs.DeploymentStatusFailed),
			allocs: []*structs.Allocation{
				failedAgo("f0", v0, 0, now, 5*time.Second, "d0", 0),
				failedAgo("f1", v0, 1, now, 5*time.Second, "d0", 0),
			},
			want:        genericGroupWant{ignore: []string{"f0", "f1"}, followupAtWant: true},
			deployment2: noDeployment,
		},
		{
			name:       "control: the current version's failures wait out their delay",
			job:        v0,
			deployment: failedV0,
			allocs: []*structs.Allocation{
				failedAgo("f0", v0, 0, now, 5*time.Second, "d0", 1),
				failedAgo("f1", v0, 1, now, 5*time.Second, "d0", 0),
			},
			want:        genericGroupWant{followupAtWant: true},
			deployment2: noDeployment,
		},
		{
			name:       "control: the current version's failure in its running deployment waits too",
			job:        v1,
			deployment: deploymentOf("d1", v1, structs.DeploymentStatusRunning),
			allocs: []*structs.Allocation{
				failedAgo("f0", v1, 0, now, 5*time.Second, "d1", 0),
				genericAlloc("r1", v1, 1, structs.AllocClientStatusRunning, now),
			},
			want:        genericGroupWant{ignore: []string{"r1"}, followupAtWant: true},
			deployment2: storedDeployment,
		},
		{
			name:       "control: under an in-place change an older version's failures keep to their reschedule policy",
			job:        v1Meta,
			deployment: failedV0,
			allocs: []*structs.Allocation{
				failedAgo("f0", v0, 0, now, 5*time.Second, "d0", 0),
				failedAgo("f1", v0, 1, now, 5*time.Second, "d0", 0),
			},
			want:        genericGroupWant{followupAtWant: true},
			deployment2: noDeployment,
		},
		{
			name:       "control: an older failed allocation already replaced is left alone",
			job:        v1,
			deployment: deploymentOf("d1", v1, structs.DeploymentStatusRunning),
			allocs: func() []*structs.Allocation {
				f0 := failedAgo("f0", v0, 0, now, 5*time.Second, "d0", 0)
				f0.DesiredStatus, f0.NextAllocation = structs.AllocDesiredStatusStop, "n0"
				n0 := genericAlloc("n0", v1, 0, structs.AllocClientStatusRunning, now)
				n0.DeploymentID = "d1"
				n0.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: new(true)}
				return []*structs.Allocation{f0, n0, failedAgo("f1", v0, 1, now, 5*time.Second, "d0", 0)}
			}(),
			want:        genericGroupWant{place: []placementWant{{name: "web.web[1]", previous: "f1"}}, ignore: []string{"n0"}},
			destructive: 1,
			deployment2: storedDeployment,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := ReconcileGeneric(GenericInput{Job: tc.job, Nodes: []*structs.Node{testNode("a")}, Allocs: tc.allocs,
				Deployment: tc.deployment, Now: now})
			assertGenericGroup(t, tc.want, res, "web")
			require.Equal(t, tc.destructive, res.DesiredTGUpdates["web"].DestructiveUpdate, "DesiredTGUpdates.DestructiveUpdate")
			if tc.want.followupAtWant {
				in := cmp.Or(tc.followupIn, 25*time.Second)
				require.Equal(t, now.Add(in), res.FollowupAt, "the failures left waiting keep their reschedule time")
			}
			for _, p := range res.Groups[0].Place {
				if p.Previous != nil && !p.Reschedule {
					require.True(t, p.StopPrevious, "a destructive update marks %s stopped", p.Previous.ID)
				}
			}
			switch tc.deployment2 {
			case noDeployment:
				require.Nil(t, res.Deployment)
			case newDeploymentWant:
				require.NotNil(t, res.Deployment, "the new version's placements join a deployment")
				require.Empty(t, res.Deployment.ID, "a new one")
				require.Equal(t, tc.job.Version, res.Deployment.JobVersion)
				require.Equal(t, structs.DeploymentStatusRunning, res.Deployment.Status)
				require.Equal(t, len(res.Groups[0].Place), res.Deployment.TaskGroups["web"].PlacedAllocs)
			case storedDeployment:
				require.NotNil(t, res.Deployment)
				require.Equal(t, tc.deployment.ID, res.Deployment.ID)
			}
		})
	}
}

// TestReconcileGeneric_OlderVersionFailureProperties checks, over random
// groups (with or without an update block, canaries, max_parallel), older
// versions changed destructively or in place, failed allocations of every
// age and reschedule history, and the job's latest deployment in every
// state, that:
//   - a failed allocation whose reschedule is due is rescheduled now;
//   - one of the current version (or of an older one changed in place)
//     that is not due is never replaced early, and FollowupAt comes no
//     later than its reschedule;
//   - one of an older version changed destructively is never left to wait
//     for nothing: it is replaced now by a destructive update, or held by
//     the version's deployment (paused, failed, canaries awaiting
//     promotion, or max_parallel used up by this decision and the
//     deployment's allocations not yet healthy), and then FollowupAt comes
//     no later than its reschedule;
//   - a live older allocation is replaced destructively only when every
//     failed one waiting for the new version is replaced too;
//   - placements of a group that uses a deployment join the version's
//     deployment (the stored one when it is the version's and active, else
//     a new one), unless that deployment already ended.
func TestReconcileGeneric_OlderVersionFailureProperties(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	rapid.Check(t, func(rt *rapid.T) {
		count := rapid.IntRange(1, 5).Draw(rt, "count")
		old := serviceJob("web", count)
		if rapid.Bool().Draw(rt, "update block") {
			withUpdate(old)
			old.TaskGroups[0].Update.MaxParallel = rapid.IntRange(1, 3).Draw(rt, "max_parallel")
			old.TaskGroups[0].Update.Canary = rapid.IntRange(0, 1).Draw(rt, "canary")
		}
		destructive := rapid.Bool().Draw(rt, "destructive change")
		change := inplaceChange
		if destructive {
			change = destructiveChange
		}
		cur := nextVersion(old, change)
		tg := cur.TaskGroups[0]

		var stored *structs.Deployment
		switch kind := rapid.SampledFrom([]string{"none", "older failed", "older running", "running", "paused", "failed", "successful"}).Draw(rt, "deployment"); kind {
		case "older failed":
			stored = deploymentOf("d-old", old, structs.DeploymentStatusFailed)
		case "older running":
			stored = deploymentOf("d-old", old, structs.DeploymentStatusRunning)
		case "running", "paused", "failed", "successful":
			stored = deploymentOf("d-cur", cur, kind)
			stored.TaskGroups["web"].Promoted = rapid.Bool().Draw(rt, "promoted")
		}
		curDeployment := stored != nil && stored.JobVersion == cur.Version

		var allocs []*structs.Allocation
		for idx := range count {
			id := fmt.Sprintf("a%d", idx)
			switch rapid.SampledFrom([]string{"none", "running current", "running older", "failed current", "failed older"}).Draw(rt, id) {
			case "running current":
				a := genericAlloc(id, cur, idx, structs.AllocClientStatusRunning, now)
				if curDeployment {
					a.DeploymentID = stored.ID
					if rapid.Bool().Draw(rt, id+" healthy") {
						a.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: new(true)}
					}
				}
				allocs = append(allocs, a)
			case "running older":
				allocs = append(allocs, genericAlloc(id, old, idx, structs.AllocClientStatusRunning, now))
			case "failed current", "failed older":
				job := old
				if rapid.Bool().Draw(rt, id+" current") {
					job = cur
				}
				ago := time.Duration(rapid.IntRange(0, 300).Draw(rt, id+" failed ago")) * time.Second
				allocs = append(allocs, failedAgo(id, job, idx, now, ago, "", rapid.IntRange(0, 3).Draw(rt, id+" reschedules")))
			}
		}

		res := ReconcileGeneric(GenericInput{Job: cur, Nodes: []*structs.Node{testNode("a")}, Allocs: allocs, Deployment: stored, Now: now})
		g := res.Groups[0]
		replacing := map[string]GenericPlacement{}
		nonCanary, liveReplaced := 0, false
		for _, p := range g.Place {
			if !p.Canary {
				nonCanary++
			}
			if p.Previous != nil {
				replacing[p.Previous.ID] = p
				liveReplaced = liveReplaced || (p.StopPrevious && !p.Previous.Terminal())
			}
		}
		ignored := map[string]bool{}
		for _, a := range g.Ignore {
			ignored[a.ID] = true
		}
		usesDeployment := tg.UsesDeployment()
		inFlight := 0
		for _, a := range allocs {
			if curDeployment && !a.Terminal() && a.DeploymentID == stored.ID && !a.DeploymentStatus.IsHealthy() {
				inFlight++
			}
		}
		promoted := curDeployment && stored.TaskGroups["web"].Promoted
		held := func() bool {
			if !usesDeployment || (curDeployment && stored.Status == structs.DeploymentStatusSuccessful) {
				return false
			}
			return (curDeployment && stored.Status != structs.DeploymentStatusRunning) ||
				(tg.Update.Canary > 0 && !promoted) || nonCanary+inFlight >= tg.Update.MaxParallel
		}
		followupBy := func(a *structs.Allocation, at time.Time) {
			if res.FollowupAt.IsZero() || res.FollowupAt.After(at) {
				rt.Fatalf("%s waits until %s but FollowupAt is %s", a.ID, at, res.FollowupAt)
			}
		}
		waitingForNew := 0
		for _, a := range allocs {
			if a.ClientStatus != structs.AllocClientStatusFailed {
				continue
			}
			decision, at := decideReschedule(tg.ReschedulePolicy, a, now)
			p, replaced := replacing[a.ID]
			switch {
			case decision == rescheduleNow:
				if !replaced || !p.Reschedule {
					rt.Fatalf("%s is due for its reschedule but is not rescheduled (%+v)", a.ID, p)
				}
			case a.JobVersion == cur.Version || !destructive:
				if replaced {
					rt.Fatalf("%s is replaced before its reschedule at %s", a.ID, at)
				}
				if decision == rescheduleLater {
					followupBy(a, at)
				}
			case replaced:
				if !p.StopPrevious || p.Reschedule {
					rt.Fatalf("%s is replaced, but not by a destructive update: %+v", a.ID, p)
				}
			default:
				waitingForNew++
				if !ignored[a.ID] || !held() {
					rt.Fatalf("%s of an older version waits though nothing holds it back (ignored %v)", a.ID, ignored[a.ID])
				}
				if decision == rescheduleLater {
					followupBy(a, at)
				}
			}
		}
		if liveReplaced && waitingForNew > 0 {
			rt.Fatalf("a live older allocation is replaced while %d failed ones wait", waitingForNew)
		}
		ended := curDeployment && !stored.Active()
		if usesDeployment && !ended && len(g.Place) > 0 {
			d := res.Deployment
			if d == nil || d.JobVersion != cur.Version {
				rt.Fatalf("placements join no deployment of version %d: %+v", cur.Version, d)
			}
			if curDeployment && d.ID != stored.ID || !curDeployment && d.ID != "" {
				rt.Fatalf("placements join deployment %q, stored %+v", d.ID, stored)
			}
		}
	})
}

// TestGeneric_FixedVersionAfterFailedDeployment drives the service
// scheduler through the user's story: version 0 fails its deployment (both
// allocations failed, their reschedule 30 s away through a follow-up
// evaluation); version 1, a fix, is registered: its evaluation places
// inside a new deployment at once, max_parallel at a time, stopping the
// failed allocations it replaces (the one held back keeps its reschedule
// time); once that one is healthy the next follows, and no reschedule is
// left to wait for.
func TestGeneric_FixedVersionAfterFailedDeployment(t *testing.T) {
	h := newHarness(t)
	addNodes(h, 2)
	v0 := withUpdate(serviceJob("web", 2))
	h.state.upsertJob(v0)
	first := h.process(v0)
	require.NotEmpty(t, first.DeploymentID)
	for _, a := range h.state.liveAllocs("web") {
		c := a.Copy()
		c.ClientStatus = structs.AllocClientStatusFailed
		c.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: new(false)}
		c.ModifyTime = h.now.UnixNano()
		h.state.upsertAlloc(c)
	}
	setDeployment(h, "web", func(d *structs.Deployment) { d.Status = structs.DeploymentStatusFailed })
	h.now = h.now.Add(time.Second)
	failure := h.process(v0)
	require.Empty(t, h.state.liveAllocs("web"), "the current version's failures wait out their delay")
	require.NotEmpty(t, failure.NextEval, "a follow-up evaluation reschedules them")

	v1 := nextVersion(v0, destructiveChange)
	h.state.upsertJob(v1)
	h.now = h.now.Add(time.Second)
	eval := h.process(v1)
	require.NotEmpty(t, eval.DeploymentID, "the fixed version's evaluation creates its deployment")
	require.NotEqual(t, first.DeploymentID, eval.DeploymentID)
	require.Equal(t, uint64(1), eval.PlanAnnotations.DesiredTGUpdates["web"].DestructiveUpdate)
	require.NotEmpty(t, eval.NextEval, "the failure max_parallel holds back keeps its reschedule")
	require.Equal(t, h.now.Add(28*time.Second), h.created[len(h.created)-1].WaitUntil, "30 s after it failed")
	live := h.state.liveAllocs("web")
	require.Len(t, live, 1, "max_parallel 1")
	require.Equal(t, uint64(1), live[0].JobVersion)
	require.Equal(t, eval.DeploymentID, live[0].DeploymentID)
	require.Nil(t, live[0].RescheduleTracker, "a destructive update, not a reschedule")
	prev := h.state.allocs[live[0].PreviousAllocation]
	require.Equal(t, structs.AllocDesiredStatusStop, prev.DesiredStatus, "the failed allocation it replaces is stopped")
	require.Equal(t, structs.AllocClientStatusFailed, prev.ClientStatus)
	require.Equal(t, live[0].ID, prev.NextAllocation)

	markHealthy(h, "web")
	next := h.process(v1)
	require.Equal(t, eval.DeploymentID, next.DeploymentID)
	require.Equal(t, map[uint64]int{1: 2}, versions(h, "web"))
	for _, a := range h.state.liveAllocs("web") {
		require.Equal(t, eval.DeploymentID, a.DeploymentID)
	}
	d := h.state.deployments[eval.DeploymentID]
	require.Equal(t, 2, d.TaskGroups["web"].PlacedAllocs)
	require.Equal(t, 2, d.TaskGroups["web"].DesiredTotal)
	require.Zero(t, next.NextEval, "nothing left to reschedule")
}
