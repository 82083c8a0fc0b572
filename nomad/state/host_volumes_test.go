package state

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// Two volumes of one name on one node cannot both be offered (the node
// reports its host volumes by name): the endpoint checks a snapshot, and
// the write refuses the second of two concurrent creates. Updating the
// volume itself, or the same name on another node, is fine.
func TestUpsertHostVolume_NameTakenOnNode(t *testing.T) {
	s := NewStateStore()
	vol := func(id, node, ns string) *structs.HostVolume {
		return &structs.HostVolume{ID: id, Name: "scratch", Namespace: ns, NodeID: node, PluginID: structs.HostVolumePluginMkdir,
			State: structs.HostVolumeStatePending}
	}
	require.NoError(t, s.UpsertHostVolume(10, vol("v1", "n1", "default")))
	require.NoError(t, s.UpsertHostVolume(11, vol("v1", "n1", "default")), "the volume itself")
	require.NoError(t, s.UpsertHostVolume(12, vol("v2", "n2", "default")), "another node")

	err := s.UpsertHostVolume(13, vol("v3", "n1", "default"))
	require.ErrorIs(t, err, ErrConflict)
	require.Contains(t, err.Error(), `node "n1" already has a host volume named "scratch" (v1)`)
	err = s.UpsertHostVolume(14, vol("v4", "n1", "other"))
	require.ErrorIs(t, err, ErrConflict, "in another namespace too: the node's names are one set")

	got, err := s.Snapshot().HostVolumeByID(nil, "default", "v3")
	require.NoError(t, err)
	require.Nil(t, got, "nothing written")
}
