package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// batchJob is a batch job of one raw_exec allocation.
func batchJob(id string) *api.Job {
	job := api.NewBatchJob(id, id, "global", 50)
	job.Datacenters = []string{"dc1"}
	task := api.NewTask("work", "raw_exec").SetConfig("command", "/bin/true")
	task.Resources = &api.Resources{CPU: new(100), MemoryMB: new(64)}
	job.AddTaskGroup(api.NewTaskGroup("work", 1).AddTask(task))
	return job
}

func periodicJob(id string, specs ...string) *api.Job {
	job := batchJob(id)
	job.Periodic = &api.PeriodicConfig{Specs: specs}
	return job
}

func TestContractPeriodicForce(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	ta.registerNode(t, "node-1")

	_, _, err := c.Jobs().PeriodicForce("nightly", nil)
	require.ErrorContains(t, err, "404")
	require.ErrorContains(t, err, "job not found")

	registerAndWait(t, c, batchJob("plain"))
	_, _, err = c.Jobs().PeriodicForce("plain", nil)
	require.ErrorContains(t, err, "400")
	require.ErrorContains(t, err, "can't force launch non-periodic job")

	// A periodic parent gets no evaluation and runs nothing itself.
	resp, _, err := c.Jobs().Register(periodicJob("nightly", "0 3 * * *"), nil)
	require.NoError(t, err)
	require.Empty(t, resp.EvalID)
	parent, _, err := c.Jobs().Info("nightly", nil)
	require.NoError(t, err)
	require.Equal(t, "running", *parent.Status)
	require.True(t, *parent.Periodic.Enabled)
	require.Equal(t, "UTC", *parent.Periodic.TimeZone)
	evals, _, err := c.Jobs().Evaluations("nightly", nil)
	require.NoError(t, err)
	require.Empty(t, evals)

	before := time.Now().Unix()
	evalID, wm, err := c.Jobs().PeriodicForce("nightly", nil)
	require.NoError(t, err)
	require.NotZero(t, wm.LastIndex)
	eval := waitEvalComplete(t, c, evalID)
	require.Equal(t, "periodic-job", eval.TriggeredBy)
	require.True(t, strings.HasPrefix(eval.JobID, "nightly/periodic-"), eval.JobID)

	child, _, err := c.Jobs().Info(eval.JobID, nil)
	require.NoError(t, err)
	require.Equal(t, "nightly", *child.ParentID)
	require.Nil(t, child.Periodic, "the child is not periodic itself")
	require.Equal(t, eval.JobID, *child.Name)
	launched := strings.TrimPrefix(eval.JobID, "nightly/periodic-")
	allocs, _, err := c.Jobs().Allocations(eval.JobID, false, nil)
	require.NoError(t, err)
	require.Len(t, allocs, 1, "the child runs the group")
	allocs, _, err = c.Jobs().Allocations("nightly", false, nil)
	require.NoError(t, err)
	require.Empty(t, allocs, "the parent runs nothing")

	stubs, _, err := c.Jobs().List(&api.QueryOptions{Prefix: "nightly"})
	require.NoError(t, err)
	require.Len(t, stubs, 2)
	require.True(t, stubs[0].Periodic)
	require.Equal(t, "nightly", stubs[1].ParentID)
	require.False(t, stubs[1].Periodic)
	require.GreaterOrEqual(t, mustAtoi(t, launched), before)

	// Disabled or stopped parents are not launched.
	disabled := periodicJob("off", "0 3 * * *")
	disabled.Periodic.Enabled = new(false)
	_, _, err = c.Jobs().Register(disabled, nil)
	require.NoError(t, err)
	_, _, err = c.Jobs().PeriodicForce("off", nil)
	require.ErrorContains(t, err, "can't force launch disabled periodic job")
}

func TestContractPeriodicValidation(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	cases := map[string]struct {
		mutate func(j *api.Job)
		want   string
	}{
		"bad cron":      {func(j *api.Job) { j.Periodic.Specs = []string{"every day"} }, `periodic: Invalid cron spec "every day"`},
		"bad time zone": {func(j *api.Job) { j.Periodic.TimeZone = new("Mars/Olympus") }, `periodic: Invalid time zone "Mars/Olympus"`},
		"no spec":       {func(j *api.Job) { j.Periodic.Specs = nil }, "periodic: Must specify a spec"},
		"service":       {func(j *api.Job) { j.Type = new("service") }, `Periodic can only be used with "batch" or "sysbatch" scheduler`},
		"parameterized": {func(j *api.Job) { j.ParameterizedJob = &api.ParameterizedJobConfig{} }, "Parameterized job can't be periodic"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := periodicJob("p-"+strings.ReplaceAll(name, " ", "-"), "0 3 * * *")
			tc.mutate(job)
			_, _, err := c.Jobs().Register(job, nil)
			require.ErrorContains(t, err, "400")
			require.ErrorContains(t, err, tc.want)
			_, _, err = c.Jobs().Info(*job.ID, nil)
			require.ErrorContains(t, err, "404", "nothing written")
		})
	}
}

// TestContractPeriodicLaunchesOnSchedule runs the leader's dispatcher for
// real with a seconds-level expression: children appear every two
// seconds, each launch once, and stop appearing when the parent stops.
func TestContractPeriodicLaunchesOnSchedule(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	ta.registerNode(t, "node-1")
	_, _, err := c.Jobs().Register(periodicJob("tick", "*/2 * * * * * *"), nil)
	require.NoError(t, err)
	children := func() []*api.JobListStub {
		stubs, _, err := c.Jobs().List(&api.QueryOptions{Prefix: "tick/"})
		require.NoError(t, err)
		return stubs
	}
	require.Eventually(t, func() bool { return len(children()) >= 2 }, 10*time.Second, 100*time.Millisecond)
	seen := map[int64]bool{}
	for _, s := range children() {
		n := mustAtoi(t, strings.TrimPrefix(s.ID, "tick/periodic-"))
		require.Zero(t, n%2, "launch times match */2 seconds: %s", s.ID)
		require.False(t, seen[n])
		seen[n] = true
	}
	_, _, err = c.Jobs().Deregister("tick", false, nil)
	require.NoError(t, err)
	time.Sleep(500 * time.Millisecond) // a launch committed before the stop may still land
	n := len(children())
	time.Sleep(2500 * time.Millisecond)
	require.Equal(t, n, len(children()), "a stopped parent launches nothing")
}

func mustAtoi(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	for _, r := range s {
		require.True(t, r >= '0' && r <= '9', "not a number: %q", s)
		n = n*10 + int64(r-'0')
	}
	return n
}
