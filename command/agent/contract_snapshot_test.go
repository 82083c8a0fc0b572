package agent

import (
	"bytes"
	"io"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// TestContractSnapshotSaveRestore: an archive saved on one cluster
// restores on a fresh one with every job, version, deployment, allocation
// and node intact; the restored cluster keeps working; a corrupt archive is
// refused and changes nothing.
func TestContractSnapshotSaveRestore(t *testing.T) {
	src := newTestAgent(t, "")
	c := src.client
	src.registerNode(t, "node-1")
	registerAndWait(t, c, testJob("web"))
	v2 := testJob("web")
	v2.Meta = map[string]string{"v": "2"}
	registerAndWait(t, c, v2)
	registerAndWait(t, c, testJob("api"))

	rc, err := c.Operator().Snapshot(nil)
	require.NoError(t, err)
	archive, err := io.ReadAll(rc) // the client checks the Digest at EOF
	require.NoError(t, err)
	require.NoError(t, rc.Close())

	dst := newTestAgent(t, "")
	d := dst.client
	_, err = d.Operator().SnapshotRestore(bytes.NewReader(archive[:len(archive)/2]), nil)
	require.ErrorContains(t, err, "400")
	jobs, _, err := d.Jobs().List(nil)
	require.NoError(t, err)
	require.Empty(t, jobs, "a refused archive changes nothing")

	_, err = d.Operator().SnapshotRestore(bytes.NewReader(archive), nil)
	require.NoError(t, err)

	for _, id := range []string{"web", "api"} {
		want, _, _, err := c.Jobs().Versions(id, false, nil)
		require.NoError(t, err)
		got, _, _, err := d.Jobs().Versions(id, false, nil)
		require.NoError(t, err)
		require.Len(t, got, len(want), id)
		require.Equal(t, *want[0].Version, *got[0].Version)

		wantAllocs, _, err := c.Jobs().Allocations(id, true, nil)
		require.NoError(t, err)
		gotAllocs, _, err := d.Jobs().Allocations(id, true, nil)
		require.NoError(t, err)
		require.ElementsMatch(t, allocIDs(wantAllocs), allocIDs(gotAllocs), id)

		wantDeps, _, err := c.Jobs().Deployments(id, false, nil)
		require.NoError(t, err)
		gotDeps, _, err := d.Jobs().Deployments(id, false, nil)
		require.NoError(t, err)
		require.Len(t, gotDeps, len(wantDeps), id)
	}
	nodes, _, err := d.Nodes().List(nil)
	require.NoError(t, err)
	require.Len(t, nodes, 1)

	// The restored cluster schedules new work on the restored node.
	registerAndWait(t, d, testJob("after"))
	allocs, _, err := d.Jobs().Allocations("after", false, nil)
	require.NoError(t, err)
	require.Len(t, allocs, 1)
}

func allocIDs(stubs []*api.AllocationListStub) []string {
	var out []string
	for _, s := range stubs {
		out = append(out, s.ID)
	}
	return out
}
