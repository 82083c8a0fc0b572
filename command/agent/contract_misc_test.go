package agent

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

func TestContractNodesAgentStatus(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	id := ta.registerNode(t, "node-1")
	registerAndWait(t, c, testJob("web"))

	nodes, _, err := c.Nodes().List(nil)
	require.NoError(t, err)
	require.Len(t, nodes, 1)
	require.Equal(t, "ready", nodes[0].Status)
	byPrefix, _, err := c.Nodes().PrefixList(id[:8])
	require.NoError(t, err)
	require.Len(t, byPrefix, 1)

	node, _, err := c.Nodes().Info(id, nil)
	require.NoError(t, err)
	require.NotNil(t, node.NodeResources)
	require.NotNil(t, node.ReservedResources)
	require.Equal(t, "eligible", node.SchedulingEligibility)

	allocs, _, err := c.Nodes().Allocations(id, nil)
	require.NoError(t, err)
	require.Len(t, allocs, 1)
	require.NotNil(t, allocs[0].Job)

	self, err := c.Agent().Self()
	require.NoError(t, err)
	ui, _ := self.Config["UI"].(map[string]any)
	require.Equal(t, false, ui["ShowCLIHints"], "no web UI hints from the CLI")

	leader, err := c.Status().Leader()
	require.NoError(t, err)
	require.Equal(t, ta.Server().RPCAddr(), leader)
	regions, err := c.Regions().List()
	require.NoError(t, err)
	require.Equal(t, []string{"global"}, regions)

	evals, _, err := c.Evaluations().List(nil)
	require.NoError(t, err)
	require.NotEmpty(t, evals)
	byEvalPrefix, _, err := c.Evaluations().PrefixList(evals[0].ID[:4])
	require.NoError(t, err)
	require.NotEmpty(t, byEvalPrefix)
	allocList, _, err := c.Allocations().PrefixList(allocs[0].ID[:6])
	require.NoError(t, err)
	require.Len(t, allocList, 1)

	resp, err := http.Get("http://" + ta.HTTPAddr() + "/v1/metrics?format=prometheus")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), "drover_raft_is_leader 1")
	require.Contains(t, string(body), "# TYPE drover_http_requests_total counter")

	for _, path := range []string{"/v1/jobs", "/v1/job/web", "/v1/nodes", "/v1/agent/self"} {
		resp, err := http.Get("http://" + ta.HTTPAddr() + path)
		require.NoError(t, err)
		resp.Body.Close()
		require.NotEmpty(t, resp.Header.Get("X-Nomad-Index"), path)
		require.NotEqual(t, "0", resp.Header.Get("X-Nomad-Index"), path)
		require.Equal(t, "true", resp.Header.Get("X-Nomad-KnownLeader"), path)
		require.NotEmpty(t, resp.Header.Get("X-Nomad-LastContact"), path)
	}
	resp, err = http.Get("http://" + ta.HTTPAddr() + "/v1/nonsense")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestContractStaleEmptyAccepted(t *testing.T) {
	ta := newTestAgent(t, "")
	resp, err := http.Get("http://" + ta.HTTPAddr() + "/v1/jobs?stale=&wait=100ms&index=1")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "[]", strings.TrimSpace(string(body)), "lists are [] never null")
}

// TestContractJobsParse: /v1/jobs/parse turns HCL into the job's JSON,
// canonicalized on request, with variables; bad HCL and file() are 400s.
func TestContractJobsParse(t *testing.T) {
	ta := newTestAgent(t, "")
	jobs := ta.client.Jobs()
	raw, err := jobs.ParseHCL(`job "example" {}`, false)
	require.NoError(t, err)
	require.Equal(t, "example", *raw.Name)
	require.Nil(t, raw.Namespace)
	canon, err := jobs.ParseHCL(`job "example" {}`, true)
	require.NoError(t, err)
	require.Equal(t, "default", *canon.Namespace)

	withVars, err := jobs.ParseHCLOpts(&api.JobsParseRequest{
		JobHCL:    "variable \"dc\" {}\njob \"example\" {\n  datacenters = [var.dc]\n}\n",
		Variables: `dc = "eu-1"`,
	})
	require.NoError(t, err)
	require.Equal(t, []string{"eu-1"}, withVars.Datacenters)

	_, err = jobs.ParseHCL(`job "example" {`, false)
	require.ErrorContains(t, err, "400")
	_, err = jobs.ParseHCL("job \"x\" {\n  meta { a = file(\"/etc/hostname\") }\n}\n", false)
	require.ErrorContains(t, err, "file() is disabled")
}

// TestContractSearch: prefix search finds a job by ID prefix and (the
// CLI's `status <id>`) everything by an ID prefix; fuzzy search finds a
// task's command with its scope; bad contexts and short texts are 400s.
func TestContractSearch(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	nodeID := ta.registerNode(t, "node-1")
	registerAndWait(t, c, testJob("web"))

	resp, _, err := c.Search().PrefixSearch("we", "jobs", nil)
	require.NoError(t, err)
	require.Equal(t, []string{"web"}, resp.Matches["jobs"])
	all, _, err := c.Search().PrefixSearch(nodeID[:6], "all", nil)
	require.NoError(t, err)
	require.Equal(t, []string{nodeID}, all.Matches["nodes"])

	fz, _, err := c.Search().FuzzySearch("sleep", "all", nil)
	require.NoError(t, err)
	require.Len(t, fz.Matches["commands"], 1)
	require.Equal(t, "/bin/sleep", fz.Matches["commands"][0].ID)
	require.Equal(t, []string{"default", "web", "web", "server"}, fz.Matches["commands"][0].Scope)

	_, _, err = c.Search().PrefixSearch("we", "jobz", nil)
	require.ErrorContains(t, err, "400")
	_, _, err = c.Search().FuzzySearch("s", "all", nil)
	require.ErrorContains(t, err, "at least 2")
}

// TestContractListFilter: the filter parameter selects list items with a
// go-bexpr expression over their API fields; a malformed expression or an
// unknown field is a 400.
func TestContractListFilter(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	ta.registerNode(t, "node-1")
	registerAndWait(t, c, testJob("web"))
	api2 := testJob("api")
	api2.Meta = map[string]string{"team": "core"}
	registerAndWait(t, c, api2)

	q := func(expr string) *api.QueryOptions { return &api.QueryOptions{Filter: expr} }
	jobs, _, err := c.Jobs().List(q(`ID == "api"`))
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	require.Equal(t, "api", jobs[0].ID)
	jobs, _, err = c.Jobs().List(q(`Status != "running" and Type == "system"`))
	require.NoError(t, err)
	require.Empty(t, jobs)

	evals, _, err := c.Evaluations().List(q(`JobID == "web" and Status == "complete"`))
	require.NoError(t, err)
	require.NotEmpty(t, evals)
	for _, e := range evals {
		require.Equal(t, "web", e.JobID)
	}
	count, _, err := c.Evaluations().Count(q(`JobID == "web"`))
	require.NoError(t, err)
	require.Equal(t, len(evals), count.Count)

	allocs, _, err := c.Allocations().List(q(`JobID == "api"`))
	require.NoError(t, err)
	require.Len(t, allocs, 1)
	nodes, _, err := c.Nodes().List(q(`Name == "node-1"`))
	require.NoError(t, err)
	require.Len(t, nodes, 1)
	pools, _, err := c.NodePools().List(q(`Name == "all"`))
	require.NoError(t, err)
	require.Len(t, pools, 1)

	_, _, err = c.Jobs().List(q(`ID ==`))
	require.ErrorContains(t, err, "400")
	_, _, err = c.Jobs().List(q(`NoSuchField == "x"`))
	require.ErrorContains(t, err, "400")
}
