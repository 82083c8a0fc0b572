package nodesim

import (
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

func testAlloc(jobType string, config map[string]any, update *api.UpdateStrategy) *api.Allocation {
	task := &api.Task{Name: "t", Driver: "mock", Config: config}
	tg := &api.TaskGroup{Name: new("g"), Tasks: []*api.Task{task}, Update: update}
	return &api.Allocation{
		ID: "a1", TaskGroup: "g", DesiredStatus: "run", ClientStatus: "pending", AllocModifyIndex: 5,
		Job: &api.Job{Type: new(jobType), TaskGroups: []*api.TaskGroup{tg}},
	}
}

// TestSimAllocReport walks a simulated allocation through its timeline: the
// status and task state it reports at each moment, and when it must be
// looked at again.
func TestSimAllocReport(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	type step struct {
		at     time.Duration
		status string
		task   string
		failed bool
		next   time.Duration // -1: none
	}
	cases := []struct {
		name   string
		typ    string
		config map[string]any
		stopAt time.Duration // 0: not stopped
		steps  []step
	}{
		{"runs until stopped", "system", map[string]any{"prepare_for": "1s", "start_block_for": "2s"}, 0, []step{
			{0, "pending", "pending", false, 3 * time.Second},
			{3 * time.Second, "running", "running", false, -1},
		}},
		{"exits ok after run_for", "sysbatch", map[string]any{"run_for": "5s"}, 0, []step{
			{0, "running", "running", false, 5 * time.Second},
			{5 * time.Second, "complete", "dead", false, -1},
		}},
		{"exits with a code", "system", map[string]any{"run_for": "1s", "exit_code": 3}, 0, []step{
			{time.Second, "failed", "dead", true, -1},
		}},
		{"start error", "system", map[string]any{"start_block_for": "1s", "start_error": "boom"}, 0, []step{
			{0, "pending", "pending", false, time.Second},
			{time.Second, "failed", "dead", true, -1},
		}},
		{"prepare error", "system", map[string]any{"prepare_for": "2s", "prepare_error": "no image"}, 0, []step{
			{2 * time.Second, "failed", "dead", true, -1},
		}},
		{"bad config fails the task", "system", map[string]any{"exit_code": 300}, 0, []step{
			{0, "failed", "dead", true, -1},
		}},
		{"stop with kill_after", "system", map[string]any{"kill_after": "2s"}, 10 * time.Second, []step{
			{10 * time.Second, "running", "running", false, 12 * time.Second},
			{12 * time.Second, "complete", "dead", false, -1},
		}},
		{"stop before start", "system", map[string]any{"start_block_for": "10s"}, time.Second, []step{
			{time.Second, "complete", "dead", false, -1},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSimAlloc(testAlloc(tc.typ, tc.config, nil), t0)
			if tc.stopAt > 0 {
				a := testAlloc(tc.typ, tc.config, nil)
				a.DesiredStatus, a.AllocModifyIndex = "stop", 6
				s.update(a, at(tc.stopAt))
			}
			for _, st := range tc.steps {
				rep, next := s.report(at(st.at))
				require.Equal(t, st.status, rep.ClientStatus, "at %v", st.at)
				require.Equal(t, st.task, rep.TaskStates["t"].State, "at %v", st.at)
				require.Equal(t, st.failed, rep.TaskStates["t"].Failed, "at %v", st.at)
				if st.next < 0 {
					require.True(t, next.IsZero(), "at %v: next %v", st.at, next)
				} else {
					require.Equal(t, at(st.next), next, "at %v", st.at)
				}
			}
		})
	}
}

// TestSimAllocHealth checks that deployment health follows the group's
// update block: healthy after min_healthy_time of running, unhealthy on a
// failed task, and tracked afresh in a new deployment.
func TestSimAllocHealth(t *testing.T) {
	t0 := time.Unix(1000, 0)
	upd := &api.UpdateStrategy{HealthCheck: new("task_states"), MinHealthyTime: new(5 * time.Second), HealthyDeadline: new(time.Minute)}
	a := testAlloc("system", map[string]any{"start_block_for": "1s"}, upd)
	a.DeploymentID = "d1"
	s := newSimAlloc(a, t0)

	rep, next := s.report(t0.Add(time.Second))
	require.Nil(t, rep.DeploymentStatus)
	require.Equal(t, t0.Add(6*time.Second), next, "health is looked at when min_healthy_time has passed")
	rep, _ = s.report(t0.Add(6 * time.Second))
	require.NotNil(t, rep.DeploymentStatus)
	require.True(t, *rep.DeploymentStatus.Healthy)

	a2 := testAlloc("system", map[string]any{"start_block_for": "1s"}, upd)
	a2.DeploymentID, a2.AllocModifyIndex = "d2", 9
	s.update(a2, t0.Add(10*time.Second))
	rep, next = s.report(t0.Add(10 * time.Second))
	require.Nil(t, rep.DeploymentStatus, "a new deployment tracks health afresh")
	require.Equal(t, t0.Add(15*time.Second), next)

	bad := testAlloc("system", map[string]any{"run_for": "2s", "exit_code": 1}, upd)
	bad.DeploymentID = "d1"
	sb := newSimAlloc(bad, t0)
	rep, _ = sb.report(t0.Add(2 * time.Second))
	require.NotNil(t, rep.DeploymentStatus)
	require.False(t, *rep.DeploymentStatus.Healthy)
	require.Equal(t, "failed", rep.ClientStatus)
}

func TestSignatureChangesWithState(t *testing.T) {
	a := &api.Allocation{ClientStatus: "running", TaskStates: map[string]*api.TaskState{"t": {State: "running"}}}
	b := &api.Allocation{ClientStatus: "running", TaskStates: map[string]*api.TaskState{"t": {State: "running"}},
		DeploymentStatus: &api.AllocDeploymentStatus{Healthy: new(true)}}
	require.NotEqual(t, signature(a), signature(b))
	require.Equal(t, signature(a), signature(&api.Allocation{ClientStatus: "running", TaskStates: map[string]*api.TaskState{"t": {State: "running"}}}))
}

// TestSimAllocMigrateHealth: outside a deployment, a service allocation's
// health follows its group's migrate block; other allocations report none.
func TestSimAllocMigrateHealth(t *testing.T) {
	t0 := time.Unix(1000, 0)
	a := testAlloc("service", map[string]any{"start_block_for": "1s"}, nil)
	a.Job.TaskGroups[0].Migrate = &api.MigrateStrategy{HealthCheck: new("task_states"), MinHealthyTime: new(5 * time.Second), HealthyDeadline: new(time.Minute)}
	s := newSimAlloc(a, t0)
	rep, next := s.report(t0.Add(time.Second))
	require.Nil(t, rep.DeploymentStatus)
	require.Equal(t, t0.Add(6*time.Second), next)
	rep, _ = s.report(t0.Add(6 * time.Second))
	require.NotNil(t, rep.DeploymentStatus)
	require.True(t, *rep.DeploymentStatus.Healthy)

	b := testAlloc("batch", map[string]any{"start_block_for": "1s"}, nil)
	b.Job.TaskGroups[0].Migrate = a.Job.TaskGroups[0].Migrate
	sb := newSimAlloc(b, t0)
	rep, _ = sb.report(t0.Add(time.Hour))
	require.Nil(t, rep.DeploymentStatus, "batch allocations are not tracked")
}
