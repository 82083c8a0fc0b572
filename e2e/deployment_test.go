package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// deployJobHCL is a system job rolled out with a deployment. Its variables
// pick the version label, the canary percentage and the task command.
const deployJobHCL = `
variable "version" {
  type = string
}
variable "canary" {
  type    = number
  default = 0
}
variable "command" {
  type    = string
  default = "exec sleep 3600"
}
job "web" {
  type        = "system"
  datacenters = ["dc1"]
  update {
    max_parallel      = 2
    canary            = var.canary
    health_check      = "task_states"
    min_healthy_time  = "1s"
    healthy_deadline  = "15s"
    progress_deadline = "1m"
    auto_revert       = true
  }
  group "web" {
    restart {
      attempts = 0
      mode     = "fail"
    }
    task "server" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo version ${var.version}; ${var.command}"]
      }
      env {
        VERSION = var.version
      }
      resources {
        cpu    = 20
        memory = 16
      }
    }
  }
}
`

// liveVersions counts the job's live allocations by job version.
func liveVersions(t *testing.T, c *api.Client) map[uint64]int {
	t.Helper()
	allocs, _, err := c.Jobs().Allocations("web", false, nil)
	require.NoError(t, err)
	out := map[uint64]int{}
	for _, a := range allocs {
		if a.DesiredStatus == "run" && (a.ClientStatus == "running" || a.ClientStatus == "pending") {
			out[a.JobVersion]++
		}
	}
	return out
}

func latestDeployment(t *testing.T, c *api.Client) *api.Deployment {
	t.Helper()
	d, _, err := c.Jobs().LatestDeployment("web", nil)
	require.NoError(t, err)
	return d
}

func waitDeployment(t *testing.T, c *api.Client, version uint64, status string) *api.Deployment {
	t.Helper()
	var d *api.Deployment
	require.Eventually(t, func() bool {
		d = latestDeployment(t, c)
		return d != nil && d.JobVersion == version && d.Status == status
	}, 90*time.Second, 200*time.Millisecond, "deployment of version %d never became %s (last: %+v)", version, status, d)
	return d
}

func TestSystemJobDeploymentStory(t *testing.T) {
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1,
		extra: `min_heartbeat_ttl = "2s"
  heartbeat_grace = "2s"`})
	waitLeader(t, srv)
	c := srv.client(t)
	for i := 1; i <= 5; i++ {
		newClientAgent(t, fmt.Sprintf("client-%d", i), srv.httpHostPort())
	}
	waitReadyNodes(t, c, 5)
	jobFile := writeJobFile(t, deployJobHCL)
	run := func(args ...string) (int, string) {
		return drover(t, srv.httpAddr(), append(append([]string{"job", "run"}, args...), jobFile)...)
	}

	// Version 0 rolls out and becomes stable; job run exits 0.
	code, out := run("-var", "version=0")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Deployment completed successfully")
	waitDeployment(t, c, 0, "successful")
	versions, _, _, err := c.Jobs().Versions("web", false, nil)
	require.NoError(t, err)
	require.True(t, *versions[0].Stable, "a successful deployment makes its version stable")

	// Version 1 with canary = 40 on 5 nodes: 2 canaries, nothing else, until
	// promotion.
	code, out = run("-detach", "-var", "version=1", "-var", "canary=40")
	require.Equal(t, 0, code, out)
	var d *api.Deployment
	require.Eventually(t, func() bool {
		d = latestDeployment(t, c)
		return d != nil && d.JobVersion == 1 && d.TaskGroups["web"].HealthyAllocs == 2
	}, 60*time.Second, 200*time.Millisecond)
	require.Equal(t, 2, d.TaskGroups["web"].DesiredCanaries)
	require.Equal(t, "Deployment is running but requires manual promotion", d.StatusDescription)
	require.Equal(t, map[uint64]int{0: 3, 1: 2}, liveVersions(t, c), "canaries replaced two nodes in place")

	// A node joining while canaries await promotion gets no new version.
	newClientAgent(t, "client-6", srv.httpHostPort())
	waitReadyNodes(t, c, 6)
	time.Sleep(2 * time.Second) // give the scheduler a chance to misbehave
	require.Equal(t, 2, liveVersions(t, c)[1], "no new-version placement before promotion")

	// Pause holds the rollout even after promotion; resume continues it.
	code, out = drover(t, srv.httpAddr(), "deployment", "pause", d.ID)
	require.Equal(t, 0, code, out)
	code, out = drover(t, srv.httpAddr(), "deployment", "promote", "-detach", d.ID)
	require.Equal(t, 0, code, out)
	time.Sleep(2 * time.Second)
	require.Equal(t, 2, liveVersions(t, c)[1], "a paused deployment places nothing")
	code, out = drover(t, srv.httpAddr(), "deployment", "resume", d.ID)
	require.Equal(t, 0, code, out)
	waitDeployment(t, c, 1, "successful")
	require.Equal(t, map[uint64]int{1: 6}, liveVersions(t, c), "after promotion every node, the new one included, runs version 1")

	// Version 2 is broken: its first wave turns unhealthy, the deployment
	// fails, no further node gets it, and auto_revert registers version 1's
	// spec again as version 3 with its own deployment.
	code, out = run("-var", "version=2", "-var", "command=exit 1")
	require.Equal(t, 1, code, out)
	failed := false
	for _, ds := range mustDeployments(t, c) {
		if ds.JobVersion == 2 {
			require.Equal(t, "failed", ds.Status)
			require.True(t, strings.HasPrefix(ds.StatusDescription, "Failed due to unhealthy allocations - rolling back to job version 1"), ds.StatusDescription)
			require.LessOrEqual(t, ds.TaskGroups["web"].PlacedAllocs, 2, "a failed deployment halts after at most max_parallel nodes")
			failed = true
		}
	}
	require.True(t, failed)
	waitDeployment(t, c, 3, "successful")
	job, _, err := c.Jobs().Info("web", nil)
	require.NoError(t, err)
	require.Equal(t, "1", job.TaskGroups[0].Tasks[0].Env["VERSION"], "version 3 is version 1's spec")
	require.Eventually(t, func() bool {
		v := liveVersions(t, c)
		return v[3] == 6 && len(v) == 1
	}, 60*time.Second, 200*time.Millisecond, "every node back on the stable spec")
}

func mustDeployments(t *testing.T, c *api.Client) []*api.Deployment {
	t.Helper()
	ds, _, err := c.Jobs().Deployments("web", true, nil)
	require.NoError(t, err)
	return ds
}
