package agent

import (
	"testing"
	"time"

	"github.com/drover-project/drover/wire"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// TestContractNodePools: "all" and "default" are built in and cannot be
// deleted ("all" not changed); pools are created, updated, paginated,
// listed by prefix, and deleted only without nodes; a node naming an
// unknown pool creates it; pool nodes and jobs are listed.
func TestContractNodePools(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	np := c.NodePools()

	pools, _, err := np.List(nil)
	require.NoError(t, err)
	require.Equal(t, []string{"all", "default"}, poolNames(pools))

	_, err = np.Register(&api.NodePool{Name: "dev-1", Description: "d", NodeIdentityTTL: time.Hour}, nil)
	require.NoError(t, err)
	_, err = np.Register(&api.NodePool{Name: "dev-1", Description: "updated", NodeIdentityTTL: time.Hour}, nil)
	require.NoError(t, err)
	got, _, err := np.Info("dev-1", nil)
	require.NoError(t, err)
	require.Equal(t, "updated", got.Description)
	require.Equal(t, time.Hour, got.NodeIdentityTTL)
	require.Less(t, got.CreateIndex, got.ModifyIndex)

	for name, want := range map[string]string{"all": "not allowed", "bad name!": "invalid name"} {
		_, err = np.Register(&api.NodePool{Name: name}, nil)
		require.ErrorContains(t, err, "400")
		require.ErrorContains(t, err, want)
	}
	_, err = np.Delete("default", nil)
	require.ErrorContains(t, err, "built-in")

	page, qm, err := np.List(&api.QueryOptions{PerPage: 1})
	require.NoError(t, err)
	require.Equal(t, []string{"all"}, poolNames(page))
	require.Equal(t, "default", qm.NextToken)
	page, _, err = np.List(&api.QueryOptions{PerPage: 1, NextToken: qm.NextToken})
	require.NoError(t, err)
	require.Equal(t, []string{"default"}, poolNames(page))
	byPrefix, _, err := np.PrefixList("d", nil)
	require.NoError(t, err)
	require.Equal(t, []string{"default", "dev-1"}, poolNames(byPrefix))

	// A node in a new pool creates it; the pool then cannot be deleted.
	ta.registerNode(t, "node-1") // in "default"
	nodeID := registerNodeInPool(t, ta, "gpu")
	gpu, _, err := np.Info("gpu", nil)
	require.NoError(t, err)
	require.Equal(t, "gpu", gpu.Name)
	nodes, _, err := np.ListNodes("gpu", nil)
	require.NoError(t, err)
	require.Len(t, nodes, 1)
	require.Equal(t, nodeID, nodes[0].ID)
	all, _, err := np.ListNodes("all", nil)
	require.NoError(t, err)
	require.Len(t, all, 2)
	_, err = np.Delete("gpu", nil)
	require.ErrorContains(t, err, "has nodes")

	registerAndWait(t, c, testJob("web"))
	jobs, _, err := np.ListJobs("default", nil)
	require.NoError(t, err)
	require.Len(t, jobs, 1)

	_, err = np.Delete("dev-1", nil)
	require.NoError(t, err)
	_, _, err = np.Info("dev-1", nil)
	require.ErrorContains(t, err, "not found")
	_, err = np.Delete("dev-1", nil)
	require.ErrorContains(t, err, "not found")
}

func poolNames(pools []*api.NodePool) []string {
	var out []string
	for _, p := range pools {
		out = append(out, p.Name)
	}
	return out
}

// registerNodeInPool registers a ready node in pool and returns its ID.
func registerNodeInPool(t *testing.T, ta *testAgent, pool string) string {
	t.Helper()
	id := ta.registerNode(t, "pool-node")
	n, _, err := ta.client.Nodes().Info(id, nil)
	require.NoError(t, err)
	n.NodePool = pool
	var out wire.NodeRegisterResponse
	secret := ta.Server().State()
	stored, err := secret.NodeByID(nil, id)
	require.NoError(t, err)
	_, err = ta.client.Raw().Write("/v1/internal/node/register", &wire.NodeRegisterRequest{Node: n, SecretID: stored.SecretID}, &out, nil)
	require.NoError(t, err)
	return id
}
