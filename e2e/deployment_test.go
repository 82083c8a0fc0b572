package e2e

import (
	"fmt"
	"sort"
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
variable "auto_revert" {
  type    = bool
  default = true
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
    auto_revert       = var.auto_revert
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
func liveVersions(t testing.TB, c *api.Client) map[uint64]int {
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

func latestDeployment(t testing.TB, c *api.Client) *api.Deployment {
	t.Helper()
	d, _, err := c.Jobs().LatestDeployment("web", nil)
	require.NoError(t, err)
	return d
}

func waitDeployment(t testing.TB, c *api.Client, version uint64, status string) *api.Deployment {
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

	// A node joining while canaries await promotion gets no new version:
	// once the evaluation its registration created has run, nothing moved.
	before := evalCount(t, c)
	newClientAgent(t, "client-6", srv.httpHostPort())
	waitReadyNodes(t, c, 6)
	waitEvalsSettled(t, c, before)
	require.Equal(t, 2, liveVersions(t, c)[1], "no new-version placement before promotion")

	// Pause holds the rollout even after promotion; resume continues it in
	// waves of at most 2.
	code, out = drover(t, srv.httpAddr(), "deployment", "pause", d.ID)
	require.Equal(t, 0, code, out)
	before = evalCount(t, c)
	code, out = drover(t, srv.httpAddr(), "deployment", "promote", "-detach", d.ID)
	require.Equal(t, 0, code, out)
	waitEvalsSettled(t, c, before) // the promotion's evaluation ran
	require.Equal(t, 2, liveVersions(t, c)[1], "a paused deployment places nothing")
	stopSampling := make(chan struct{})
	mostV1 := waveSampler(t, c, 1, stopSampling)
	code, out = drover(t, srv.httpAddr(), "deployment", "resume", d.ID)
	require.Equal(t, 0, code, out)
	waitDeployment(t, c, 1, "successful")
	close(stopSampling)
	require.LessOrEqual(t, <-mostV1, 3, "waves of 2, plus the joined node's unlimited placement")
	require.Equal(t, map[uint64]int{1: 6}, liveVersions(t, c), "after promotion every node, the new one included, runs version 1")
	promotedAllocs, _, err := c.Deployments().Allocations(d.ID, nil)
	require.NoError(t, err)
	for _, a := range promotedAllocs {
		require.False(t, a.DeploymentStatus != nil && a.DeploymentStatus.Canary, "allocation %s is still flagged a canary after promotion", a.ID)
	}

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

	// Version 4 rolls over all six nodes in waves of at most max_parallel =
	// 2, sampled continuously; the delay between a slot freeing (an
	// allocation turning healthy) and the next placement is measured.
	stop := make(chan struct{})
	most := waveSampler(t, c, 4, stop)
	code, out = run("-var", "version=4")
	close(stop)
	require.Equal(t, 0, code, out)
	require.LessOrEqual(t, <-most, 2, "never more than max_parallel updates in flight")
	d4 := waitDeployment(t, c, 4, "successful")
	delays := waveDelays(t, c, d4.ID)
	require.NotEmpty(t, delays)
	t.Logf("wave delay (health report to next placement) over %d placements: median %s, worst %s",
		len(delays), delays[len(delays)/2], delays[len(delays)-1])
}

// waveSampler polls the job's allocations until stop is closed and records
// the most allocations of version that were ever placed but not yet healthy
// at once (canaries excluded).
func waveSampler(t testing.TB, c *api.Client, version uint64, stop <-chan struct{}) <-chan int {
	out := make(chan int, 1)
	go func() {
		most := 0
		for {
			select {
			case <-stop:
				out <- most
				return
			case <-time.After(25 * time.Millisecond):
			}
			allocs, _, err := c.Jobs().Allocations("web", false, nil)
			if err != nil {
				continue
			}
			inFlight := 0
			for _, a := range allocs {
				if a.JobVersion != version || a.DesiredStatus != "run" || a.ClientStatus == "complete" || a.ClientStatus == "failed" {
					continue
				}
				ds := a.DeploymentStatus
				if ds != nil && ds.Canary {
					continue
				}
				if ds == nil || ds.Healthy == nil || !*ds.Healthy {
					inFlight++
				}
			}
			most = max(most, inFlight)
		}
	}()
	return out
}

// waveDelays returns, for each allocation of the deployment placed after the
// first wave, the time between the latest health report before its creation
// and its creation: how long the control plane took to start the next wave
// once a slot freed up.
func waveDelays(t testing.TB, c *api.Client, deploymentID string) []time.Duration {
	t.Helper()
	stubs, _, err := c.Deployments().Allocations(deploymentID, nil)
	require.NoError(t, err)
	var healthyAt []time.Time
	for _, a := range stubs {
		if ds := a.DeploymentStatus; ds != nil && ds.Healthy != nil && *ds.Healthy {
			healthyAt = append(healthyAt, ds.Timestamp)
		}
	}
	var delays []time.Duration
	for _, a := range stubs {
		created := time.Unix(0, a.CreateTime)
		var freedAt time.Time
		for _, h := range healthyAt {
			if !h.After(created) && h.After(freedAt) {
				freedAt = h
			}
		}
		if !freedAt.IsZero() {
			delays = append(delays, created.Sub(freedAt))
		}
	}
	sort.Slice(delays, func(i, j int) bool { return delays[i] < delays[j] })
	return delays
}

// evalCount returns how many evaluations the job has.
func evalCount(t testing.TB, c *api.Client) int {
	t.Helper()
	evals, _, err := c.Jobs().Evaluations("web", nil)
	require.NoError(t, err)
	return len(evals)
}

// waitEvalsSettled waits until the job has more than before evaluations and
// none of them is still pending: the scheduler has acted on what happened.
func waitEvalsSettled(t testing.TB, c *api.Client, before int) {
	t.Helper()
	require.Eventually(t, func() bool {
		evals, _, err := c.Jobs().Evaluations("web", nil)
		if err != nil || len(evals) <= before {
			return false
		}
		for _, e := range evals {
			if e.Status == "pending" || e.Status == "blocked" {
				return false
			}
		}
		return true
	}, 30*time.Second, 100*time.Millisecond, "evaluations settle")
}

func mustDeployments(t testing.TB, c *api.Client) []*api.Deployment {
	t.Helper()
	ds, _, err := c.Jobs().Deployments("web", true, nil)
	require.NoError(t, err)
	return ds
}
