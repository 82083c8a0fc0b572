package agent

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// testJob is a system job with one raw_exec task and an update block.
func testJob(id string) *api.Job {
	job := api.NewSystemJob(id, id, "global", 50)
	job.Datacenters = []string{"dc1"}
	task := api.NewTask("server", "raw_exec").SetConfig("command", "/bin/sleep").SetConfig("args", []string{"3600"})
	task.Resources = &api.Resources{CPU: new(100), MemoryMB: new(64)}
	tg := api.NewTaskGroup("web", 1).AddTask(task)
	tg.Update = &api.UpdateStrategy{MaxParallel: new(1), MinHealthyTime: new(time.Second),
		HealthyDeadline: new(time.Minute), ProgressDeadline: new(10 * time.Minute), AutoRevert: new(true)}
	job.AddTaskGroup(tg)
	return job
}

// waitEvalComplete waits until the evaluation finished and returns it.
func waitEvalComplete(t *testing.T, c *api.Client, evalID string) *api.Evaluation {
	t.Helper()
	var eval *api.Evaluation
	require.Eventually(t, func() bool {
		e, _, err := c.Evaluations().Info(evalID, nil)
		if err != nil {
			return false
		}
		eval = e
		return e.Status == "complete" || e.Status == "failed"
	}, 10*time.Second, 20*time.Millisecond)
	return eval
}

func requireStatus(t *testing.T, err error, code int, contains string) {
	t.Helper()
	var ure api.UnexpectedResponseError
	require.Error(t, err)
	require.True(t, errors.As(err, &ure), "want UnexpectedResponseError, got %T: %v", err, err)
	require.Equal(t, code, ure.StatusCode(), ure.Body())
	require.Contains(t, ure.Body(), contains)
}

func TestContractJobRegisterAndRead(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	n1, n2 := ta.registerNode(t, "node-1"), ta.registerNode(t, "node-2")

	resp, wm, err := c.Jobs().Register(testJob("web"), nil)
	require.NoError(t, err)
	require.NotEmpty(t, resp.EvalID)
	require.NotZero(t, wm.LastIndex)
	eval := waitEvalComplete(t, c, resp.EvalID)
	require.Equal(t, "complete", eval.Status)
	require.Equal(t, "job-register", eval.TriggeredBy)
	require.NotEmpty(t, eval.DeploymentID, "an eval that creates a deployment names it (job run follows it)")

	job, qm, err := c.Jobs().Info("web", nil)
	require.NoError(t, err)
	require.Equal(t, "system", *job.Type)
	require.Equal(t, "default", *job.Namespace)
	require.Equal(t, uint64(0), *job.Version)
	require.NotZero(t, *job.SubmitTime)
	require.NotZero(t, qm.LastIndex)
	require.True(t, qm.KnownLeader)
	require.Equal(t, 1, *job.TaskGroups[0].Update.MaxParallel)

	stubs, _, err := c.Jobs().List(nil)
	require.NoError(t, err)
	require.Len(t, stubs, 1)
	require.NotNil(t, stubs[0].JobSummary, "the CLI dereferences JobSummary")
	require.Equal(t, "running", stubs[0].Status)

	allocs, _, err := c.Jobs().Allocations("web", false, nil)
	require.NoError(t, err)
	require.Len(t, allocs, 2)
	nodes := []string{allocs[0].NodeID, allocs[1].NodeID}
	require.ElementsMatch(t, []string{n1, n2}, nodes)

	sum, _, err := c.Jobs().Summary("web", nil)
	require.NoError(t, err)
	require.Equal(t, 2, sum.Summary["web"].Starting)

	evals, _, err := c.Jobs().Evaluations("web", nil)
	require.NoError(t, err)
	require.Len(t, evals, 1)

	alloc, _, err := c.Allocations().Info(allocs[0].ID, nil)
	require.NoError(t, err)
	require.NotNil(t, alloc.Job, "alloc status needs the embedded job")
	require.NotNil(t, alloc.Metrics)
	require.Equal(t, uint64(0), *alloc.Job.Version)

	evalAllocs, _, err := c.Evaluations().Allocations(resp.EvalID, nil)
	require.NoError(t, err)
	require.Len(t, evalAllocs, 2)

	d, _, err := c.Jobs().LatestDeployment("web", nil)
	require.NoError(t, err)
	require.NotNil(t, d)
	require.Equal(t, "running", d.Status)
	require.Equal(t, "Deployment is running", d.StatusDescription)
	require.Equal(t, 2, d.TaskGroups["web"].DesiredTotal)
}

func TestContractJobNotFoundAndBadInput(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client

	_, _, err := c.Jobs().Info("nope", nil)
	requireStatus(t, err, http.StatusNotFound, "job not found")
	// Stopping a job that does not exist is no error (see
	// TestContractJobDeregisterOptions).

	// No deployment yet: JSON null with 200, never 404.
	d, _, err := c.Jobs().LatestDeployment("nope", nil)
	require.NoError(t, err)
	require.Nil(t, d)

	bad := testJob("bad job")
	bad.Priority = new(500)
	bad.TaskGroups[0].Tasks[0].Driver = ""
	before := ta.Server().State().LatestIndex()
	_, _, err = c.Jobs().Register(bad, nil)
	requireStatus(t, err, http.StatusBadRequest, "priority must be between 1 and 100")
	body := err.(api.UnexpectedResponseError).Body()
	require.Contains(t, strings.ToLower(body), "driver", "every problem is listed")
	require.Contains(t, body, "space", "the ID problem is listed too")
	require.Equal(t, before, ta.Server().State().LatestIndex(), "a refused job writes nothing")

	odd := testJob("odd")
	odd.Type = new("daemon")
	_, _, err = c.Jobs().Register(odd, nil)
	requireStatus(t, err, http.StatusBadRequest, `Invalid job type: "daemon"`)

	_, err = c.Raw().Response("/v1/jobs?index=abc", nil)
	requireStatus(t, err, http.StatusBadRequest, "Invalid index")
	_, err = c.Raw().Response("/v1/jobs?index=1&wait=xyz", nil)
	requireStatus(t, err, http.StatusBadRequest, "Invalid wait time")
}

func TestContractBlockingQuery(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	_, qm, err := c.Jobs().List(nil)
	require.NoError(t, err)

	// Returns on timeout with the same index and 200.
	start := time.Now()
	_, qm2, err := c.Jobs().List(&api.QueryOptions{WaitIndex: qm.LastIndex, WaitTime: 300 * time.Millisecond})
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	require.Equal(t, qm.LastIndex, qm2.LastIndex)

	// Returns on change, well before the wait elapses.
	go func() {
		time.Sleep(200 * time.Millisecond)
		_, _, _ = c.Jobs().Register(testJob("later"), nil)
	}()
	start = time.Now()
	jobs, qm3, err := c.Jobs().List(&api.QueryOptions{WaitIndex: qm.LastIndex, WaitTime: 20 * time.Second})
	require.NoError(t, err)
	require.Less(t, time.Since(start), 10*time.Second)
	require.Greater(t, qm3.LastIndex, qm.LastIndex)
	require.Len(t, jobs, 1)

	// An index far in the future answers at once instead of hanging.
	start = time.Now()
	_, _, err = c.Jobs().List(&api.QueryOptions{WaitIndex: 1 << 40, WaitTime: 20 * time.Second})
	require.NoError(t, err)
	require.Less(t, time.Since(start), 5*time.Second)
}

// TestContractJobRefusalsAndValidationInOneAnswer: a job with a block
// Drover refuses and other problems gets one 400 listing all of them, each
// in its own words, from registration, plan and validate alike.
func TestContractJobRefusalsAndValidationInOneAnswer(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	job := testJob("both")
	job.Priority = new(500)
	task := job.TaskGroups[0].Tasks[0]
	task.Vault = &api.Vault{Role: "web"}
	task.Driver = "docker"
	task.Config = map[string]any{"image": "redis:7", "pin_digest": false, "ipv4_address": "10.0.0.9"}
	want := []string{
		`task "server": vault: this cluster has no Vault integration`,
		"priority must be between 1 and 100",
		"ipv4_address is not supported by Drover's docker driver yet",
	}
	_, _, err := c.Jobs().Register(job, nil)
	for _, w := range want {
		requireStatus(t, err, http.StatusBadRequest, w)
	}
	_, _, err = c.Jobs().Plan(job, false, nil)
	for _, w := range want {
		requireStatus(t, err, http.StatusBadRequest, w)
	}
	res, _, err := c.Jobs().Validate(job, nil)
	require.NoError(t, err)
	for _, w := range want {
		require.Contains(t, res.Error, w)
	}
	require.Contains(t, res.Error, "3 errors occurred", "each problem once")
}
