package agent

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// diff_version diffs every version against the one named (what the UI's
// "compare any two versions" asks), and an unknown version is a 400.
func TestContractVersionsDiffVersion(t *testing.T) {
	ta := newTestAgent(t, t.TempDir())
	c := ta.client
	for _, args := range [][]string{{"a"}, {"b"}, {"c"}} {
		job := testJob("web")
		job.TaskGroups[0].Tasks[0].SetConfig("args", args)
		_, _, err := c.Jobs().Register(job, nil)
		require.NoError(t, err)
	}
	base := uint64(0)
	versions, diffs, _, err := c.Jobs().VersionsOpts("web", &api.VersionsOptions{Diffs: true, DiffVersion: &base}, nil)
	require.NoError(t, err)
	require.Len(t, versions, 3)
	require.Len(t, diffs, 3, "one diff per version, the base's own included")
	for i, v := range versions {
		args := diffs[i].TaskGroups
		if *v.Version == 0 {
			require.Equal(t, "None", diffs[i].Type, "the base against itself")
			continue
		}
		require.Equal(t, "Edited", diffs[i].Type)
		require.NotEmpty(t, args)
		f := args[0].Tasks[0].Objects[0].Fields[0]
		require.Equal(t, "a", f.Old, "version %d is diffed against version 0", *v.Version)
		require.Equal(t, map[uint64]string{1: "b", 2: "c"}[*v.Version], f.New)
	}

	resp, err := http.Get(c.Address() + "/v1/job/web/versions?diffs=true&diff_version=7")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	resp, err = http.Get(c.Address() + "/v1/job/web/versions?diffs=true&diff_version=x")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)

	// The root redirects to the UI, which every agent serves.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err = noFollow.Get(c.Address() + "/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusTemporaryRedirect, resp.StatusCode)
	require.Equal(t, "/ui/", resp.Header.Get("Location"))
	resp, err = http.Get(c.Address() + "/ui/jobs/web")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// The rollout view's read: the job, its latest deployment, one row per
// allocation that runs or is meant to plus each node's newest, the
// deployment's ID only on its own allocations, and every node.
func TestContractJobRollout(t *testing.T) {
	ta := newTestAgent(t, t.TempDir())
	c := ta.client
	nodeA, nodeB := ta.registerNode(t, "a"), ta.registerNode(t, "b")
	job := testJob("web")
	_, _, err := c.Jobs().Register(job, nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		allocs, _, err := c.Jobs().Allocations("web", true, nil)
		return err == nil && len(allocs) == 2
	}, 10*time.Second, 50*time.Millisecond)
	job.TaskGroups[0].Tasks[0].SetConfig("args", []string{"60"})
	_, _, err = c.Jobs().Register(job, nil)
	require.NoError(t, err)
	// max_parallel 1: one node gets version 1, the other keeps version 0.
	require.Eventually(t, func() bool {
		allocs, _, err := c.Jobs().Allocations("web", true, nil)
		return err == nil && len(allocs) == 3
	}, 10*time.Second, 50*time.Millisecond)
	d, _, err := c.Jobs().LatestDeployment("web", nil)
	require.NoError(t, err)
	require.EqualValues(t, 1, d.JobVersion)

	var view struct {
		Job          *api.Job
		Deployment   *api.Deployment
		AllocColumns []string
		Allocs       [][]any
		NodeColumns  []string
		Nodes        [][]any
	}
	qm, err := c.Raw().Query("/v1/job/web/rollout", &view, nil)
	require.NoError(t, err)
	require.NotZero(t, qm.LastIndex)
	require.EqualValues(t, 1, *view.Job.Version)
	require.Equal(t, d.ID, view.Deployment.ID)
	col := func(name string) int {
		for i, c := range view.AllocColumns {
			if c == name {
				return i
			}
		}
		t.Fatalf("no column %s in %v", name, view.AllocColumns)
		return -1
	}
	require.Len(t, view.Allocs, 2, "the stopped version-0 allocation a replacement superseded is left out")
	byVersion := map[float64][]any{}
	for _, row := range view.Allocs {
		require.Len(t, row, len(view.AllocColumns))
		byVersion[row[col("JobVersion")].(float64)] = row
	}
	require.Equal(t, d.ID, byVersion[1][col("DeploymentID")], "the new version's allocation is the deployment's")
	require.Equal(t, "", byVersion[0][col("DeploymentID")])
	require.Equal(t, "run", byVersion[0][col("DesiredStatus")])
	require.ElementsMatch(t, []string{nodeA, nodeB}, []string{byVersion[0][col("NodeID")].(string), byVersion[1][col("NodeID")].(string)})
	require.Nil(t, byVersion[1][col("Healthy")], "health is not decided before the task runs")
	require.Equal(t, []string{"ID", "Name", "Status", "SchedulingEligibility", "Datacenter", "NodePool"}, view.NodeColumns)
	require.Len(t, view.Nodes, 2)

	// The allocation events the view applies name the allocation's version
	// beside it (the payload carries no job).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := c.EventStream().Stream(ctx, map[api.Topic][]string{api.TopicAllocation: {"web"}}, 0, nil)
	require.NoError(t, err)
	versions := map[float64]bool{}
	for len(versions) < 2 {
		for _, e := range nextEvents(t, ch).Events {
			raw := e.Payload["Allocation"].(map[string]any)
			require.Nil(t, raw["Job"])
			versions[raw["JobVersion"].(float64)] = true
		}
	}
	require.Equal(t, map[float64]bool{0: true, 1: true}, versions)

	// A named deployment must be the job's.
	_, err = c.Raw().Query("/v1/job/web/rollout?deployment="+d.ID, &view, nil)
	require.NoError(t, err)
	resp, err := http.Get(c.Address() + "/v1/job/web/rollout?deployment=00000000-0000-0000-0000-000000000000")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, err = http.Get(c.Address() + "/v1/job/nope/rollout")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// With ACLs on, the rollout read needs read-job in the job's namespace and
// holds the node rows only for a token that may read nodes.
func TestContractJobRolloutACL(t *testing.T) {
	ta := newACLTestAgent(t)
	ta.registerNode(t, "a")
	_, _, err := ta.client.Jobs().Register(testJob("web"), nil)
	require.NoError(t, err)
	type view struct {
		Job   *api.Job
		Nodes [][]any
	}
	var v view
	_, err = ta.clientWith(t, "").Raw().Query("/v1/job/web/rollout", &v, nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")

	jobsOnly := ta.tokenFor(t, "jobs", `namespace "default" { policy = "read" }`)
	_, err = ta.clientWith(t, jobsOnly.SecretID).Raw().Query("/v1/job/web/rollout", &v, nil)
	require.NoError(t, err)
	require.Equal(t, "web", *v.Job.ID)
	require.Nil(t, v.Nodes, "no node rows without node read")

	withNodes := ta.tokenFor(t, "jobs-nodes", `namespace "default" { policy = "read" }
node { policy = "read" }`)
	v = view{}
	_, err = ta.clientWith(t, withNodes.SecretID).Raw().Query("/v1/job/web/rollout", &v, nil)
	require.NoError(t, err)
	require.Len(t, v.Nodes, 1)
}
