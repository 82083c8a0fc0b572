package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// scriptCheckJob is a raw_exec service job of one allocation whose group
// service has a script check running script (with /bin/sh -c) in task
// "server", gating deployments with health_check = "checks".
func scriptCheckJob(id, version, script string) *api.Job {
	job := api.NewServiceJob(id, id, "global", 50)
	job.Datacenters = []string{"dc1"}
	task := api.NewTask("server", "raw_exec").SetConfig("command", "/bin/sleep").SetConfig("args", []string{"3600"})
	task.Resources = &api.Resources{CPU: new(50), MemoryMB: new(32)}
	task.Env = map[string]string{"VERSION": version}
	tg := api.NewTaskGroup("web", 1).AddTask(task)
	tg.Services = []*api.Service{{Name: id, Provider: "nomad", TaskName: "server", Checks: []api.ServiceCheck{{
		Name: "script", Type: "script", Command: "/bin/sh", Args: []string{"-c", script},
		Interval: 500 * time.Millisecond, Timeout: 2 * time.Second,
	}}}}
	tg.Update = &api.UpdateStrategy{MaxParallel: new(1), HealthCheck: new("checks"), AutoRevert: new(false),
		MinHealthyTime: new(time.Second), HealthyDeadline: new(6 * time.Second), ProgressDeadline: new(8 * time.Second)}
	job.AddTaskGroup(tg)
	return job
}

// TestScriptCheckGatesDeployment: with health_check = "checks", a passing
// script check lets a deployment succeed; a version whose script check
// fails never becomes healthy and its deployment fails at the deadline,
// the check reported as failing.
func TestScriptCheckGatesDeployment(t *testing.T) {
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(t, srv)
	c := srv.client(t)
	newClientAgent(t, "client-1", srv.httpHostPort())
	waitReadyNodes(t, c, 1)

	_, _, err := c.Jobs().Register(scriptCheckJob("scripted", "1", `test -d "$NOMAD_TASK_DIR"`), nil)
	require.NoError(t, err)
	waitDeploymentStatus(t, c, "scripted", "successful")

	_, _, err = c.Jobs().Register(scriptCheckJob("scripted", "2", "echo not ready; exit 2"), nil)
	require.NoError(t, err)
	var alloc *api.AllocationListStub
	require.Eventually(t, func() bool {
		for _, a := range runningAllocs(t, c, "scripted") {
			if a.JobVersion == 1 {
				alloc = a
			}
		}
		return alloc != nil
	}, 30*time.Second, 200*time.Millisecond, "version 2 runs")
	d := waitDeploymentStatus(t, c, "scripted", "failed")
	require.Equal(t, uint64(1), d.JobVersion)
	st := d.TaskGroups["web"]
	require.Equal(t, 0, st.HealthyAllocs)
	require.Equal(t, 1, st.UnhealthyAllocs)

	full, _, err := c.Allocations().Info(alloc.ID, nil)
	require.NoError(t, err)
	require.NotNil(t, full.DeploymentStatus)
	require.NotNil(t, full.DeploymentStatus.Healthy)
	require.False(t, *full.DeploymentStatus.Healthy)

	checks, err := c.Allocations().Checks(alloc.ID, nil)
	require.NoError(t, err)
	require.Len(t, checks, 1)
	for _, cs := range checks {
		require.Equal(t, "script", cs.Check)
		require.Equal(t, "server", cs.Task)
		require.Equal(t, "failure", cs.Status)
		require.Equal(t, "exit code 2: not ready", cs.Output)
	}
}

// TestCheckRestartRestartsTask: a task whose script check fails is
// restarted by check_restart ("Restart Signaled" with Nomad's reason,
// one restart counted); after the restart the check passes and the
// deployment succeeds.
func TestCheckRestartRestartsTask(t *testing.T) {
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(t, srv)
	c := srv.client(t)
	newClientAgent(t, "client-1", srv.httpHostPort())
	waitReadyNodes(t, c, 1)

	// The first run leaves a marker in the allocation's shared directory;
	// a run that finds it is healthy.
	job := scriptCheckJob("restarted", "1", `test -f "$NOMAD_TASK_DIR/healthy"`)
	tg := job.TaskGroups[0]
	tg.Tasks[0].SetConfig("command", "/bin/sh").SetConfig("args", []string{"-c",
		`if [ -f "$NOMAD_ALLOC_DIR/data/started" ]; then touch "$NOMAD_TASK_DIR/healthy"; fi; touch "$NOMAD_ALLOC_DIR/data/started"; exec sleep 3600`})
	tg.Services[0].Checks[0].CheckRestart = &api.CheckRestart{Limit: 2, Grace: new(time.Second)}
	tg.RestartPolicy = &api.RestartPolicy{Attempts: new(2), Interval: new(time.Hour), Delay: new(500 * time.Millisecond), Mode: new("fail")}
	tg.Update.HealthyDeadline, tg.Update.ProgressDeadline = new(30*time.Second), new(40*time.Second)
	_, _, err := c.Jobs().Register(job, nil)
	require.NoError(t, err)
	waitDeploymentStatus(t, c, "restarted", "successful")

	allocs := runningAllocs(t, c, "restarted")
	require.Len(t, allocs, 1)
	var id string
	for _, a := range allocs {
		id = a.ID
	}
	full, _, err := c.Allocations().Info(id, nil)
	require.NoError(t, err)
	ts := full.TaskStates["server"]
	require.NotNil(t, ts)
	require.Equal(t, "running", ts.State)
	require.Equal(t, uint64(1), ts.Restarts)
	var seen []string
	for _, e := range ts.Events {
		if e.Type == "Restart Signaled" || e.Type == "Restarting" || e.Type == "Started" {
			seen = append(seen, e.Type+": "+e.DisplayMessage)
		}
	}
	require.Equal(t, []string{
		"Started: Task started by client",
		`Restart Signaled: health check: check "script" unhealthy`,
		"Restarting: Task restarting in 500ms",
		"Started: Task started by client",
	}, seen)
	checks, err := c.Allocations().Checks(id, nil)
	require.NoError(t, err)
	for _, cs := range checks {
		require.Equal(t, "success", cs.Status, strings.TrimSpace(cs.Output))
	}
}
