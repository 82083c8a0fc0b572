package e2e

import (
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// Two single-server regions, each its own agent process, federated by a
// join: both list both regions and servers, a job registered through one
// for the other lives in the other only, and reads for the other region
// are forwarded there. When the other region's server dies it disappears
// from the regions; when it comes back the federation heals by itself.
func TestRegionsFederation(t *testing.T) {
	east := newServer(t, serverSpec{name: "east-1", bootstrapExpect: 1, top: `region = "east"`})
	west := newServer(t, serverSpec{name: "west-1", bootstrapExpect: 1, top: `region = "west"`})
	waitLeader(t, east)
	waitLeader(t, west)
	ec, wc := east.client(t), west.client(t)

	n, err := wc.Agent().Join(east.rpcAddr())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	for _, c := range []*api.Client{ec, wc} {
		regions, err := c.Regions().List()
		require.NoError(t, err)
		require.Equal(t, []string{"east", "west"}, regions)
		members, err := c.Agent().Members()
		require.NoError(t, err)
		var got []string
		for _, m := range members.Members {
			got = append(got, m.Name+"/"+m.Tags["region"]+"/"+m.Status)
		}
		slices.Sort(got)
		require.Equal(t, []string{"east-1.east/east/alive", "west-1.west/west/alive"}, got)
	}
	// Each region keeps its own raft cluster.
	peers, err := ec.Status().Peers()
	require.NoError(t, err)
	require.Equal(t, []string{east.rpcAddr()}, peers)

	// Registered through east for west: it lives in west.
	resp, _, err := ec.Jobs().Register(systemJob("crossing", "v1"), &api.WriteOptions{Region: "west"})
	require.NoError(t, err)
	job, _, err := wc.Jobs().Info("crossing", nil) // west, no forwarding
	require.NoError(t, err)
	require.Equal(t, "west", *job.Region)
	eval, _, err := wc.Evaluations().Info(resp.EvalID, nil)
	require.NoError(t, err)
	require.Equal(t, "crossing", eval.JobID)
	_, _, err = ec.Jobs().Info("crossing", nil)
	require.ErrorContains(t, err, "404", "east does not hold the job")
	// Read through east for west.
	job, _, err = ec.Jobs().Info("crossing", &api.QueryOptions{Region: "west"})
	require.NoError(t, err)
	require.Equal(t, *job.ModifyIndex, *mustJob(t, wc, "crossing").ModifyIndex)
	leader, err := ec.Status().RegionLeader("west")
	require.NoError(t, err)
	require.Equal(t, west.rpcAddr(), leader)

	// West dies: it leaves east's regions and routes.
	west.kill()
	require.Eventually(t, func() bool {
		regions, err := ec.Regions().List()
		return err == nil && slices.Equal(regions, []string{"east"})
	}, 20*time.Second, 200*time.Millisecond)
	_, _, err = ec.Jobs().Info("crossing", &api.QueryOptions{Region: "west"})
	require.ErrorContains(t, err, "No path to region")

	// West comes back (same data, same ports): east notices, west learns
	// east again from it, and the job is still there.
	west.start(t)
	waitLeader(t, west)
	require.Eventually(t, func() bool {
		for _, c := range []*api.Client{ec, wc} {
			regions, err := c.Regions().List()
			if err != nil || !slices.Equal(regions, []string{"east", "west"}) {
				return false
			}
		}
		return true
	}, 20*time.Second, 200*time.Millisecond)
	job, _, err = ec.Jobs().Info("crossing", &api.QueryOptions{Region: "west"})
	require.NoError(t, err)
	require.Equal(t, "west", *job.Region)
}

func mustJob(t *testing.T, c *api.Client, id string) *api.Job {
	t.Helper()
	job, _, err := c.Jobs().Info(id, nil)
	require.NoError(t, err)
	return job
}
