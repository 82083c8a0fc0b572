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

func TestAllocStatus(t *testing.T) {
	f := newFakeServer(t)
	seedJob(t, f, "web", "nginx:1")
	node := f.addNode("node-1")
	var a *api.Allocation
	started := time.Date(2026, 11, 29, 22, 31, 5, 0, time.UTC)
	f.update(func(idx uint64) {
		a = f.newAlloc(f.latestJob("web"), "e-1", node.ID, "d-1", idx)
		a.NodeName, a.ClientStatus, a.ClientDescription = "node-1", "running", "Tasks are running"
		a.DeploymentStatus = &api.AllocDeploymentStatus{Healthy: new(true)}
		a.TaskStates = map[string]*api.TaskState{"web": {State: "running", StartedAt: started, Events: []*api.TaskEvent{
			{Type: "Received", Time: started.Add(-2 * time.Second).UnixNano(), DisplayMessage: "Task received by client"},
			{Type: "Started", Time: started.UnixNano(), DisplayMessage: "Task started by client"},
		}}}
	})
	code, out, errOut := runCmd("alloc", "status", a.ID[:8])
	require.Equal(t, 0, code, errOut)
	for _, want := range []string{
		"ID                  = " + limit(a.ID, 8) + "\n",
		"Name                = web.web[0]\n",
		"Node Name           = node-1\n",
		"Job Version         = 0\n",
		"Client Status       = running\nClient Description  = Tasks are running\n",
		"Desired Status      = run\nDesired Description = <none>\n",
		"Deployment ID       = d-1\nDeployment Health   = healthy\n",
		"Task \"web\" is \"running\"\nTask Events:\nStarted At     = " + formatTime(started),
		"Recent Events:\nTime",
		formatTime(started) + "  Started   Task started by client\n",
	} {
		assert.Contains(t, out, want)
	}
	assert.Less(t, strings.Index(out, "Started   "), strings.Index(out, "Received  "), "newest event first")

	code, _, errOut = runCmd("alloc", "status", "ffff")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `No allocation(s) with prefix or id "ffff" found`)

	code, _, errOut = runCmd("alloc", "status", "a")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "at least two characters")
}

func TestNodeStatus(t *testing.T) {
	f := newFakeServer(t)
	code, out, _ := runCmd("node", "status")
	assert.Equal(t, 0, code)
	assert.Equal(t, "No nodes registered\n", out)

	node := f.addNode("node-1")
	code, out, _ = runCmd("node", "status")
	assert.Equal(t, 0, code)
	assert.Equal(t, "ID        Node Pool  DC   Name    Class   Drain  Eligibility  Status\n"+
		limit(node.ID, 8)+"  default    dc1  node-1  <none>  false  eligible     ready\n", out)

	code, out, _ = runCmd("node", "status", node.ID[:4])
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "Name          = node-1\n")
	assert.Contains(t, out, "Driver Status = docker\n")
	assert.Contains(t, out, "\n\nAllocations\nNo allocations placed")
}

func TestEvalStatus(t *testing.T) {
	f := newFakeServer(t)
	var e *api.Evaluation
	f.update(func(idx uint64) {
		e = &api.Evaluation{ID: newID("e"), JobID: "web", Namespace: "default", Type: "system", Priority: 50,
			TriggeredBy: "job-register", Status: "complete", BlockedEval: newID("b"),
			FailedTGAllocs: map[string]*api.AllocationMetric{"web": {NodesEvaluated: 0}},
			CreateIndex:    idx, CreateTime: time.Now().UnixNano(), ModifyTime: time.Now().UnixNano()}
		f.evals[e.ID] = e
	})
	code, out, errOut := runCmd("eval", "status", e.ID[:6])
	require.Equal(t, 0, code, errOut)
	for _, want := range []string{
		"ID                 = " + limit(e.ID, 8) + "\n",
		"Create Time        = 0s ago\n",
		"Status             = complete\nStatus Description = <none>\nType               = system\n" +
			"TriggeredBy        = job-register\nJob ID             = web\nNamespace          = default\n" +
			"Priority           = 50\nPlacement Failures = true\n",
		"==> Failed Placements\nTask Group \"web\" (failed to place 1 allocation):\n  * No nodes were eligible for evaluation",
		fmt.Sprintf("Evaluation %q waiting for additional capacity", limit(e.BlockedEval, 8)),
	} {
		assert.Contains(t, out, want)
	}
	code, _, errOut = runCmd("eval", "status", "ffff")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `No evaluation(s) with prefix or id "ffff" found`)
}

func TestUsageAndVersion(t *testing.T) {
	code, _, errOut := runCmd()
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "Available commands are:")

	code, out, _ := runCmd("-h")
	assert.Equal(t, 0, code)
	for _, c := range []string{"alloc", "deployment", "eval", "job", "node", "version", "agent"} {
		assert.Contains(t, out, "    "+c+" ")
	}

	code, _, errOut = runCmd("bogus")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "Unknown command: drover bogus")
	assert.Contains(t, errOut, "Available commands are:")

	code, out, _ = runCmd("job", "--help")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "Usage: drover job <command> [args]")
	assert.Contains(t, out, "    plan ")

	code, out, _ = runCmd("job", "run", "-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "Usage: drover job run [options] <path>")
	assert.Contains(t, out, "-address=<addr>")

	code, out, _ = runCmd("version")
	assert.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(out, "Drover v"+Version+"\n"), out)
	assert.Contains(t, out, "Nomad HTTP API")
}

func TestGlobalFlagsOverrideEnv(t *testing.T) {
	f := newFakeServer(t)
	t.Setenv("NOMAD_ADDR", "http://127.0.0.1:1") // nothing listens there
	code, _, errOut := runCmd("job", "status", "-address", f.srv.URL, "-namespace", "prod", "-region", "eu", "nope")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `No job(s) with prefix or ID "nope" found`)
	q := f.queries["/v1/jobs"]
	assert.Contains(t, q, "namespace=prod")
	assert.Contains(t, q, "region=eu")
}

func TestAliases(t *testing.T) {
	f := newFakeServer(t)
	code, out, _ := runCmd("run", "-detach", "-json", writeJobFile(t, "web"))
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "Job registration successful")
	assert.Equal(t, 1, f.count("PUT /v1/jobs"))
}
