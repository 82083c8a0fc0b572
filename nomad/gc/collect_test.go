package gc

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

var now = time.Unix(100_000, 0)

func ago(d time.Duration) int64 { return now.Add(-d).UnixNano() }

func job(id string, typ string, version uint64, stop bool, changed time.Duration) *structs.Job {
	return &structs.Job{Namespace: "default", ID: id, Type: typ, Version: version, Stop: stop, SubmitTime: ago(changed), JobModifyIndex: 7}
}

func eval(id, jobID, status string, changed time.Duration) *structs.Evaluation {
	return &structs.Evaluation{ID: id, Namespace: "default", JobID: jobID, Status: status, ModifyTime: ago(changed)}
}

func alloc(id, jobID, evalID, node string, version uint64, desired, client string, changed time.Duration) *structs.Allocation {
	return &structs.Allocation{ID: id, Namespace: "default", JobID: jobID, EvalID: evalID, NodeID: node, JobVersion: version,
		DesiredStatus: desired, ClientStatus: client, ModifyTime: ago(changed)}
}

// withReschedule gives the job a group "g" with the reschedule policy p.
func withReschedule(j *structs.Job, p *structs.ReschedulePolicy) *structs.Job {
	j.TaskGroups = []*structs.TaskGroup{{Name: "g", ReschedulePolicy: p}}
	return j
}

func withGroup(a *structs.Allocation) *structs.Allocation { a.TaskGroup = "g"; return a }

func withNext(a *structs.Allocation) *structs.Allocation { a.NextAllocation = "next"; return a }

// withEvents records one reschedule of a, the given time ago.
func withEvents(a *structs.Allocation, last time.Duration) *structs.Allocation {
	a.RescheduleTracker = &structs.RescheduleTracker{Events: []*structs.RescheduleEvent{{RescheduleTime: ago(last)}}}
	return a
}

func deployment(id, jobID string, version uint64, status string, changed time.Duration) *structs.Deployment {
	return &structs.Deployment{ID: id, Namespace: "default", JobID: jobID, JobVersion: version, Status: status, ModifyTime: ago(changed)}
}

const (
	run      = structs.AllocDesiredStatusRun
	stop     = structs.AllocDesiredStatusStop
	running  = structs.AllocClientStatusRunning
	complete = structs.AllocClientStatusComplete
	failed   = structs.AllocClientStatusFailed
	h        = time.Hour
)

func TestCollect(t *testing.T) {
	th := DefaultThresholds
	cases := []struct {
		name string
		in   Input
		want structs.GCRequest
	}{
		{
			name: "old terminal eval goes with its terminal allocations",
			in: Input{
				Jobs:   []*structs.Job{job("web", "system", 2, false, 5*h)},
				Evals:  []*structs.Evaluation{eval("e1", "web", "complete", 2*h), eval("e2", "web", "complete", 2*h)},
				Allocs: []*structs.Allocation{alloc("a1", "web", "e1", "n1", 1, stop, complete, 2*h), alloc("a2", "web", "e2", "n1", 2, run, running, 2*h)},
			},
			want: structs.GCRequest{Evals: []string{"e1"}, Allocs: []string{"a1"}},
		},
		{
			name: "a live allocation keeps its eval and the eval's other allocations",
			in: Input{
				Jobs:   []*structs.Job{job("web", "system", 1, false, 5*h)},
				Evals:  []*structs.Evaluation{eval("e1", "web", "complete", 2*h)},
				Allocs: []*structs.Allocation{alloc("a1", "web", "e1", "n1", 1, stop, complete, 2*h), alloc("a2", "web", "e1", "n2", 1, run, running, 2*h)},
			},
		},
		{
			name: "young eval and young terminal allocation stay",
			in: Input{
				Jobs:   []*structs.Job{job("web", "system", 1, false, 5*h)},
				Evals:  []*structs.Evaluation{eval("e1", "web", "complete", 30*time.Minute), eval("e2", "web", "complete", 2*h)},
				Allocs: []*structs.Allocation{alloc("a2", "web", "e2", "n1", 1, stop, complete, 10*time.Minute)},
			},
		},
		{
			name: "pending and blocked evals stay",
			in: Input{
				Jobs:  []*structs.Job{job("web", "system", 1, false, 5*h)},
				Evals: []*structs.Evaluation{eval("e1", "web", "pending", 9*h), eval("e2", "web", "blocked", 9*h)},
			},
		},
		{
			name: "terminal allocation of an active deployment stays",
			in: Input{
				Jobs:        []*structs.Job{job("web", "system", 2, false, 5*h)},
				Evals:       []*structs.Evaluation{eval("e1", "web", "complete", 2*h)},
				Allocs:      []*structs.Allocation{{ID: "a1", Namespace: "default", JobID: "web", EvalID: "e1", JobVersion: 2, DeploymentID: "d2", DesiredStatus: run, ClientStatus: failed, ModifyTime: ago(2 * h)}},
				Deployments: []*structs.Deployment{deployment("d2", "web", 2, structs.DeploymentStatusRunning, 2*h)},
			},
		},
		{
			name: "old terminal deployments go, the current version's and active ones stay",
			in: Input{
				Jobs: []*structs.Job{job("web", "system", 3, false, 5*h)},
				Deployments: []*structs.Deployment{
					deployment("d1", "web", 1, structs.DeploymentStatusSuccessful, 2*h),
					deployment("d2", "web", 2, structs.DeploymentStatusFailed, 2*h),
					deployment("d3", "web", 3, structs.DeploymentStatusFailed, 2*h),
					deployment("d4", "web", 2, structs.DeploymentStatusSuccessful, 10*time.Minute),
				},
			},
			want: structs.GCRequest{Deployments: []string{"d1", "d2"}},
		},
		{
			name: "sysbatch: done work of the current version stays, older versions go",
			in: Input{
				Jobs:  []*structs.Job{job("once", "sysbatch", 2, false, 5*h)},
				Evals: []*structs.Evaluation{eval("e1", "once", "complete", 2*h), eval("e2", "once", "complete", 2*h)},
				Allocs: []*structs.Allocation{
					alloc("a1", "once", "e1", "n1", 1, run, complete, 2*h),
					alloc("a2", "once", "e2", "n1", 2, run, complete, 2*h),
				},
			},
			want: structs.GCRequest{Evals: []string{"e1"}, Allocs: []string{"a1"}},
		},
		{
			name: "stopped job past job_gc_threshold is purged with everything it has",
			in: Input{
				Jobs:        []*structs.Job{job("old", "system", 4, true, 5*h), job("recent", "system", 1, true, h)},
				Evals:       []*structs.Evaluation{eval("e1", "old", "complete", 5*time.Minute)},
				Allocs:      []*structs.Allocation{alloc("a1", "old", "e1", "n1", 4, stop, complete, 5*time.Minute)},
				Deployments: []*structs.Deployment{deployment("d1", "old", 4, structs.DeploymentStatusCancelled, 5*time.Minute)},
			},
			want: structs.GCRequest{Evals: []string{"e1"}, Allocs: []string{"a1"}, Deployments: []string{"d1"},
				Jobs: []structs.GCJob{{Namespace: "default", ID: "old", JobModifyIndex: 7}}},
		},
		{
			name: "stopped job with a live allocation (stopped, client still running) or a pending eval stays",
			in: Input{
				Nodes:  []*structs.Node{{ID: "n1", Status: structs.NodeStatusReady}},
				Jobs:   []*structs.Job{job("a", "system", 1, true, 5*h), job("b", "system", 1, true, 5*h)},
				Evals:  []*structs.Evaluation{eval("e1", "a", "pending", 5*h)},
				Allocs: []*structs.Allocation{alloc("x", "b", "", "n1", 1, stop, running, 5*h)},
			},
		},
		{
			name: "allocation whose eval is gone goes on its own when terminal and old",
			in: Input{
				Nodes:  []*structs.Node{{ID: "n1", Status: structs.NodeStatusReady}},
				Jobs:   []*structs.Job{job("web", "system", 1, false, 5*h)},
				Allocs: []*structs.Allocation{alloc("a1", "web", "gone", "n1", 1, stop, complete, 2*h), alloc("a2", "web", "gone", "n1", 1, run, running, 2*h)},
			},
			want: structs.GCRequest{Allocs: []string{"a1"}},
		},
		{
			name: "a stopped allocation still running on a live node stays; on a down node it goes",
			in: Input{
				Nodes: []*structs.Node{{ID: "up", Status: structs.NodeStatusReady}, {ID: "down", Status: structs.NodeStatusDown, StatusUpdatedAt: now.Unix()}},
				Jobs:  []*structs.Job{job("web", "system", 2, false, 5*h)},
				Evals: []*structs.Evaluation{eval("e1", "web", "complete", 2*h), eval("e2", "web", "complete", 2*h)},
				Allocs: []*structs.Allocation{
					alloc("a1", "web", "e1", "up", 1, stop, running, 2*h),
					alloc("a2", "web", "e2", "down", 1, stop, running, 2*h),
				},
			},
			want: structs.GCRequest{Evals: []string{"e2"}, Allocs: []string{"a2"}},
		},
		{
			name: "failed allocations still to be rescheduled stay; replaced, stopped, exhausted or unrescheduled ones go",
			in: Input{
				Nodes: []*structs.Node{{ID: "n1", Status: structs.NodeStatusReady}},
				Jobs: []*structs.Job{
					withReschedule(job("svc", "service", 1, false, 5*h), &structs.ReschedulePolicy{Attempts: 2, Interval: 3 * h}),
					withReschedule(job("inf", "service", 1, false, 5*h), &structs.ReschedulePolicy{Unlimited: true}),
					withReschedule(job("off", "batch", 1, false, 5*h), &structs.ReschedulePolicy{Attempts: 0}),
					withReschedule(job("gone", "service", 1, true, 5*h), &structs.ReschedulePolicy{Unlimited: true}),
				},
				Allocs: []*structs.Allocation{
					withGroup(alloc("never", "svc", "x", "n1", 1, run, failed, 2*h)),                    // stays: not yet rescheduled
					withEvents(withGroup(alloc("recent", "svc", "x", "n1", 1, run, failed, 2*h)), 2*h),  // stays: last reschedule within 3h
					withEvents(withGroup(alloc("past", "svc", "x", "n1", 1, run, failed, 2*h)), 4*h),    // goes: interval passed
					withNext(withGroup(alloc("replaced", "svc", "x", "n1", 1, run, failed, 2*h))),       // goes: history carried forward
					withGroup(alloc("stopped", "svc", "x", "n1", 1, stop, failed, 2*h)),                 // goes: the server stopped it
					withGroup(alloc("ok", "svc", "x", "n1", 1, run, complete, 2*h)),                     // goes: not a failure
					withEvents(withGroup(alloc("forever", "inf", "x", "n1", 1, run, failed, 2*h)), 9*h), // stays: unlimited
					withGroup(alloc("noresched", "off", "x", "n1", 0, run, failed, 2*h)),                // goes: rescheduling off
					withGroup(alloc("stoppedjob", "gone", "x", "n1", 1, run, failed, 2*h)),              // goes: job stopped
				},
			},
			want: structs.GCRequest{Allocs: []string{"noresched", "ok", "past", "replaced", "stopped", "stoppedjob"},
				Jobs: []structs.GCJob{{Namespace: "default", ID: "gone", JobModifyIndex: 7}}},
		},
		{
			name: "down nodes past node_gc_threshold without live allocations go",
			in: Input{
				Nodes: []*structs.Node{
					{ID: "n1", Status: structs.NodeStatusDown, StatusUpdatedAt: now.Add(-25 * h).Unix()},
					{ID: "n2", Status: structs.NodeStatusDown, StatusUpdatedAt: now.Add(-23 * h).Unix()},
					{ID: "n3", Status: structs.NodeStatusReady, StatusUpdatedAt: now.Add(-50 * h).Unix()},
					{ID: "n4", Status: structs.NodeStatusDown, StatusUpdatedAt: now.Add(-25 * h).Unix()},
				},
				Jobs:   []*structs.Job{job("web", "system", 1, false, 5*h)},
				Allocs: []*structs.Allocation{alloc("a4", "web", "e", "n4", 1, run, running, 30*h)},
			},
			want: structs.GCRequest{Nodes: []string{"n1"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Collect(tc.in, now, th)
			require.Equal(t, norm(&tc.want), norm(got))
		})
	}
}

// TestCollectForced: with zero thresholds (system gc) age no longer
// matters, but the safety rules still do.
func TestCollectForced(t *testing.T) {
	in := Input{
		Jobs:   []*structs.Job{job("web", "system", 2, false, 0)},
		Evals:  []*structs.Evaluation{eval("e1", "web", "complete", 0), eval("e2", "web", "complete", 0)},
		Allocs: []*structs.Allocation{alloc("a1", "web", "e1", "n1", 1, stop, complete, 0), alloc("a2", "web", "e2", "n1", 2, run, running, 0)},
	}
	got := Collect(in, now, Thresholds{})
	require.Equal(t, []string{"e1"}, got.Evals)
	require.Equal(t, []string{"a1"}, got.Allocs)
	require.Empty(t, got.Jobs)
}

func norm(r *structs.GCRequest) structs.GCRequest {
	out := *r
	for _, p := range []*[]string{&out.Evals, &out.Allocs, &out.Deployments, &out.Nodes} {
		if len(*p) == 0 {
			*p = nil
		}
	}
	if len(out.Jobs) == 0 {
		out.Jobs = nil
	}
	return out
}
