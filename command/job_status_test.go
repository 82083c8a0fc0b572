package command

import (
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seedJob registers job id in the fake with one version per image.
func seedJob(t *testing.T, f *fakeServer, id string, images ...string) {
	t.Helper()
	for i, img := range images {
		f.update(func(idx uint64) {
			tg := &api.TaskGroup{Name: new(id), Tasks: []*api.Task{{Name: id, Driver: "docker",
				Config: map[string]any{"image": img}}}}
			job := &api.Job{ID: new(id), Type: new("system"), Datacenters: []string{"dc1"}, NodePool: new("default"),
				TaskGroups: []*api.TaskGroup{tg}}
			job.Canonicalize()
			job.Version, job.Status = new(uint64(i)), new("running")
			job.Stable = new(i == 0)
			job.SubmitTime = new(time.Date(2026, 11, 29, 22, 31, 5, 0, time.UTC).UnixNano())
			f.jobs[id] = append(f.jobs[id], job)
		})
	}
}

func TestJobStatus_UnknownJob(t *testing.T) {
	newFakeServer(t)
	code, _, errOut := runCmd("job", "status", "nope")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `No job(s) with prefix or ID "nope" found`)
}

func TestJobStatus_List(t *testing.T) {
	f := newFakeServer(t)
	code, out, _ := runCmd("job", "status")
	assert.Equal(t, 0, code)
	assert.Equal(t, "No running jobs\n", out)

	seedJob(t, f, "web", "nginx:1")
	code, out, _ = runCmd("job", "status")
	assert.Equal(t, 0, code)
	want := "ID   Type    Priority  Status   Submit Date\nweb  system  50        running  " +
		formatTime(time.Date(2026, 11, 29, 22, 31, 5, 0, time.UTC)) + "\n"
	assert.Equal(t, want, out)
}

func TestJobStatus_AmbiguousPrefix(t *testing.T) {
	f := newFakeServer(t)
	seedJob(t, f, "web-a", "nginx:1")
	seedJob(t, f, "web-b", "nginx:1")
	code, _, errOut := runCmd("job", "status", "web")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "Prefix matched multiple jobs")
	assert.Contains(t, errOut, "web-a")
	assert.Contains(t, errOut, "web-b")

	code, out, _ := runCmd("job", "status", "web-a")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "ID            = web-a")
}

func TestJobStatus_Single(t *testing.T) {
	f := newFakeServer(t)
	seedJob(t, f, "web", "nginx:1")
	node := f.addNode("node-1")
	var d *api.Deployment
	f.update(func(idx uint64) {
		job := f.latestJob("web")
		d = f.newDeployment(job, idx, 1, false)
		d.Status, d.StatusDescription = api.DeploymentStatusSuccessful, "Deployment completed successfully"
		a := f.newAlloc(job, "e-1", node.ID, d.ID, idx)
		a.ClientStatus = "running"
	})
	code, out, errOut := runCmd("job", "status", "web")
	require.Equal(t, 0, code, errOut)
	for _, want := range []string{
		"ID            = web\nName          = web\nSubmit Date   = ",
		"Type          = system\nPriority      = 50\nDatacenters   = dc1\nNamespace     = default\n" +
			"Node Pool     = default\nStatus        = running\nPeriodic      = false\nParameterized = false\n",
		"Summary\nTask Group  Queued  Starting  Running  Failed  Complete  Lost  Unknown\n" +
			"web         0       0         1        0       0         0     0\n",
		"Latest Deployment\nID          = " + limit(d.ID, 8) + "\n",
		"Status      = successful\nDescription = Deployment completed successfully\n\nDeployed\n",
		"Allocations\nID        Node ID   Task Group  Version  Desired  Status   Created  Modified\n",
		"web         0        run      running  0s ago   0s ago",
	} {
		assert.Contains(t, out, want)
	}

	code, out, _ = runCmd("job", "status", "-short", "web")
	assert.Equal(t, 0, code)
	assert.NotContains(t, out, "Allocations")
}

func TestJobHistoryAndInspect(t *testing.T) {
	f := newFakeServer(t)
	seedJob(t, f, "web", "nginx:1", "nginx:2")

	code, out, _ := runCmd("job", "history", "web")
	assert.Equal(t, 0, code)
	assert.Regexp(t, `^Version     = 1\nStable      = false\nSubmit Date = .*\n\nVersion     = 0\nStable      = true\n`, out)

	code, out, _ = runCmd("job", "history", "-version", "0", "web")
	assert.Equal(t, 0, code)
	assert.NotContains(t, out, "Version     = 1")

	code, out, _ = runCmd("job", "inspect", "web")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "{\n    \"Job\": {\n")
	assert.Contains(t, out, `"image": "nginx:2"`)

	code, out, _ = runCmd("job", "inspect", "-version", "0", "web")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, `"image": "nginx:1"`)

	code, _, errOut := runCmd("job", "inspect", "-version", "9", "web")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "No job with version 9 found")
}

func TestJobRevert(t *testing.T) {
	fastTimers(t)
	f := newFakeServer(t)
	seedJob(t, f, "web", "nginx:1", "nginx:2")

	code, out, _ := runCmd("job", "revert", "web", "0")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, `finished with status "complete"`)

	f.revertNoEval = true
	code, out, errOut := runCmd("job", "revert", "web", "0")
	assert.Equal(t, 0, code)
	assert.Empty(t, out+errOut, "an empty EvalID exits silently")
}

func TestJobStop(t *testing.T) {
	fastTimers(t)
	f := newFakeServer(t)
	seedJob(t, f, "web", "nginx:1")

	code, out, _ := runCmd("job", "stop", "-detach", "web")
	assert.Equal(t, 0, code)
	assert.Regexp(t, `^d[0-9a-f-]{35}\n$`, out)

	code, out, _ = runCmd("job", "stop", "web")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, `Evaluation triggered by job "web"`)
	assert.Contains(t, out, `finished with status "complete"`)
	assert.Contains(t, f.queries["/v1/job/web"], "purge=false")

	// A prefix needs confirmation; an empty answer cancels.
	code, out, _ = runCmd("job", "stop", "we")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, `Are you sure you want to stop job "web"? [y/N] Cancelling job stop`)
}

func TestJobValidate(t *testing.T) {
	f := newFakeServer(t)
	f.validateResp = &api.JobValidateResponse{DriverConfigValidated: true}
	code, out, _ := runCmd("job", "validate", "-json", writeJobFile(t, "web"))
	assert.Equal(t, 0, code)
	assert.Equal(t, "Job validation successful\n", out)

	f.validateResp = &api.JobValidateResponse{ValidationErrors: []string{"group \"web\": canary must be 0..100"}}
	code, _, errOut := runCmd("job", "validate", "-json", writeJobFile(t, "web"))
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "Job validation errors:\n* group \"web\": canary must be 0..100")
}
