package agent

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// registerAndWait registers job and waits for its evaluation.
func registerAndWait(t *testing.T, c *api.Client, job *api.Job) *api.Evaluation {
	t.Helper()
	resp, _, err := c.Jobs().Register(job, nil)
	require.NoError(t, err)
	return waitEvalComplete(t, c, resp.EvalID)
}

func TestContractVersionsRevertStop(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	ta.registerNode(t, "node-1")
	registerAndWait(t, c, testJob("web"))

	v1 := testJob("web")
	v1.TaskGroups[0].Tasks[0].Env = map[string]string{"VERSION": "1"}
	registerAndWait(t, c, v1)

	// Registering the same spec again keeps the version.
	registerAndWait(t, c, v1)
	versions, diffs, _, err := c.Jobs().Versions("web", true, nil)
	require.NoError(t, err)
	require.Len(t, versions, 2)
	require.Equal(t, uint64(1), *versions[0].Version, "newest first")
	require.Len(t, diffs, 1)
	require.Equal(t, "Edited", diffs[0].Type)

	// The previous version's allocation was replaced destructively.
	allocs, _, err := c.Jobs().Allocations("web", true, nil)
	require.NoError(t, err)
	require.Len(t, allocs, 2)

	_, _, err = c.Jobs().Revert("web", 1, nil, nil, "", "")
	requireStatus(t, err, http.StatusBadRequest, "can't revert to current version")
	_, _, err = c.Jobs().Revert("web", 7, nil, nil, "", "")
	requireStatus(t, err, http.StatusNotFound, "version 7 not found")
	resp, _, err := c.Jobs().Revert("web", 0, nil, nil, "", "")
	require.NoError(t, err)
	waitEvalComplete(t, c, resp.EvalID)
	job, _, err := c.Jobs().Info("web", nil)
	require.NoError(t, err)
	require.Equal(t, uint64(2), *job.Version)
	require.Empty(t, job.TaskGroups[0].Tasks[0].Env["VERSION"], "version 2 is a copy of version 0")

	_, _, err = c.Jobs().Stable("web", 2, true, nil)
	require.NoError(t, err)
	versions, _, _, err = c.Jobs().Versions("web", false, nil)
	require.NoError(t, err)
	require.True(t, *versions[0].Stable)

	stopEval, _, err := c.Jobs().Deregister("web", false, nil)
	require.NoError(t, err)
	waitEvalComplete(t, c, stopEval)
	job, _, err = c.Jobs().Info("web", nil)
	require.NoError(t, err)
	require.True(t, *job.Stop)
	live, _, err := c.Jobs().Allocations("web", false, nil)
	require.NoError(t, err)
	for _, a := range live {
		require.Equal(t, "stop", a.DesiredStatus)
	}

	_, _, err = c.Jobs().Deregister("web", true, nil)
	require.NoError(t, err)
	_, _, err = c.Jobs().Info("web", nil)
	requireStatus(t, err, http.StatusNotFound, "job not found")
}

func TestContractPlanAndValidate(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	ta.registerNode(t, "node-1")
	ta.registerNode(t, "node-2")

	plan, _, err := c.Jobs().Plan(testJob("web"), true, nil)
	require.NoError(t, err)
	require.Equal(t, "Added", plan.Diff.Type)
	require.NotNil(t, plan.Annotations)
	require.Equal(t, uint64(2), plan.Annotations.DesiredTGUpdates["web"].Place)
	require.Zero(t, plan.JobModifyIndex)
	_, _, err = c.Jobs().Info("web", nil)
	requireStatus(t, err, http.StatusNotFound, "job not found") // a plan writes nothing

	registerAndWait(t, c, testJob("web"))
	plan, _, err = c.Jobs().Plan(testJob("web"), true, nil)
	require.NoError(t, err)
	require.Equal(t, "None", plan.Diff.Type)
	require.NotZero(t, plan.JobModifyIndex)

	changed := testJob("web")
	changed.TaskGroups[0].Tasks[0].Config["args"] = []string{"7200"}
	plan, _, err = c.Jobs().Plan(changed, true, nil)
	require.NoError(t, err)
	require.Equal(t, "Edited", plan.Diff.Type)
	// max_parallel = 1 and no allocation is healthy yet: one update goes out.
	require.Equal(t, uint64(1), plan.Annotations.DesiredTGUpdates["web"].DestructiveUpdate)

	ok, _, err := c.Jobs().Validate(testJob("web"), nil)
	require.NoError(t, err)
	require.Empty(t, ok.Error)
	bad := testJob("web")
	bad.TaskGroups[0].Update.Canary = new(150)
	res, _, err := c.Jobs().Validate(bad, nil)
	require.NoError(t, err)
	require.Contains(t, res.Error, "canary")

	// check-index: the CLI reformats this exact wording.
	_, _, err = c.Jobs().EnforceRegister(testJob("web"), 1, nil)
	requireStatus(t, err, http.StatusBadRequest, "Enforcing job modify index 1")
}

func TestContractDeploymentActions(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	ta.registerNode(t, "node-1")
	ta.registerNode(t, "node-2") // one healthy allocation must not complete the deployment
	eval := registerAndWait(t, c, testJob("web"))
	dID := eval.DeploymentID
	require.NotEmpty(t, dID)

	list, _, err := c.Deployments().List(nil)
	require.NoError(t, err)
	require.Len(t, list, 1)
	// The CLI strips hyphens from deployment prefixes.
	byPrefix, _, err := c.Deployments().PrefixList(strings.ReplaceAll(dID[:13], "-", ""))
	require.NoError(t, err)
	require.Len(t, byPrefix, 1)

	_, _, err = c.Deployments().PromoteAll(dID, nil)
	requireStatus(t, err, http.StatusBadRequest, "No canaries to promote")

	_, _, err = c.Deployments().Pause(dID, true, nil)
	require.NoError(t, err)
	d, _, err := c.Deployments().Info(dID, nil)
	require.NoError(t, err)
	require.Equal(t, "paused", d.Status)
	require.Equal(t, "Deployment is paused", d.StatusDescription)

	resumed, _, err := c.Deployments().Pause(dID, false, nil)
	require.NoError(t, err)
	require.NotEmpty(t, resumed.EvalID, "resume creates an evaluation the CLI monitors")

	allocs, _, err := c.Deployments().Allocations(dID, nil)
	require.NoError(t, err)
	require.Len(t, allocs, 2)
	_, _, err = c.Deployments().SetAllocHealth(dID, []string{allocs[0].ID}, nil, nil)
	require.NoError(t, err)
	a, _, err := c.Allocations().Info(allocs[0].ID, nil)
	require.NoError(t, err)
	require.NotNil(t, a.DeploymentStatus)
	require.True(t, *a.DeploymentStatus.Healthy)

	failed, _, err := c.Deployments().Fail(dID, nil)
	require.NoError(t, err)
	require.Nil(t, failed.RevertedJobVersion, "no stable version to revert to")
	d, _, err = c.Deployments().Info(dID, nil)
	require.NoError(t, err)
	require.Equal(t, "failed", d.Status)
	require.Equal(t, "Deployment marked as failed - no stable job version to auto revert to", d.StatusDescription)

	_, _, err = c.Deployments().Fail(dID, nil)
	requireStatus(t, err, http.StatusBadRequest, "can't fail terminal deployment")
	_, _, err = c.Deployments().Info("00000000-0000-0000-0000-000000000000", nil)
	requireStatus(t, err, http.StatusNotFound, "deployment not found")
}

func TestContractDeploymentFailAutoReverts(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	ta.registerNode(t, "node-1")
	registerAndWait(t, c, testJob("web"))
	_, _, err := c.Jobs().Stable("web", 0, true, nil)
	require.NoError(t, err)

	v1 := testJob("web")
	v1.TaskGroups[0].Tasks[0].Env = map[string]string{"BROKEN": "yes"}
	eval := registerAndWait(t, c, v1)
	failed, _, err := c.Deployments().Fail(eval.DeploymentID, nil)
	require.NoError(t, err)
	require.NotNil(t, failed.RevertedJobVersion)
	require.Equal(t, uint64(0), *failed.RevertedJobVersion)
	waitEvalComplete(t, c, failed.EvalID)

	d, _, err := c.Deployments().Info(eval.DeploymentID, nil)
	require.NoError(t, err)
	require.Equal(t, "Deployment marked as failed - rolling back to job version 0", d.StatusDescription)
	job, _, err := c.Jobs().Info("web", nil)
	require.NoError(t, err)
	require.Equal(t, uint64(2), *job.Version)
	require.Empty(t, job.TaskGroups[0].Tasks[0].Env["BROKEN"])
}
