package deploymentwatcher

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// signalJob returns testJob(v) whose group "web" has the given
// drover.auto_pause_on and drover.auto_fail_on ("" : absent).
func signalJob(v uint64, pauseOn, failOn string) *structs.Job {
	job := testJob(v, "nginx:2")
	meta := map[string]string{}
	if pauseOn != "" {
		meta[structs.DroverMetaAutoPauseOn] = pauseOn
	}
	if failOn != "" {
		meta[structs.DroverMetaAutoFailOn] = failOn
	}
	job.TaskGroups[0].Meta = meta
	return job
}

// crashing returns allocation id of group "web" on node (a full-length ID)
// whose task restarted restarts times, with health h.
func crashing(id, node string, restarts uint64, h *bool) *structs.Allocation {
	a := testAlloc(id, h)
	a.NodeID = node
	a.TaskStates = map[string]*structs.TaskState{"server": {State: "running", Restarts: restarts}}
	return a
}

func oomKilled(a *structs.Allocation, n int) *structs.Allocation {
	for range n {
		ts := a.TaskStates["server"]
		ts.Events = append(ts.Events, &structs.TaskEvent{Type: "Terminated", Details: map[string]string{"oom_killed": "true"}})
	}
	return a
}

const (
	nodeA = "a1b2c3d4-0000-4000-8000-000000000001"
	nodeB = "e5f6a7b8-0000-4000-8000-000000000002"
	nodeC = "c0ffee00-0000-4000-8000-000000000003"
)

func TestDecideSignals(t *testing.T) {
	paused := func(d *structs.Deployment) *structs.Deployment {
		c := d.Copy()
		c.Status = structs.DeploymentStatusPaused
		return c
	}
	resumedAt := func(d *structs.Deployment, counts map[string]int) *structs.Deployment {
		c := d.Copy()
		c.TaskGroups["web"].SignalsAtResume = counts
		return c
	}
	d := testDeployment(testJob(1, "nginx:2"))
	tests := []struct {
		name   string
		pause  string
		fail   string
		d      *structs.Deployment
		allocs []*structs.Allocation
		want   SignalVerdict
	}{
		{name: "no conditions", d: d, allocs: []*structs.Allocation{crashing("a1", nodeA, 9, unknown)}},
		{name: "below the threshold", pause: "restarts>2", d: d,
			allocs: []*structs.Allocation{crashing("a1", nodeA, 1, unknown), crashing("a2", nodeB, 1, unknown)}},
		{name: "restarts summed over allocations, nodes named", pause: "restarts>2", d: d,
			allocs: []*structs.Allocation{crashing("a1", nodeB, 2, unknown), crashing("a2", nodeA, 1, unknown), crashing("a3", nodeC, 0, healthy)},
			want:   SignalVerdict{Status: structs.DeploymentStatusPaused, Reason: `restarts 3 > 2 in group "web" on nodes a1b2c3d4, e5f6a7b8`}},
		{name: ">= holds at the threshold", pause: "oom>=2", d: d,
			allocs: []*structs.Allocation{oomKilled(crashing("a1", nodeA, 2, unknown), 2)},
			want:   SignalVerdict{Status: structs.DeploymentStatusPaused, Reason: `oom 2 >= 2 in group "web" on nodes a1b2c3d4`}},
		{name: "the first condition written that holds decides", pause: "oom>0,restarts>0", d: d,
			allocs: []*structs.Allocation{oomKilled(crashing("a1", nodeA, 1, unknown), 1)},
			want:   SignalVerdict{Status: structs.DeploymentStatusPaused, Reason: `oom 1 > 0 in group "web" on nodes a1b2c3d4`}},
		{name: "fail wins over pause", pause: "restarts>2", fail: "restarts>4", d: d,
			allocs: []*structs.Allocation{crashing("a1", nodeA, 5, unknown)},
			want:   SignalVerdict{Status: structs.DeploymentStatusFailed, Reason: `restarts 5 > 4 in group "web" on nodes a1b2c3d4`}},
		{name: "pause below the fail threshold", pause: "restarts>2", fail: "restarts>4", d: d,
			allocs: []*structs.Allocation{crashing("a1", nodeA, 3, unknown)},
			want:   SignalVerdict{Status: structs.DeploymentStatusPaused, Reason: `restarts 3 > 2 in group "web" on nodes a1b2c3d4`}},
		{name: "a paused deployment is not paused again", pause: "restarts>2", d: paused(d),
			allocs: []*structs.Allocation{crashing("a1", nodeA, 9, unknown)}},
		{name: "a paused deployment still fails", pause: "restarts>2", fail: "restarts>4", d: paused(d),
			allocs: []*structs.Allocation{crashing("a1", nodeA, 9, unknown)},
			want:   SignalVerdict{Status: structs.DeploymentStatusFailed, Reason: `restarts 9 > 4 in group "web" on nodes a1b2c3d4`}},
		{name: "resumed: the counts seen at resume do not pause it", pause: "restarts>2",
			d:      resumedAt(d, map[string]int{structs.SignalRestarts: 3}),
			allocs: []*structs.Allocation{crashing("a1", nodeA, 3, unknown)}},
		{name: "resumed: a count rising past the one at resume pauses it", pause: "restarts>2",
			d:      resumedAt(d, map[string]int{structs.SignalRestarts: 3}),
			allocs: []*structs.Allocation{crashing("a1", nodeA, 3, unknown), crashing("a2", nodeB, 1, unknown)},
			want:   SignalVerdict{Status: structs.DeploymentStatusPaused, Reason: `restarts 4 > 2 (3 at resume) in group "web" on nodes a1b2c3d4, e5f6a7b8`}},
		{name: "resumed: fail counts are absolute", fail: "restarts>2",
			d:      resumedAt(d, map[string]int{structs.SignalRestarts: 3}),
			allocs: []*structs.Allocation{crashing("a1", nodeA, 3, unknown)},
			want:   SignalVerdict{Status: structs.DeploymentStatusFailed, Reason: `restarts 3 > 2 in group "web" on nodes a1b2c3d4`}},
		{name: "unhealthy counts allocations", fail: "unhealthy>1", d: d,
			allocs: []*structs.Allocation{crashing("a1", nodeA, 0, unhealthy), crashing("a2", nodeB, 0, unhealthy), crashing("a3", nodeC, 0, healthy)},
			want:   SignalVerdict{Status: structs.DeploymentStatusFailed, Reason: `unhealthy 2 > 1 in group "web" on nodes a1b2c3d4, e5f6a7b8`}},
		{name: "allocations of other groups do not count", pause: "restarts>0", d: d,
			allocs: []*structs.Allocation{func() *structs.Allocation { a := crashing("a1", nodeA, 5, unknown); a.TaskGroup = "api"; return a }()}},
		{name: "an allocation updated in place brings its earlier restarts, which do not count", pause: "restarts>0",
			d:      func() *structs.Deployment { c := d.Copy(); c.CreateIndex = 50; return c }(),
			allocs: []*structs.Allocation{func() *structs.Allocation { a := crashing("a1", nodeA, 5, unknown); a.CreateIndex = 40; return a }()}},
		{name: "nodes named at most five", pause: "restarts>0", d: d,
			allocs: []*structs.Allocation{
				crashing("a1", "n1", 1, unknown), crashing("a2", "n2", 1, unknown), crashing("a3", "n3", 1, unknown),
				crashing("a4", "n4", 1, unknown), crashing("a5", "n5", 1, unknown), crashing("a6", "n6", 1, unknown), crashing("a7", "n6", 1, unknown),
			},
			want: SignalVerdict{Status: structs.DeploymentStatusPaused, Reason: `restarts 7 > 0 in group "web" on nodes n1, n2, n3, n4, n5 and 1 more`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := DecideSignals(tc.d, rulesOf(signalJob(1, tc.pause, tc.fail)), tc.allocs)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestMachine_SignalsPauseResumeFail(t *testing.T) {
	job := signalJob(1, "restarts>2", "restarts>5")
	d := testDeployment(job)
	m := NewMachine(d, job, t0)
	pausedD := d.Copy()
	pausedD.Status, pausedD.StatusDescription = structs.DeploymentStatusPaused, `Deployment paused: restarts 3 > 2 in group "web" on nodes a1b2c3d4`
	resumed := d.Copy()
	resumed.TaskGroups["web"].SignalsAtResume = map[string]int{structs.SignalRestarts: 3}
	resumed.TaskGroups["web"].RequireProgressBy = at(20*time.Minute + pd)
	runSteps(t, m, []step{
		{ev: Init{Allocs: []*structs.Allocation{crashing("a1", nodeA, 1, unknown)}}, now: t0, wake: at(pd)},
		// The third restart pauses it, with the reason; the deadline freezes.
		{ev: AllocHealthChanged{Deployment: d, Allocs: []*structs.Allocation{crashing("a1", nodeA, 3, unknown)}}, now: at(time.Minute),
			want: []Effect{UpdateStatus{Status: structs.DeploymentStatusPaused, Description: pausedD.StatusDescription}}},
		// The pause as written: nothing more; more restarts while paused
		// do not pause again.
		{ev: AllocHealthChanged{Deployment: pausedD, Allocs: []*structs.Allocation{crashing("a1", nodeA, 4, unknown)}}, now: at(2 * time.Minute)},
		// Resumed with the counts seen then: not paused by them.
		{ev: Resumed{}, now: at(20 * time.Minute), wake: at(20*time.Minute + pd)},
		{ev: AllocHealthChanged{Deployment: resumed, Allocs: []*structs.Allocation{crashing("a1", nodeA, 3, unknown)}}, now: at(21 * time.Minute), wake: at(20*time.Minute + pd)},
		// Beyond auto_fail_on it fails (no auto_revert here).
		{ev: AllocHealthChanged{Deployment: resumed, Allocs: []*structs.Allocation{crashing("a1", nodeA, 6, unknown)}}, now: at(22 * time.Minute),
			want: []Effect{
				UpdateStatus{Status: structs.DeploymentStatusFailed, Description: `Deployment failed: restarts 6 > 5 in group "web" on nodes a1b2c3d4`},
				evalFor, Stop{},
			}},
	})
	require.True(t, m.Done())
}

func TestMachine_SignalFailAutoReverts(t *testing.T) {
	v0 := stable(testJob(0, "nginx:1"))
	v1 := signalJob(1, "", "oom>0")
	d := testDeployment(v1)
	d.TaskGroups["web"].AutoRevert = true
	m := NewMachine(d, v1, t0)
	versions := []*structs.Job{v1, v0}
	revert := v0.Copy()
	got, _ := m.Step(Init{Allocs: []*structs.Allocation{oomKilled(crashing("a1", nodeB, 1, unknown), 1)}, Versions: versions}, t0)
	require.Equal(t, []Effect{
		UpdateStatus{Status: structs.DeploymentStatusFailed,
			Description: `Deployment failed: oom 1 > 0 in group "web" on nodes e5f6a7b8 - rolling back to job version 0`, RevertJob: revert},
		CreateEval{TriggeredBy: structs.EvalTriggerDeploymentWatcher}, Stop{},
	}, got)
}

// TestMachine_UnhealthyCondition: a group whose conditions count unhealthy
// allocations tolerates them up to the condition; other groups still fail
// on the first one.
func TestMachine_UnhealthyCondition(t *testing.T) {
	job := signalJob(1, "unhealthy>1", "")
	d := testDeployment(job)
	m := NewMachine(d, job, t0)
	runSteps(t, m, []step{
		{ev: Init{}, now: t0, wake: at(pd)},
		{ev: AllocHealthChanged{Deployment: d, Allocs: []*structs.Allocation{crashing("a1", nodeA, 0, unhealthy)}}, now: at(time.Minute), wake: at(pd)},
		{ev: AllocHealthChanged{Deployment: d, Allocs: []*structs.Allocation{crashing("a1", nodeA, 0, unhealthy), crashing("a2", nodeB, 0, unhealthy)}},
			now:  at(2 * time.Minute),
			want: []Effect{UpdateStatus{Status: structs.DeploymentStatusPaused, Description: `Deployment paused: unhealthy 2 > 1 in group "web" on nodes a1b2c3d4, e5f6a7b8`}}},
	})

	plain := signalJob(1, "restarts>2", "")
	m = NewMachine(testDeployment(plain), plain, t0)
	_, _ = m.Step(Init{}, t0)
	got, _ := m.Step(AllocHealthChanged{Deployment: testDeployment(plain), Allocs: []*structs.Allocation{crashing("a1", nodeA, 0, unhealthy)}}, at(time.Minute))
	require.Equal(t, []Effect{UpdateStatus{Status: structs.DeploymentStatusFailed, Description: structs.DeploymentStatusDescriptionFailedAllocations}, evalFor, Stop{}}, got)
}
