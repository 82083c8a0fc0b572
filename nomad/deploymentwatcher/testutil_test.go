package deploymentwatcher

import (
	"time"

	"github.com/drover-project/drover/nomad/structs"
)

// Fixtures shared by the machine and watcher tests.

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

const pd = 10 * time.Minute // the progress deadline of test deployments

// at returns t0 + d.
func at(d time.Duration) time.Time { return t0.Add(d) }

// testJob returns version v of system job "web" (group "web", 3 nodes'
// worth of allocations), running image.
func testJob(v uint64, image string) *structs.Job {
	return &structs.Job{
		Namespace:      structs.DefaultNamespace,
		ID:             "web",
		Name:           "web",
		Type:           structs.JobTypeSystem,
		Priority:       50,
		Datacenters:    []string{"dc1"},
		Version:        v,
		CreateIndex:    1,
		JobModifyIndex: 10 + v,
		TaskGroups: []*structs.TaskGroup{{
			Name:  "web",
			Count: 1,
			Tasks: []*structs.Task{{Name: "server", Driver: "docker", Config: map[string]any{"image": image}}},
			Update: &structs.UpdateStrategy{
				MaxParallel: 1, HealthCheck: structs.UpdateHealthCheckTaskStates,
				MinHealthyTime: 10 * time.Second, HealthyDeadline: 5 * time.Minute, ProgressDeadline: pd,
			},
		}},
	}
}

// stable returns a copy of job marked stable.
func stable(job *structs.Job) *structs.Job {
	c := job.Copy()
	c.Stable = true
	return c
}

// testDeployment returns a running deployment "d1" of job with group "web"
// (3 desired, progress deadline pd, RequireProgressBy t0+pd).
func testDeployment(job *structs.Job) *structs.Deployment {
	return &structs.Deployment{
		ID:                "d1",
		Namespace:         job.Namespace,
		JobID:             job.ID,
		JobVersion:        job.Version,
		JobCreateIndex:    job.CreateIndex,
		JobModifyIndex:    job.JobModifyIndex,
		Status:            structs.DeploymentStatusRunning,
		StatusDescription: structs.DeploymentStatusDescriptionRunning,
		TaskGroups: map[string]*structs.DeploymentState{
			"web": {DesiredTotal: 3, ProgressDeadline: pd, RequireProgressBy: at(pd)},
		},
	}
}

// health values for testAlloc.
var (
	unknown   *bool
	healthy   = new(true)
	unhealthy = new(false)
)

// testAlloc returns a running allocation id of group "web" of deployment
// d1 with health h.
func testAlloc(id string, h *bool) *structs.Allocation {
	return &structs.Allocation{
		ID:               id,
		Namespace:        structs.DefaultNamespace,
		JobID:            "web",
		TaskGroup:        "web",
		DeploymentID:     "d1",
		DesiredStatus:    structs.AllocDesiredStatusRun,
		ClientStatus:     structs.AllocClientStatusRunning,
		DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: h},
	}
}

// withHealthy returns a copy of d whose group "web" counts n healthy.
func withHealthy(d *structs.Deployment, n int) *structs.Deployment {
	c := d.Copy()
	c.TaskGroups["web"].HealthyAllocs = n
	return c
}

// evalFor is the CreateEval that follows up deployment d1.
var evalFor = CreateEval{TriggeredBy: structs.EvalTriggerDeploymentWatcher, DeploymentID: "d1"}
