package agent

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/command/agent/config"
)

func newRegionAgent(t *testing.T, region string) *testAgent {
	t.Helper()
	return newTestAgentWith(t, func(cfg *config.Config) { cfg.Region = region })
}

// Two single-server regions federated by /v1/agent/join: both list both
// regions and all servers, and requests for the other region go there.
func TestContractRegionsFederation(t *testing.T) {
	east := newRegionAgent(t, "east")
	west := newRegionAgent(t, "west")

	n, err := west.client.Agent().Join(east.Server().RPCAddr())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	for _, ta := range []*testAgent{east, west} {
		regions, err := ta.client.Regions().List()
		require.NoError(t, err)
		require.Equal(t, []string{"east", "west"}, regions)

		members, err := ta.client.Agent().Members()
		require.NoError(t, err)
		byName := map[string]*api.AgentMember{}
		for _, m := range members.Members {
			byName[m.Name] = m
		}
		require.Len(t, byName, 2, "%v", byName)
		for _, other := range []*testAgent{east, west} {
			m := byName[other.config.Name+"."+other.config.Region]
			require.NotNil(t, m, "%s missing", other.config.Name)
			require.Equal(t, "alive", m.Status)
			require.Equal(t, other.config.Region, m.Tags["region"])
			require.Equal(t, "dc1", m.Tags["dc"])
		}
		peers, err := ta.client.Status().Peers()
		require.NoError(t, err)
		require.Equal(t, []string{ta.Server().RPCAddr()}, peers, "no raft peer across regions")
	}

	// A job registered through east for west lives in west only, with
	// west as its region.
	job := testJob("far")
	_, _, err = east.client.Jobs().Register(job, &api.WriteOptions{Region: "west"})
	require.NoError(t, err)
	got, _, err := west.client.Jobs().Info("far", nil)
	require.NoError(t, err)
	require.Equal(t, "west", *got.Region)
	_, _, err = east.client.Jobs().Info("far", nil)
	require.ErrorContains(t, err, "404")
	got, _, err = east.client.Jobs().Info("far", &api.QueryOptions{Region: "west"})
	require.NoError(t, err)
	require.Equal(t, "west", *got.Region)
	list, _, err := east.client.Jobs().List(&api.QueryOptions{Region: "west"})
	require.NoError(t, err)
	require.Len(t, list, 1)

	// The job's own region routes it when the query names none.
	job = testJob("by-body")
	job.Region = new("east")
	_, _, err = west.client.Jobs().Register(job, nil)
	require.NoError(t, err)
	got, _, err = east.client.Jobs().Info("by-body", nil)
	require.NoError(t, err)
	require.Equal(t, "east", *got.Region)
	_, _, err = west.client.Jobs().Info("by-body", nil)
	require.ErrorContains(t, err, "404")
	// "global" means the receiving server's region.
	job = testJob("here")
	_, _, err = west.client.Jobs().Register(job, nil)
	require.NoError(t, err)
	got, _, err = west.client.Jobs().Info("here", nil)
	require.NoError(t, err)
	require.Equal(t, "west", *got.Region)

	// A plan goes to the job's region too.
	plan, _, err := east.client.Jobs().Plan(testJob("far"), true, &api.WriteOptions{Region: "west"})
	require.NoError(t, err)
	require.Equal(t, "None", plan.Diff.Type, "the plan ran against west's copy of the job")

	// Status and writes of other kinds follow the region too.
	leader, err := east.client.Status().RegionLeader("west")
	require.NoError(t, err)
	require.Equal(t, west.Server().RPCAddr(), leader)
	_, _, err = east.client.Jobs().Deregister("far", true, &api.WriteOptions{Region: "west"})
	require.NoError(t, err)
	_, _, err = west.client.Jobs().Info("far", nil)
	require.ErrorContains(t, err, "404")

	// An unknown region: Nomad's error, nothing written.
	_, _, err = east.client.Jobs().Register(testJob("lost"), &api.WriteOptions{Region: "north"})
	require.ErrorContains(t, err, "500")
	require.ErrorContains(t, err, "No path to region")
	resp, err := http.Get("http://" + east.HTTPAddr() + "/v1/jobs?region=north")
	require.NoError(t, err)
	body := readAll(t, resp)
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	require.Equal(t, "No path to region", body)
	// Endpoints about the agent itself answer locally whatever the region.
	resp, err = http.Get("http://" + east.HTTPAddr() + "/v1/agent/self?region=north")
	require.NoError(t, err)
	_ = readAll(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// A down region disappears from the regions and the routes.
	require.NoError(t, west.Shutdown())
	require.Eventually(t, func() bool {
		regions, err := east.client.Regions().List()
		return err == nil && slices.Equal(regions, []string{"east"})
	}, 15*time.Second, 100*time.Millisecond)
	_, _, err = east.client.Jobs().List(&api.QueryOptions{Region: "west"})
	require.ErrorContains(t, err, "No path to region")
	members, err := east.client.Agent().Members()
	require.NoError(t, err)
	for _, m := range members.Members {
		if m.Tags["region"] == "west" {
			require.Equal(t, "failed", m.Status)
		}
	}
	// A force-leave marks it left.
	require.NoError(t, east.client.Agent().ForceLeave(west.config.Name+".west"))
	members, err = east.client.Agent().Members()
	require.NoError(t, err)
	var statuses []string
	for _, m := range members.Members {
		statuses = append(statuses, m.Tags["region"]+"="+m.Status)
	}
	slices.Sort(statuses)
	require.Equal(t, []string{"east=alive", "west=left"}, statuses)
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

func TestSubmitRegion(t *testing.T) {
	for _, tc := range []struct{ query, body, job, want string }{
		{"", "", "", "east"},
		{"", "", "global", "east"},
		{"", "", "west", "west"},
		{"", "north", "west", "north"},
		{"south", "north", "west", "south"},
		{"global", "", "west", "east"},
		{"east", "", "west", "east"},
	} {
		require.Equal(t, tc.want, submitRegion(tc.query, tc.body, tc.job, "east"), "%+v", tc)
	}
}

func TestIsJobSubmissionAndRegionScoped(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		want         bool
	}{
		{"PUT", "/v1/jobs", true},
		{"POST", "/v1/jobs", true},
		{"GET", "/v1/jobs", false},
		{"PUT", "/v1/job/web", true},
		{"POST", "/v1/job/a%2Fb", true},
		{"PUT", "/v1/job/web/plan", true},
		{"PUT", "/v1/job/web/evaluate", false},
		{"DELETE", "/v1/job/web", false},
		{"PUT", "/v1/job/", false},
		{"PUT", "/v1/jobs/parse", false},
	} {
		r := httptest.NewRequest(tc.method, tc.path, nil)
		require.Equal(t, tc.want, isJobSubmission(r), "%s %s", tc.method, tc.path)
	}
	for path, want := range map[string]bool{
		"/v1/jobs": true, "/v1/job/x/allocations": true, "/v1/status/leader": true,
		"/v1/client/fs/ls/abc": true, "/v1/event/stream": true, "/v1/operator/raft/configuration": true,
		"/v1/agent/members": false, "/v1/regions": false, "/v1/metrics": false,
		"/v1/internal/node/register": false, "/.well-known/jwks.json": false, "/ui/": false, "/": false,
	} {
		require.Equal(t, want, regionScoped(path), path)
	}
}
