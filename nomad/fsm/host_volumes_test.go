package fsm

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// TestApplyHostVolumes: a volume written pending becomes ready when its
// node reports it (with the node's path), the node's entry gets the
// volume's namespace, volumes survive a snapshot (record 121), and a delete
// removes them.
func TestApplyHostVolumes(t *testing.T) {
	f := newFSM()
	node := testNode()
	mustApply(t, f, 1, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node})
	vol := &structs.HostVolume{Namespace: "default", ID: "vol-1", Name: "scratch", PluginID: "mkdir", NodeID: node.ID,
		NodePool: "default", State: structs.HostVolumeStatePending, CreateTime: 5,
		RequestedCapabilities: []*structs.HostVolumeCapability{{AccessMode: "single-node-writer", AttachmentMode: "file-system"}}}
	mustApply(t, f, 2, structs.HostVolumeUpsertRequestType, &structs.HostVolumeUpsertRequest{Volume: vol})
	got, err := f.State().HostVolumeByID(nil, "default", "vol-1")
	require.NoError(t, err)
	require.Equal(t, structs.HostVolumeStatePending, got.State)
	require.Equal(t, uint64(2), got.CreateIndex)

	reported := node.Copy()
	reported.HostVolumes = map[string]*structs.ClientHostVolumeConfig{
		"scratch": {Path: "/srv/hv/vol-1", ID: "vol-1"},
		"static":  {Path: "/srv/static"},
		"stale":   {Path: "/srv/hv/gone", ID: "gone"}, // its volume was deleted
	}
	mustApply(t, f, 3, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: reported})
	got, err = f.State().HostVolumeByID(nil, "default", "vol-1")
	require.NoError(t, err)
	require.Equal(t, structs.HostVolumeStateReady, got.State)
	require.Equal(t, "/srv/hv/vol-1", got.HostPath)
	require.Equal(t, uint64(2), got.CreateIndex)
	require.Equal(t, uint64(3), got.ModifyIndex)
	n, err := f.State().NodeByID(nil, node.ID)
	require.NoError(t, err)
	require.Equal(t, map[string]*structs.ClientHostVolumeConfig{
		"scratch": {Path: "/srv/hv/vol-1", ID: "vol-1", Namespace: "default"},
		"static":  {Path: "/srv/static"},
	}, n.HostVolumes)

	// The node goes down: unavailable; back: ready.
	mustApply(t, f, 30, structs.NodeUpdateStatusRequestType, &structs.NodeUpdateStatusRequest{NodeID: node.ID, Status: structs.NodeStatusDown})
	down, err := f.State().HostVolumeByID(nil, "default", "vol-1")
	require.NoError(t, err)
	require.Equal(t, structs.HostVolumeStateUnavailable, down.State)
	mustApply(t, f, 31, structs.NodeUpdateStatusRequestType, &structs.NodeUpdateStatusRequest{NodeID: node.ID, Status: structs.NodeStatusReady})
	got, err = f.State().HostVolumeByID(nil, "default", "vol-1")
	require.NoError(t, err)
	require.Equal(t, structs.HostVolumeStateReady, got.State)

	snap, err := f.Snapshot()
	require.NoError(t, err)
	sink := &memSink{}
	require.NoError(t, snap.Persist(sink))
	snap.Release()
	dst := newFSM()
	require.NoError(t, dst.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))))
	restored, err := dst.State().HostVolumes(nil, "*")
	require.NoError(t, err)
	require.Equal(t, []*structs.HostVolume{got}, restored)

	mustApply(t, f, 40, structs.HostVolumeDeleteRequestType, &structs.HostVolumeDeleteRequest{Namespace: "default", ID: "vol-1"})
	got, err = f.State().HostVolumeByID(nil, "default", "vol-1")
	require.NoError(t, err)
	require.Nil(t, got)
	byNode, err := f.State().HostVolumesByNode(nil, node.ID)
	require.NoError(t, err)
	require.Empty(t, byNode)
}
