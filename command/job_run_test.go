package command

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scheduleDeployment makes the fake act like a scheduler: shortly after
// registration the eval completes with one allocation inside a running
// deployment, which then ends with finalStatus.
func scheduleDeployment(f *fakeServer, node *api.Node, finalStatus, finalDesc string, autoRevert bool) chan *api.Deployment {
	created := make(chan *api.Deployment, 1)
	f.onRegister = func(job *api.Job, evalID string) {
		go func() {
			time.Sleep(30 * time.Millisecond)
			var d *api.Deployment
			f.update(func(idx uint64) {
				d = f.newDeployment(job, idx, 1, autoRevert)
				f.newAlloc(job, evalID, node.ID, d.ID, idx)
				e := f.evals[evalID]
				e.Status, e.DeploymentID, e.ModifyIndex = evalStatusComplete, d.ID, idx
			})
			created <- d
			time.Sleep(60 * time.Millisecond)
			f.update(func(idx uint64) {
				d.Status, d.StatusDescription, d.ModifyIndex = finalStatus, finalDesc, idx
				if finalStatus == api.DeploymentStatusSuccessful {
					d.TaskGroups[*job.TaskGroups[0].Name].HealthyAllocs = 1
				}
			})
		}()
	}
	return created
}

func TestJobRun_HappyPath(t *testing.T) {
	fastTimers(t)
	f := newFakeServer(t)
	node := f.addNode("node-1")
	created := scheduleDeployment(f, node, api.DeploymentStatusSuccessful, "Deployment completed successfully", false)

	code, out, errOut := runCmd("job", "run", "-json", writeJobFile(t, "web"))
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)

	d := <-created
	var allocID string
	for id := range f.allocs {
		allocID = id
	}
	for _, want := range []string{
		`: Monitoring evaluation "e`,
		`: Evaluation triggered by job "web"`,
		fmt.Sprintf(`: Evaluation within deployment: %q`, limit(d.ID, 8)),
		fmt.Sprintf(`: Allocation %q created: node %q, group "web"`, limit(allocID, 8), limit(node.ID, 8)),
		`: Evaluation status changed: "pending" -> "complete"`,
		`finished with status "complete"`,
		fmt.Sprintf(`: Monitoring deployment %q`, limit(d.ID, 8)),
		"Job ID      = web",
		"Description = Deployment completed successfully",
		"Task Group  Desired  Placed  Healthy  Unhealthy  Progress Deadline",
		fmt.Sprintf(`: Deployment %q successful`, limit(d.ID, 8)),
	} {
		assert.Contains(t, out, want)
	}
	assert.True(t, strings.HasPrefix(out, "==> "), "first line is a header: %q", out)

	sub := f.lastRegister.Submission
	require.NotNil(t, sub)
	assert.Equal(t, "json", sub.Format)
	assert.Contains(t, sub.Source, `"ID":"web"`)
}

func TestJobRun_DeploymentFailedExits1(t *testing.T) {
	fastTimers(t)
	f := newFakeServer(t)
	node := f.addNode("node-1")
	scheduleDeployment(f, node, api.DeploymentStatusFailed, "Failed due to unhealthy allocations", false)

	code, out, _ := runCmd("job", "run", "-json", writeJobFile(t, "web"))
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "Status      = failed")
	assert.Contains(t, out, `failed`)
}

func TestJobRun_FollowsAutoRevertDeployment(t *testing.T) {
	fastTimers(t)
	f := newFakeServer(t)
	node := f.addNode("node-1")
	created := scheduleDeployment(f, node, api.DeploymentStatusFailed,
		"Failed due to unhealthy allocations - rolling back to job version 0", true)
	var rollback *api.Deployment
	go func() {
		failed := <-created
		time.Sleep(150 * time.Millisecond)
		f.update(func(idx uint64) {
			job := f.latestJob("web")
			rollback = f.newDeployment(job, idx, 1, true)
			rollback.JobVersion = failed.JobVersion + 1
		})
		time.Sleep(50 * time.Millisecond)
		f.update(func(idx uint64) {
			rollback.Status, rollback.StatusDescription, rollback.ModifyIndex =
				api.DeploymentStatusSuccessful, "Deployment completed successfully", idx
		})
	}()

	code, out, _ := runCmd("job", "run", "-json", writeJobFile(t, "web"))
	assert.Equal(t, 1, code, "the failed deployment decides the exit code:\n%s", out)
	require.NotNil(t, rollback)
	assert.Contains(t, out, "was auto-reverted; monitoring deployment "+fmt.Sprintf("%q", limit(rollback.ID, 8)))
	assert.Contains(t, out, fmt.Sprintf(`Deployment %q successful`, limit(rollback.ID, 8)))
	assert.Contains(t, out, "Auto Revert")
}

func TestJobRun_PlacementFailuresExit2(t *testing.T) {
	fastTimers(t)
	f := newFakeServer(t)
	f.onRegister = func(job *api.Job, evalID string) {
		f.update(func(idx uint64) {
			e := f.evals[evalID]
			e.Status, e.BlockedEval = evalStatusComplete, "blocked-eval-0000"
			e.FailedTGAllocs = map[string]*api.AllocationMetric{"web": {
				NodesEvaluated: 2, NodesExhausted: 1, CoalescedFailures: 1,
				DimensionExhausted: map[string]int{"memory": 1},
				ConstraintFiltered: map[string]int{"${attr.kernel.name} = linux": 1},
			}}
		})
	}
	code, out, _ := runCmd("job", "run", "-json", writeJobFile(t, "web"))
	assert.Equal(t, 2, code)
	assert.Contains(t, out, `finished with status "complete" but failed to place all allocations:`)
	assert.Contains(t, out, `Task Group "web" (failed to place 2 allocations):`)
	assert.Contains(t, out, `      * Constraint "${attr.kernel.name} = linux": 1 node excluded by filter`)
	assert.Contains(t, out, `      * Resources exhausted on 1 node`)
	assert.Contains(t, out, `      * Dimension "memory" exhausted on 1 node`)
	assert.Contains(t, out, `Evaluation "blocked-" waiting for additional capacity to place remainder`)
}

func TestJobRun_Detach(t *testing.T) {
	f := newFakeServer(t)
	code, out, _ := runCmd("job", "run", "-detach", "-json", writeJobFile(t, "web"))
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "Job registration successful\nEvaluation ID: e")
	for key := range f.requests {
		assert.NotContains(t, key, "/v1/evaluation/", "no monitoring with -detach")
	}
}

func TestJobRun_OutputPrintsWrappedJob(t *testing.T) {
	f := newFakeServer(t)
	code, out, _ := runCmd("job", "run", "-output", "-json", writeJobFile(t, "web"))
	assert.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(out, "{\n    \"Job\": {\n"), out)
	assert.Contains(t, out, `"ID": "web"`)
	assert.Zero(t, f.count("PUT /v1/jobs"))
}

func TestJobRun_CheckIndexConflict(t *testing.T) {
	f := newFakeServer(t)
	f.registerErr = "Enforcing job modify index 5: job exists with conflicting job modify index: 6"
	code, _, errOut := runCmd("job", "run", "-check-index", "5", "-json", writeJobFile(t, "web"))
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "Enforcing job modify index 5: job exists with conflicting job modify index: 6\nJob not updated")
	assert.True(t, f.lastRegister == nil || f.lastRegister.EnforceIndex)
}

func TestJobRun_ErrorsExit1(t *testing.T) {
	newFakeServer(t)
	code, _, errOut := runCmd("job", "run", "-json", filepath.Join(t.TempDir(), "missing.json"))
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "Error getting job struct")

	code, _, errOut = runCmd("job", "run")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "This command takes one argument: <path>")
}

func TestJobRun_HCLSubmission(t *testing.T) {
	f := newFakeServer(t)
	path := filepath.Join(t.TempDir(), "web.nomad.hcl")
	src := `variable "image" {
  type = string
}

job "web" {
  type = "system"
  group "web" {
    task "web" {
      driver = "docker"
      config {
        image = var.image
      }
    }
  }
}
`
	require.NoError(t, os.WriteFile(path, []byte(src), 0o600))
	code, out, errOut := runCmd("job", "run", "-detach", "-var", "image=nginx:2", path)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	sub := f.lastRegister.Submission
	assert.Equal(t, "hcl2", sub.Format)
	assert.Equal(t, src, sub.Source)
	assert.Equal(t, map[string]string{"image": "nginx:2"}, sub.VariableFlags)
	assert.Equal(t, "nginx:2", f.lastRegister.Job.TaskGroups[0].Tasks[0].Config["image"])
}
