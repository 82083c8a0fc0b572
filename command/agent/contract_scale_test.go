package agent

import (
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

func scalableJob(id string, count int, min, max int64) *api.Job {
	job := serviceJob(id, count)
	// No deployment: scaling is refused while one is active, and no client
	// runs these allocations to end it.
	job.Update = &api.UpdateStrategy{MaxParallel: new(0)}
	job.TaskGroups[0].Scaling = &api.ScalingPolicy{Min: new(min), Max: new(max), Enabled: new(true),
		Policy: map[string]any{"cooldown": "1m"}}
	return job
}

func TestContractScale(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	ta.registerNode(t, "node-1")
	ta.registerNode(t, "node-2")

	_, _, err := c.Jobs().Scale("web", "web", new(2), "", false, nil, nil)
	require.ErrorContains(t, err, "404")
	require.ErrorContains(t, err, "not found")
	_, _, err = c.Jobs().Scale("web", "", new(2), "", false, nil, nil)
	require.ErrorContains(t, err, "400")
	require.ErrorContains(t, err, "missing task group name for scaling action")

	reg := registerAndWait(t, c, scalableJob("web", 1, 1, 3))
	require.Equal(t, "complete", reg.Status)
	before, _, err := c.Jobs().Info("web", nil)
	require.NoError(t, err)

	bad := map[string]struct {
		group string
		count int
		want  string
	}{
		"unknown group": {"db", 2, `task group "db" specified for scaling does not exist in job`},
		"above max":     {"web", 4, "group count was greater than scaling policy maximum: 4 > 3"},
		"below min":     {"web", 0, "group count was less than scaling policy minimum: 0 < 1"},
		"negative":      {"web", -1, "scaling action count can't be negative"},
	}
	for name, tc := range bad {
		t.Run(name, func(t *testing.T) {
			_, _, err := c.Jobs().Scale("web", tc.group, new(tc.count), "", false, nil, nil)
			require.ErrorContains(t, err, "400")
			require.ErrorContains(t, err, tc.want)
		})
	}
	status, _, err := c.Jobs().ScaleStatus("web", nil)
	require.NoError(t, err)
	require.Empty(t, status.TaskGroups["web"].Events, "refused actions record nothing")

	// A count change: new version, evaluation, event.
	resp, _, err := c.Jobs().Scale("web", "web", new(3), "load is up", false, map[string]any{"cpu": "91%"}, nil)
	require.NoError(t, err)
	require.NotEmpty(t, resp.EvalID)
	require.Greater(t, resp.JobModifyIndex, *before.JobModifyIndex)
	eval := waitEvalComplete(t, c, resp.EvalID)
	require.Equal(t, "job-scaling", eval.TriggeredBy)
	job, _, err := c.Jobs().Info("web", nil)
	require.NoError(t, err)
	require.Equal(t, 3, *job.TaskGroups[0].Count)
	require.Equal(t, *before.Version+1, *job.Version)
	allocs, _, err := c.Jobs().Allocations("web", false, nil)
	require.NoError(t, err)
	require.Len(t, allocs, 3)

	// An error event changes nothing.
	errResp, _, err := c.Jobs().Scale("web", "web", nil, "metrics unavailable", true, nil, nil)
	require.NoError(t, err)
	require.Empty(t, errResp.EvalID)
	require.Equal(t, resp.JobModifyIndex, errResp.JobModifyIndex)
	_, _, err = c.Jobs().Scale("web", "web", new(2), "both", true, nil, nil)
	require.ErrorContains(t, err, "scaling action should not contain count if error is true")

	status, qm, err := c.Jobs().ScaleStatus("web", nil)
	require.NoError(t, err)
	require.NotZero(t, qm.LastIndex)
	g := status.TaskGroups["web"]
	require.Equal(t, 3, g.Desired)
	require.Equal(t, 3, g.Placed)
	require.Len(t, g.Events, 2)
	require.True(t, g.Events[0].Error, "newest first")
	require.Equal(t, "metrics unavailable", g.Events[0].Message)
	require.Nil(t, g.Events[0].EvalID)
	require.Nil(t, g.Events[0].Count)
	require.Equal(t, int64(3), g.Events[0].PreviousCount)
	require.Equal(t, "load is up", g.Events[1].Message)
	require.Equal(t, int64(1), g.Events[1].PreviousCount)
	require.Equal(t, int64(3), *g.Events[1].Count)
	require.Equal(t, resp.EvalID, *g.Events[1].EvalID)
	require.Equal(t, map[string]any{"cpu": "91%"}, g.Events[1].Meta)
	require.NotZero(t, g.Events[1].Time)

	// Scaling policies come from the groups' scaling blocks.
	policies, _, err := c.Scaling().ListPolicies(nil)
	require.NoError(t, err)
	require.Len(t, policies, 1)
	require.Equal(t, map[string]string{"Namespace": "default", "Job": "web", "Group": "web"}, policies[0].Target)
	require.Equal(t, "horizontal", policies[0].Type)
	p, _, err := c.Scaling().GetPolicy(policies[0].ID, nil)
	require.NoError(t, err)
	require.Equal(t, int64(1), *p.Min)
	require.Equal(t, int64(3), *p.Max)
	require.Equal(t, map[string]any{"cooldown": "1m"}, p.Policy)
	_, _, err = c.Scaling().GetPolicy("nope", nil)
	require.ErrorContains(t, err, "404")
}

func TestContractScalingValidation(t *testing.T) {
	ta := newTestAgent(t, "")
	job := scalableJob("web", 5, 1, 3)
	_, _, err := ta.client.Jobs().Register(job, nil)
	require.ErrorContains(t, err, "Scaling policy invalid: task group count must not be greater than maximum count in scaling policy")
	job = scalableJob("web", 1, 2, 3)
	job.TaskGroups[0].Scaling.Max = nil
	_, _, err = ta.client.Jobs().Register(job, nil)
	require.ErrorContains(t, err, "Scaling policy invalid: maximum count must be specified and non-negative")
	require.ErrorContains(t, err, "Scaling policy invalid: task group count must not be less than minimum count in scaling policy")
	_, _, err = ta.client.Jobs().Info("web", nil)
	require.ErrorContains(t, err, "404")
}

func TestContractScaleEmptyJobID(t *testing.T) {
	ta := newTestAgent(t, "")
	_, _, err := ta.client.Jobs().Scale("", "web", new(1), "", false, nil, nil)
	require.ErrorContains(t, err, "400")
	require.ErrorContains(t, err, "Missing job ID")
}

func TestContractScaleBlockedByActiveDeployment(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	ta.registerNode(t, "node-1")
	job := serviceJob("web", 1)
	job.TaskGroups[0].Scaling = &api.ScalingPolicy{Min: new(int64(1)), Max: new(int64(3)), Enabled: new(true)}
	eval := registerAndWait(t, c, job)
	require.NotEmpty(t, eval.DeploymentID)
	d, _, err := c.Deployments().Info(eval.DeploymentID, nil)
	require.NoError(t, err)
	require.Equal(t, "running", d.Status, "no client runs the allocation: the deployment stays active")
	before, _, err := c.Jobs().Info("web", nil)
	require.NoError(t, err)

	_, _, err = c.Jobs().Scale("web", "web", new(2), "", false, nil, nil)
	require.ErrorContains(t, err, "400")
	require.ErrorContains(t, err, "job scaling blocked due to active deployment")
	after, _, err := c.Jobs().Info("web", nil)
	require.NoError(t, err)
	require.Equal(t, *before.Version, *after.Version, "nothing written")
	require.Equal(t, 1, *after.TaskGroups[0].Count)
	// An event without a count records even during a deployment.
	_, _, err = c.Jobs().Scale("web", "web", nil, "metrics unavailable", true, nil, nil)
	require.NoError(t, err)

	// Once the deployment is over, scaling goes through.
	_, _, err = c.Deployments().Fail(eval.DeploymentID, nil)
	require.NoError(t, err)
	resp, _, err := c.Jobs().Scale("web", "web", new(2), "", false, nil, nil)
	require.NoError(t, err)
	waitEvalComplete(t, c, resp.EvalID)
	after, _, err = c.Jobs().Info("web", nil)
	require.NoError(t, err)
	require.Equal(t, 2, *after.TaskGroups[0].Count)
}

func TestContractRegisterPreserve(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	job := serviceJob("web", 2)
	job.Update = &api.UpdateStrategy{MaxParallel: new(0)}
	job.TaskGroups[0].Tasks[0].Resources = &api.Resources{CPU: new(300), MemoryMB: new(256), MemoryMaxMB: new(512)}
	_, _, err := c.Jobs().Register(job, nil)
	require.NoError(t, err)

	job = serviceJob("web", 5)
	job.Update = &api.UpdateStrategy{MaxParallel: new(0)}
	job.TaskGroups[0].Tasks[0].Resources = &api.Resources{CPU: new(50), MemoryMB: new(64)}
	extra := serviceJob("x", 4).TaskGroups[0]
	extra.Name = new("db")
	job.AddTaskGroup(extra)
	_, _, err = c.Jobs().RegisterOpts(job, &api.RegisterOptions{PreserveCounts: true, PreserveResources: true}, nil)
	require.NoError(t, err)
	got, _, err := c.Jobs().Info("web", nil)
	require.NoError(t, err)
	require.Equal(t, 2, *got.TaskGroups[0].Count, "existing group keeps its count")
	require.Equal(t, 4, *got.TaskGroups[1].Count, "a new group takes its own")
	r := got.TaskGroups[0].Tasks[0].Resources
	require.Equal(t, 300, *r.CPU)
	require.Equal(t, 256, *r.MemoryMB)
	require.Equal(t, 512, *r.MemoryMaxMB)

	// Without the options the new spec wins.
	_, _, err = c.Jobs().RegisterOpts(job, nil, nil)
	require.NoError(t, err)
	got, _, err = c.Jobs().Info("web", nil)
	require.NoError(t, err)
	require.Equal(t, 5, *got.TaskGroups[0].Count)
	require.Equal(t, 50, *got.TaskGroups[0].Tasks[0].Resources.CPU)
}
