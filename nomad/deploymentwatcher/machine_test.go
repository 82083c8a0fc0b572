package deploymentwatcher

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// step is one Step call and what it must return.
type step struct {
	ev   Event
	now  time.Time
	want []Effect  // nil: none
	wake time.Time // zero: none
}

// runSteps steps m through steps, checking each result.
func runSteps(t *testing.T, m *Machine, steps []step) {
	t.Helper()
	for i, s := range steps {
		got, wake := m.Step(s.ev, s.now)
		require.Equal(t, s.want, got, "step %d (%T): effects", i, s.ev)
		require.True(t, s.wake.Equal(wake), "step %d (%T): wakeAt got %v, want %v", i, s.ev, wake, s.wake)
	}
}

func TestMachine_HealthProgress(t *testing.T) {
	job := testJob(1, "nginx:2")
	d := testDeployment(job)
	m := NewMachine(d, job, t0)
	a1, a2 := testAlloc("a1", unknown), testAlloc("a2", unknown)
	runSteps(t, m, []step{
		{ev: Init{Allocs: []*structs.Allocation{a1, a2}}, now: t0, wake: at(pd)},
		// a1 turns healthy: next wave, deadline pushed.
		{ev: AllocHealthChanged{Deployment: withHealthy(d, 1), Allocs: []*structs.Allocation{testAlloc("a1", healthy), a2}},
			now: at(2 * time.Minute), want: []Effect{evalFor}, wake: at(2*time.Minute + pd)},
		// The same view again is no progress.
		{ev: AllocHealthChanged{Deployment: withHealthy(d, 1), Allocs: []*structs.Allocation{testAlloc("a1", healthy), a2}},
			now: at(3 * time.Minute), wake: at(2*time.Minute + pd)},
		// A tick before the deadline does nothing.
		{ev: Tick{}, now: at(5 * time.Minute), wake: at(2*time.Minute + pd)},
		{ev: AllocHealthChanged{Deployment: withHealthy(d, 2), Allocs: []*structs.Allocation{testAlloc("a1", healthy), testAlloc("a2", healthy)}},
			now: at(4 * time.Minute), want: []Effect{evalFor}, wake: at(4*time.Minute + pd)},
	})
	require.False(t, m.Done())
}

func TestMachine_InitKeepsDeadlinesAndKicksProgress(t *testing.T) {
	job := testJob(1, "nginx:2")
	d := withHealthy(testDeployment(job), 1)
	m := NewMachine(d, job, at(7*time.Minute))
	// A rebuilt machine does not push the deadline for allocations that
	// were already healthy, but asks for the evaluation the old leader may
	// not have created.
	runSteps(t, m, []step{
		{ev: Init{Allocs: []*structs.Allocation{testAlloc("a1", healthy)}}, now: at(7 * time.Minute), want: []Effect{evalFor}, wake: at(pd)},
		{ev: Tick{}, now: at(pd), want: []Effect{
			UpdateStatus{Status: structs.DeploymentStatusFailed, Description: structs.DeploymentStatusDescriptionProgressDeadline},
			evalFor, Stop{},
		}},
	})
}

func TestMachine_UnhealthyFails(t *testing.T) {
	v0 := testJob(0, "nginx:1")
	v1 := testJob(1, "nginx:2")
	failed := func(suffix string) UpdateStatus {
		return UpdateStatus{Status: structs.DeploymentStatusFailed, Description: structs.DeploymentStatusDescriptionFailedAllocations + suffix}
	}
	revertTo := func(j *structs.Job) *structs.Job {
		c := stable(j)
		c.Stop = false
		return c
	}
	tests := []struct {
		name       string
		autoRevert bool
		paused     bool
		current    *structs.Job
		versions   []*structs.Job
		alloc      *structs.Allocation
		want       []Effect // nil: no failure
	}{
		{
			name: "no auto_revert", current: v1, versions: []*structs.Job{v1, stable(v0)},
			alloc: testAlloc("a1", unhealthy),
			want:  []Effect{failed(""), evalFor, Stop{}},
		},
		{
			name: "auto_revert without a stable version", autoRevert: true, current: v1, versions: []*structs.Job{v1, v0},
			alloc: testAlloc("a1", unhealthy),
			want:  []Effect{failed(" - no stable job version to auto revert to"), evalFor, Stop{}},
		},
		{
			name: "auto_revert to a version with the same spec", autoRevert: true, current: v1,
			versions: []*structs.Job{v1, stable(testJob(0, "nginx:2"))},
			alloc:    testAlloc("a1", unhealthy),
			want: []Effect{failed(" - not rolling back to stable job version 0 as current job has same specification"),
				evalFor, Stop{}},
		},
		{
			name: "auto_revert registers the stable version with its own evaluation", autoRevert: true, current: v1,
			versions: []*structs.Job{v1, stable(v0)},
			alloc:    testAlloc("a1", unhealthy),
			want: []Effect{
				UpdateStatus{Status: structs.DeploymentStatusFailed,
					Description: structs.DeploymentStatusDescriptionFailedAllocations + " - rolling back to job version 0",
					RevertJob:   revertTo(v0)},
				CreateEval{TriggeredBy: structs.EvalTriggerDeploymentWatcher},
				Stop{},
			},
		},
		{
			name: "auto_revert picks the newest stable version older than the deployment", autoRevert: true,
			current: testJob(3, "nginx:4"),
			versions: []*structs.Job{stable(testJob(4, "nginx:5")), testJob(3, "nginx:4"), testJob(2, "nginx:3"),
				stable(testJob(1, "nginx:2")), stable(v0)},
			alloc: testAlloc("a1", unhealthy),
			want: []Effect{
				UpdateStatus{Status: structs.DeploymentStatusFailed,
					Description: structs.DeploymentStatusDescriptionFailedAllocations + " - rolling back to job version 1",
					RevertJob:   revertTo(testJob(1, "nginx:2"))},
				CreateEval{TriggeredBy: structs.EvalTriggerDeploymentWatcher},
				Stop{},
			},
		},
		{
			name: "a paused deployment still fails on an unhealthy allocation", paused: true, current: v1,
			alloc: testAlloc("a1", unhealthy),
			want:  []Effect{failed(""), evalFor, Stop{}},
		},
		{
			name: "an allocation the server stopped before it was healthy does not fail it", current: v1,
			alloc: func() *structs.Allocation {
				a := testAlloc("a1", unhealthy)
				a.DesiredStatus = structs.AllocDesiredStatusStop
				return a
			}(),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := testDeployment(tc.current)
			d.TaskGroups["web"].AutoRevert = tc.autoRevert
			if tc.paused {
				d.Status = structs.DeploymentStatusPaused
			}
			m := NewMachine(d, tc.current, t0)
			_, _ = m.Step(Init{Versions: tc.versions}, t0)
			got, wake := m.Step(AllocHealthChanged{Deployment: d, Allocs: []*structs.Allocation{tc.alloc}, Versions: tc.versions}, at(time.Minute))
			require.Equal(t, tc.want, got)
			if tc.want == nil {
				require.False(t, m.Done())
				return
			}
			require.True(t, wake.IsZero())
			require.True(t, m.Done())
			again, _ := m.Step(Tick{}, at(time.Hour))
			require.Nil(t, again, "nothing after the end")
		})
	}
}

func TestMachine_ProgressDeadline(t *testing.T) {
	job := testJob(1, "nginx:2")
	d := testDeployment(job)
	paused := d.Copy()
	paused.Status = structs.DeploymentStatusPaused
	fail := []Effect{
		UpdateStatus{Status: structs.DeploymentStatusFailed, Description: structs.DeploymentStatusDescriptionProgressDeadline},
		evalFor, Stop{},
	}
	tests := []struct {
		name  string
		d     *structs.Deployment
		steps []step
	}{
		{
			name: "fails when the deadline is reached",
			d:    d,
			steps: []step{
				{ev: Init{}, now: t0, wake: at(pd)},
				{ev: Tick{}, now: at(pd - time.Second), wake: at(pd)},
				{ev: Tick{}, now: at(pd), want: fail},
			},
		},
		{
			name: "not while paused; resume restarts the deadline",
			d:    d,
			steps: []step{
				{ev: Init{}, now: t0, wake: at(pd)},
				{ev: Paused{}, now: at(5 * time.Minute)},
				{ev: Tick{}, now: at(20 * time.Minute)},
				{ev: AllocHealthChanged{Deployment: paused}, now: at(25 * time.Minute)},
				{ev: Resumed{}, now: at(30 * time.Minute), wake: at(30*time.Minute + pd)},
				{ev: AllocHealthChanged{Deployment: d}, now: at(31 * time.Minute), wake: at(30*time.Minute + pd)},
				{ev: Tick{}, now: at(35 * time.Minute), wake: at(30*time.Minute + pd)},
				{ev: Tick{}, now: at(30*time.Minute + pd), want: fail},
			},
		},
		{
			name: "a machine built while paused past its deadline waits",
			d:    paused,
			steps: []step{
				{ev: Init{}, now: at(time.Hour)},
				{ev: Tick{}, now: at(2 * time.Hour)},
			},
		},
		{
			name: "a machine built after the deadline fails at once",
			d:    d,
			steps: []step{
				{ev: Init{}, now: at(pd + time.Minute), want: fail},
			},
		},
		{
			name: "canaries awaiting promotion are exempt until promoted",
			d: func() *structs.Deployment {
				c := d.Copy()
				c.TaskGroups["web"].DesiredCanaries = 1
				c.TaskGroups["web"].PlacedCanaries = []string{"c1"}
				return c
			}(),
			steps: func() []step {
				c := d.Copy()
				c.TaskGroups["web"].DesiredCanaries = 1
				c.TaskGroups["web"].PlacedCanaries = []string{"c1"}
				c.TaskGroups["web"].HealthyAllocs = 1
				promoted := c.Copy()
				promoted.TaskGroups["web"].Promoted = true
				canary := []*structs.Allocation{testAlloc("c1", healthy)}
				return []step{
					{ev: Init{}, now: t0, wake: at(pd)},
					{ev: AllocHealthChanged{Deployment: c, Allocs: canary}, now: at(time.Minute), want: []Effect{evalFor}},
					{ev: Tick{}, now: at(time.Hour)},
					{ev: Promoted{Deployment: promoted}, now: at(2 * time.Hour), wake: at(2*time.Hour + pd)},
					{ev: Tick{}, now: at(2*time.Hour + pd), want: fail},
				}
			}(),
		},
		{
			name: "no progress deadline, no timer",
			d: func() *structs.Deployment {
				c := d.Copy()
				c.TaskGroups["web"].ProgressDeadline = 0
				c.TaskGroups["web"].RequireProgressBy = time.Time{}
				return c
			}(),
			steps: []step{
				{ev: Init{}, now: t0},
				{ev: Tick{}, now: at(time.Hour)},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runSteps(t, NewMachine(tc.d, job, tc.steps[0].now), tc.steps)
		})
	}
}

func TestMachine_AutoPromote(t *testing.T) {
	job := testJob(1, "nginx:2")
	canaryDeployment := func(autoPromote ...bool) *structs.Deployment {
		d := testDeployment(job)
		d.TaskGroups = map[string]*structs.DeploymentState{}
		for i, ap := range autoPromote {
			name := []string{"web", "api"}[i]
			d.TaskGroups[name] = &structs.DeploymentState{
				DesiredTotal: 3, DesiredCanaries: 1, PlacedCanaries: []string{"c-" + name},
				AutoPromote: ap, ProgressDeadline: pd, RequireProgressBy: at(pd),
			}
		}
		return d
	}
	canary := func(group string, h *bool) *structs.Allocation {
		a := testAlloc("c-"+group, h)
		a.TaskGroup = group
		return a
	}
	promote := []Effect{Promote{All: true}, evalFor}
	tests := []struct {
		name   string
		d      *structs.Deployment
		allocs []*structs.Allocation
		want   []Effect
	}{
		{"all canaries healthy", canaryDeployment(true), []*structs.Allocation{canary("web", healthy)}, promote},
		{"canary not yet healthy", canaryDeployment(true), []*structs.Allocation{canary("web", unknown)}, nil},
		{"without auto_promote: progress only", canaryDeployment(false), []*structs.Allocation{canary("web", healthy)}, []Effect{evalFor}},
		{"every group must opt in", canaryDeployment(true, false),
			[]*structs.Allocation{canary("web", healthy), canary("api", healthy)}, []Effect{evalFor}},
		{"every group's canaries must be healthy", canaryDeployment(true, true),
			[]*structs.Allocation{canary("web", healthy), canary("api", unknown)}, []Effect{evalFor}},
		{"two groups ready", canaryDeployment(true, true),
			[]*structs.Allocation{canary("web", healthy), canary("api", healthy)}, promote},
		{"a stopped canary does not count", canaryDeployment(true), []*structs.Allocation{func() *structs.Allocation {
			a := canary("web", healthy)
			a.DesiredStatus = structs.AllocDesiredStatusStop
			return a
		}()}, []Effect{evalFor}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMachine(tc.d, job, t0)
			_, _ = m.Step(Init{}, t0)
			got, _ := m.Step(AllocHealthChanged{Deployment: tc.d, Allocs: tc.allocs}, at(time.Minute))
			require.Equal(t, tc.want, got)
		})
	}
	t.Run("paused: no promotion", func(t *testing.T) {
		d := canaryDeployment(true)
		d.Status = structs.DeploymentStatusPaused
		m := NewMachine(d, job, t0)
		_, _ = m.Step(Init{}, t0)
		got, _ := m.Step(AllocHealthChanged{Deployment: d, Allocs: []*structs.Allocation{canary("web", healthy)}}, at(time.Minute))
		require.Nil(t, got)
	})
}

func TestMachine_Success(t *testing.T) {
	job := testJob(1, "nginx:2")
	d := testDeployment(job)
	allHealthy := []*structs.Allocation{testAlloc("a1", healthy), testAlloc("a2", healthy), testAlloc("a3", healthy)}
	success := []Effect{
		MarkStable{Version: 1},
		UpdateStatus{Status: structs.DeploymentStatusSuccessful, Description: structs.DeploymentStatusDescriptionSuccessful},
		Stop{},
	}
	terminal := func(status string) *structs.Deployment {
		c := d.Copy()
		c.Status = status
		return c
	}
	tests := []struct {
		name string
		ev   Event
		want []Effect
	}{
		{"complete", AllocHealthChanged{Deployment: withHealthy(d, 3), Allocs: allHealthy}, success},
		{"complete except promotion", AllocHealthChanged{Deployment: func() *structs.Deployment {
			c := withHealthy(d, 3)
			c.TaskGroups["web"].DesiredCanaries = 1
			return c
		}(), Allocs: allHealthy}, []Effect{evalFor}},
		{"success written by someone else", AllocHealthChanged{Deployment: terminal(structs.DeploymentStatusSuccessful)},
			[]Effect{MarkStable{Version: 1}, Stop{}}},
		{"cancelled by the scheduler", AllocHealthChanged{Deployment: terminal(structs.DeploymentStatusCancelled)}, []Effect{Stop{}}},
		{"failed by the user", AllocHealthChanged{Deployment: terminal(structs.DeploymentStatusFailed)}, []Effect{Stop{}}},
		{"job changed", JobChanged{}, []Effect{Stop{}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMachine(d, job, t0)
			_, _ = m.Step(Init{}, t0)
			got, _ := m.Step(tc.ev, at(time.Minute))
			require.Equal(t, tc.want, got)
		})
	}
	t.Run("a machine built on a complete deployment finishes it", func(t *testing.T) {
		m := NewMachine(withHealthy(d, 3), job, t0)
		got, _ := m.Step(Init{Allocs: allHealthy}, t0)
		require.Equal(t, success, got)
	})
	t.Run("a surge job's success asks for an evaluation (the last wave's old allocations stop)", func(t *testing.T) {
		sj := job.Copy()
		sj.TaskGroups[0].Meta = map[string]string{structs.DroverMetaSurge: "true"}
		m := NewMachine(d, sj, t0)
		_, _ = m.Step(Init{}, t0)
		got, _ := m.Step(AllocHealthChanged{Deployment: withHealthy(d, 3), Allocs: allHealthy}, at(time.Minute))
		require.Equal(t, []Effect{success[0], success[1],
			CreateEval{TriggeredBy: structs.EvalTriggerDeploymentWatcher, DeploymentID: d.ID}, Stop{}}, got)
	})
	t.Run("a machine built for a job that moved on stops", func(t *testing.T) {
		m := NewMachine(d, testJob(2, "nginx:3"), t0)
		got, _ := m.Step(Init{}, t0)
		require.Equal(t, []Effect{Stop{}}, got)
	})
}

func TestMachine_Events(t *testing.T) {
	job := testJob(1, "nginx:2")
	d := testDeployment(job)
	with := func(f func(c *structs.Deployment)) *structs.Deployment {
		c := d.Copy()
		f(c)
		return c
	}
	paused := with(func(c *structs.Deployment) { c.Status = structs.DeploymentStatusPaused })
	promoted := with(func(c *structs.Deployment) { c.TaskGroups["web"].Promoted = true })
	tests := []struct {
		name  string
		known *structs.Deployment
		obs   Observation
		want  []string
	}{
		{"no change", d, Observation{Deployment: d, Job: job}, []string{"AllocHealthChanged"}},
		{"paused", d, Observation{Deployment: paused, Job: job}, []string{"Paused", "AllocHealthChanged"}},
		{"resumed", paused, Observation{Deployment: d, Job: job}, []string{"Resumed", "AllocHealthChanged"}},
		{"promoted", d, Observation{Deployment: promoted, Job: job}, []string{"Promoted", "AllocHealthChanged"}},
		{"newer version", d, Observation{Deployment: d, Job: testJob(2, "nginx:3")}, []string{"JobChanged"}},
		{"stopped", d, Observation{Deployment: d, Job: func() *structs.Job { j := job.Copy(); j.Stop = true; return j }()}, []string{"JobChanged"}},
		{"purged", d, Observation{Deployment: d}, []string{"JobChanged"}},
		{"deployment gone", d, Observation{Job: job}, []string{"JobChanged"}},
		{"terminal, whatever the job", d, Observation{Deployment: with(func(c *structs.Deployment) {
			c.Status = structs.DeploymentStatusSuccessful
		})}, []string{"AllocHealthChanged"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMachine(tc.known, job, t0)
			var got []string
			for _, ev := range m.Events(tc.obs) {
				got = append(got, eventName(ev))
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func eventName(ev Event) string {
	switch ev.(type) {
	case Init:
		return "Init"
	case AllocHealthChanged:
		return "AllocHealthChanged"
	case Tick:
		return "Tick"
	case Promoted:
		return "Promoted"
	case Paused:
		return "Paused"
	case Resumed:
		return "Resumed"
	case JobChanged:
		return "JobChanged"
	}
	return "?"
}

func TestUnhealthyCanaries(t *testing.T) {
	job := testJob(1, "nginx:2")
	d := testDeployment(job)
	d.TaskGroups["web"].DesiredCanaries = 2
	d.TaskGroups["web"].PlacedCanaries = []string{"c1", "c2"}
	d.TaskGroups["api"] = &structs.DeploymentState{DesiredTotal: 3}
	g, h, want := UnhealthyCanaries(d, []*structs.Allocation{testAlloc("c1", healthy), testAlloc("c2", unknown)}, nil)
	require.Equal(t, []any{"web", 1, 2}, []any{g, h, want})
	g, _, _ = UnhealthyCanaries(d, []*structs.Allocation{testAlloc("c1", healthy), testAlloc("c2", healthy)}, nil)
	require.Empty(t, g)
	g, _, _ = UnhealthyCanaries(d, nil, []string{"api"})
	require.Empty(t, g, "a group without canaries is never blocked")
}
