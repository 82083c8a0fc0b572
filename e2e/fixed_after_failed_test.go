package e2e

import (
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// failingServiceJob is a raw_exec service job of two allocations rolled out
// one at a time, without auto-revert and with the default service
// reschedule policy (30 s delay); command is its task's shell command.
func failingServiceJob(id, command string) *api.Job {
	job := api.NewServiceJob(id, id, "global", 50)
	job.Datacenters = []string{"dc1"}
	task := api.NewTask("server", "raw_exec").SetConfig("command", "/bin/sh").SetConfig("args", []string{"-c", command})
	task.Resources = &api.Resources{CPU: new(20), MemoryMB: new(16)}
	tg := api.NewTaskGroup("web", 2).AddTask(task)
	tg.RestartPolicy = &api.RestartPolicy{Attempts: new(0), Mode: new("fail")}
	tg.Update = &api.UpdateStrategy{MaxParallel: new(1), HealthCheck: new("task_states"), MinHealthyTime: new(time.Second),
		HealthyDeadline: new(5 * time.Second), ProgressDeadline: new(time.Minute), AutoRevert: new(false)}
	job.AddTaskGroup(tg)
	return job
}

// TestFixedVersionAfterFailedDeployment: version 0 of a service job fails
// its deployment (its task exits 1); its failed allocations wait out the
// reschedule delay (30 s). Version 1, which fixes the task, is placed at
// once inside its own deployment (as Nomad does: a new version replaces the
// failed allocations of the older one; the delay applies to the current
// version's failures only), and that deployment succeeds long before the
// reschedule delay.
func TestFixedVersionAfterFailedDeployment(t *testing.T) {
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(t, srv)
	c := srv.client(t)
	for _, name := range []string{"client-1", "client-2"} {
		newClientAgent(t, name, srv.httpHostPort())
	}
	waitReadyNodes(t, c, 2)

	_, _, err := c.Jobs().Register(failingServiceJob("fixme", "exit 1"), nil)
	require.NoError(t, err)
	failed := waitJobDeployment(t, c, "fixme", 0, "failed")
	require.Eventually(t, func() bool {
		allocs, _, err := c.Jobs().Allocations("fixme", true, nil)
		if err != nil {
			return false
		}
		n := 0
		for _, a := range allocs {
			if a.ClientStatus == "failed" {
				n++
			}
		}
		return n == 2
	}, 30*time.Second, 100*time.Millisecond, "both allocations of version 0 fail")

	registered := time.Now()
	resp, _, err := c.Jobs().Register(failingServiceJob("fixme", "exec sleep 3600"), nil)
	require.NoError(t, err)
	var eval *api.Evaluation
	require.Eventually(t, func() bool {
		eval, _, err = c.Evaluations().Info(resp.EvalID, nil)
		return err == nil && eval.Status == "complete"
	}, 5*time.Second, 50*time.Millisecond, "the registration's evaluation completes")
	require.NotEmpty(t, eval.DeploymentID, "the registration's evaluation names the deployment the CLI monitors")

	// The fixed version is placed at once, inside its own deployment.
	var d *api.Deployment
	require.Eventually(t, func() bool {
		d, _, err = c.Jobs().LatestDeployment("fixme", nil)
		return err == nil && d != nil && d.JobVersion == 1
	}, 5*time.Second, 50*time.Millisecond, "version 1 gets a deployment when registered")
	require.NotEqual(t, failed.ID, d.ID)
	require.Equal(t, d.ID, eval.DeploymentID)
	require.Eventually(t, func() bool {
		for _, a := range liveAllocs(t, c, "fixme") {
			if a.JobVersion == 1 {
				return true
			}
		}
		return false
	}, 5*time.Second, 50*time.Millisecond, "version 1 is placed within seconds, not after the 30 s reschedule delay")

	done := waitJobDeployment(t, c, "fixme", 1, "successful")
	require.Equal(t, d.ID, done.ID)
	require.Less(t, time.Since(registered), 25*time.Second, "the rollout does not wait for the reschedule delay")
	live := liveAllocs(t, c, "fixme")
	require.Len(t, live, 2)
	for _, stub := range live {
		a, _, err := c.Allocations().Info(stub.ID, nil)
		require.NoError(t, err)
		require.Equal(t, uint64(1), *a.Job.Version)
		require.Equal(t, d.ID, a.DeploymentID, "allocation %s joins the fixed version's deployment", a.ID)
		require.Equal(t, "running", a.ClientStatus)
	}
}
