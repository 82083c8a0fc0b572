package command

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seedDeployment stores a running deployment of job "web".
func seedDeployment(t *testing.T, f *fakeServer) *api.Deployment {
	t.Helper()
	seedJob(t, f, "web", "nginx:1")
	var d *api.Deployment
	f.update(func(idx uint64) { d = f.newDeployment(f.latestJob("web"), idx, 3, true) })
	return d
}

func TestDeploymentStatus_PrefixWithoutHyphens(t *testing.T) {
	f := newFakeServer(t)
	d := seedDeployment(t, f)
	prefix := d.ID[:13] // "d0000012-0012": has a hyphen and 12 hex digits
	require.Contains(t, prefix, "-")

	code, out, errOut := runCmd("deployment", "status", prefix)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "prefix="+strings.ReplaceAll(prefix, "-", ""), f.queries["/v1/deployments"])
	want := fmt.Sprintf("ID          = %s\nJob ID      = web\nJob Version = 0\nStatus      = running\n"+
		"Description = Deployment is running\n\nDeployed\n"+
		"Task Group  Auto Revert  Desired  Placed  Healthy  Unhealthy  Progress Deadline\n"+
		"web         true         3        0       0        0          N/A\n", limit(d.ID, 8))
	assert.Equal(t, want, out)

	// An odd number of hex digits is trimmed to whole bytes.
	code, _, _ = runCmd("deployment", "status", d.ID[:3])
	assert.Equal(t, 0, code)
	assert.Equal(t, "prefix="+d.ID[:2], f.queries["/v1/deployments"])

	code, _, errOut = runCmd("deployment", "status", "ffff")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `No deployment(s) with prefix or id "ffff" found`)
}

func TestDeploymentList(t *testing.T) {
	f := newFakeServer(t)
	code, out, _ := runCmd("deployment", "list")
	assert.Equal(t, 0, code)
	assert.Equal(t, "No deployments found\n", out)

	d := seedDeployment(t, f)
	code, out, _ = runCmd("deployment", "list")
	assert.Equal(t, 0, code)
	assert.Equal(t, "ID        Job ID  Job Version  Status   Description\n"+
		limit(d.ID, 8)+"  web     0            running  Deployment is running\n", out)
}

func TestDeploymentFail_PrintsAutoRevert(t *testing.T) {
	fastTimers(t)
	f := newFakeServer(t)
	d := seedDeployment(t, f)
	evalID := f.addEval("web", "", "deployment-watcher", evalStatusComplete)
	f.failResp = &api.DeploymentUpdateResponse{EvalID: evalID, RevertedJobVersion: new(uint64(3))}

	code, out, _ := runCmd("deployment", "fail", d.ID)
	assert.Equal(t, 0, code, out)
	assert.True(t, strings.HasPrefix(out, fmt.Sprintf("Deployment %q failed\nAuto-reverted to job version 3\n", d.ID)), out)
	assert.Contains(t, out, fmt.Sprintf("Monitoring evaluation %q", limit(evalID, 8)))

	f.failResp = &api.DeploymentUpdateResponse{}
	code, out, _ = runCmd("deployment", "fail", d.ID)
	assert.Equal(t, 0, code)
	assert.Equal(t, fmt.Sprintf("Deployment %q failed\n", d.ID), out)
}

func TestDeploymentPauseResumePromote(t *testing.T) {
	fastTimers(t)
	f := newFakeServer(t)
	d := seedDeployment(t, f)

	code, out, _ := runCmd("deployment", "pause", d.ID)
	assert.Equal(t, 0, code)
	assert.Equal(t, fmt.Sprintf("Deployment %q paused\n", d.ID), out)

	code, out, _ = runCmd("deployment", "resume", "-detach", d.ID)
	assert.Equal(t, 0, code)
	assert.Regexp(t, fmt.Sprintf(`^Deployment %q resumed\ne[0-9a-f-]{35}\n$`, d.ID), out)

	// The promote eval carries the deployment ID, so the monitor follows
	// the deployment; finish it so the command returns.
	go func() {
		time.Sleep(50 * time.Millisecond)
		f.update(func(idx uint64) { d.Status, d.ModifyIndex = api.DeploymentStatusSuccessful, idx })
	}()
	code, out, _ = runCmd("deployment", "promote", "-group", "web", d.ID)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, fmt.Sprintf("Deployment %q successful", limit(d.ID, 8)))
	assert.Equal(t, 1, f.count("PUT /v1/deployment/promote/"+d.ID))
}

func TestDeploymentStatusMonitor_ExitsZeroOnFailure(t *testing.T) {
	fastTimers(t)
	f := newFakeServer(t)
	d := seedDeployment(t, f)
	go func() {
		time.Sleep(50 * time.Millisecond)
		f.update(func(idx uint64) {
			d.Status, d.StatusDescription, d.ModifyIndex = api.DeploymentStatusFailed, "Deployment marked as failed", idx
		})
	}()
	code, out, _ := runCmd("deployment", "status", "-monitor", d.ID)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, fmt.Sprintf("Deployment %q failed", limit(d.ID, 8)))
}

// The monitor must block on the deployment's index, not poll in a loop.
func TestDeploymentMonitor_NoHotLoop(t *testing.T) {
	fastTimers(t)
	f := newFakeServer(t)
	d := seedDeployment(t, f)
	go func() {
		time.Sleep(1500 * time.Millisecond)
		f.update(func(idx uint64) { d.Status, d.ModifyIndex = api.DeploymentStatusSuccessful, idx })
	}()
	code, out, _ := runCmd("deployment", "status", "-monitor", "-wait", "5s", d.ID)
	assert.Equal(t, 0, code)
	reads := f.count("GET /v1/deployment/" + d.ID)
	assert.LessOrEqual(t, reads, 3, "deployment GETs in 1.5s")
	assert.Contains(t, f.queries["/v1/deployment/"+d.ID], "index=")
	assert.Equal(t, 2, strings.Count(out, "Job ID      = web"), "one block per change:\n%s", out)
}

// Even a server that ignores `index` must not make the monitor spin.
func TestDeploymentMonitor_BrokenServerNoHotLoop(t *testing.T) {
	fastTimers(t) // deploymentMinPoll = 200ms
	f := newFakeServer(t)
	f.ignoreIndex = true
	d := seedDeployment(t, f)
	go func() {
		time.Sleep(time.Second)
		f.update(func(idx uint64) { d.Status, d.ModifyIndex = api.DeploymentStatusSuccessful, idx })
	}()
	code, out, _ := runCmd("deployment", "status", "-monitor", d.ID)
	assert.Equal(t, 0, code)
	reads := f.count("GET /v1/deployment/" + d.ID)
	assert.LessOrEqual(t, reads, 10, "deployment GETs in 1s at one per 200ms (a hot loop makes thousands)")
	assert.Equal(t, 2, strings.Count(out, "Job ID      = web"), "unchanged blocks are not reprinted:\n%s", out)
}

func TestFormatDeploymentGroups_Columns(t *testing.T) {
	d := &api.Deployment{TaskGroups: map[string]*api.DeploymentState{
		"web": {DesiredTotal: 4, DesiredCanaries: 1, PlacedAllocs: 1, Promoted: false},
		"api": {DesiredTotal: 2, PlacedAllocs: 2, HealthyAllocs: 2},
	}}
	want := "Task Group  Promoted  Desired  Canaries  Placed  Healthy  Unhealthy\n" +
		"api         false     2        0         2       2        0\n" +
		"web         false     4        1         1       0        0"
	assert.Equal(t, want, formatDeploymentGroups(d))
}

func TestDeploymentRenderer_TTYRedrawsInPlace(t *testing.T) {
	var buf strings.Builder
	r := &deploymentRenderer{out: &buf, tty: true}
	r.draw("a\nb")
	assert.NotContains(t, buf.String(), "\x1b[")
	r.draw("c\nd")
	// timestamp + 2 lines + trailing blank line = 4 lines to erase
	assert.Contains(t, buf.String(), "\x1b[4A\x1b[J")

	buf.Reset()
	plain := &deploymentRenderer{out: &buf}
	plain.draw("a")
	plain.draw("b")
	assert.NotContains(t, buf.String(), "\x1b[")
}
