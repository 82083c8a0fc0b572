package nomad

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/mock"
	"github.com/drover-project/drover/nomad/structs"
)

func mkdirCapable(n *structs.Node) *structs.Node {
	n.NodePool = "default"
	n.Attributes[HostVolumePluginAttr("mkdir")] = "0.0.1"
	return n
}

func scratchVolume() *structs.HostVolume {
	return &structs.HostVolume{Name: "scratch", RequestedCapabilities: []*structs.HostVolumeCapability{
		{AccessMode: structs.HostVolumeAccessModeSingleNodeWriter, AttachmentMode: structs.HostVolumeAttachmentModeFilesystem}}}
}

// TestHostVolumeCreateAndDelete: a volume goes pending to a node with the
// plugin (constraints and pools respected, the least loaded first), is
// ready once its node reports it, cannot be deleted while an allocation
// uses it, and is deleted otherwise.
func TestHostVolumeCreateAndDelete(t *testing.T) {
	srv := queryTestServer(t)
	bare := mock.Node()
	bare.ID = "a-bare"
	bare.NodePool = "default"
	n1 := mkdirCapable(mock.Node())
	n1.ID, n1.Name = "b-node", "b"
	n2 := mkdirCapable(mock.Node())
	n2.ID, n2.Name = "c-node", "c"
	n2.Attributes["rack"] = "r2"
	for _, n := range []*structs.Node{bare, n1, n2} {
		_, _, _, err := srv.NodeRegister(n, "")
		require.NoError(t, err)
	}

	v, _, err := srv.HostVolumeCreate(nil, scratchVolume())
	require.NoError(t, err)
	require.Equal(t, "b-node", v.NodeID, "the first fitting node by ID (none has volumes)")
	require.Equal(t, structs.HostVolumeStatePending, v.State)
	require.Equal(t, "mkdir", v.PluginID, "the default plugin")
	require.Equal(t, "default", v.Namespace)
	require.NotEmpty(t, v.ID)

	// The same name again goes to the other node; a third time, nowhere.
	again, _, err := srv.HostVolumeCreate(nil, scratchVolume())
	require.NoError(t, err)
	require.Equal(t, "c-node", again.NodeID)
	_, _, err = srv.HostVolumeCreate(nil, scratchVolume())
	require.ErrorIs(t, err, structs.ErrBadRequest)
	require.ErrorContains(t, err, `no node meets the volume's requirements (nodes: 1 has no host volume plugin "mkdir"; 2 already has a host volume named "scratch")`)

	other := scratchVolume()
	other.Name = "logs"
	other.Constraints = []*structs.Constraint{{LTarget: "${attr.rack}", Operand: "=", RTarget: "r2"}}
	logs, _, err := srv.HostVolumeCreate(nil, other)
	require.NoError(t, err)
	require.Equal(t, "c-node", logs.NodeID, "constraints choose the node")
	onBare := scratchVolume()
	onBare.Name, onBare.NodeID = "x", "a-bare"
	_, _, err = srv.HostVolumeCreate(nil, onBare)
	require.ErrorContains(t, err, `node "a-bare" has no host volume plugin "mkdir"`)
	bad := scratchVolume()
	bad.PluginID = "lvm"
	bad.RequestedCapabilities = nil
	_, _, err = srv.HostVolumeCreate(nil, bad)
	require.ErrorContains(t, err, `plugin "lvm" is not available`)
	require.ErrorContains(t, err, "must include at least one capability block")

	// The node reports it: ready.
	reported := n1.Copy()
	reported.HostVolumes = map[string]*structs.ClientHostVolumeConfig{"scratch": {Path: "/hv/" + v.ID, ID: v.ID}}
	_, _, _, err = srv.NodeRegister(reported, "")
	require.NoError(t, err)
	got, _, _, err := srv.HostVolumeGet(t.Context(), QueryOptions{}, v.ID)
	require.NoError(t, err)
	require.Equal(t, structs.HostVolumeStateReady, got.State)
	require.Equal(t, "/hv/"+v.ID, got.HostPath)
	list, _, err := srv.HostVolumeList(t.Context(), QueryOptions{Namespace: "*"}, "", "")
	require.NoError(t, err)
	require.Len(t, list, 3)
	list, _, err = srv.HostVolumeList(t.Context(), QueryOptions{}, "c-node", "")
	require.NoError(t, err)
	require.Len(t, list, 2)
	mine, _, err := srv.NodeHostVolumes(t.Context(), callerOf(n1), QueryOptions{})
	require.NoError(t, err)
	require.Len(t, mine, 1)
	require.Equal(t, v.ID, mine[0].ID)

	// In use by a running allocation of its namespace: refused.
	job := mock.Job("uses-scratch")
	job.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"s": {Type: "host", Source: "scratch"}}
	alloc := mock.Alloc(job, "b-node")
	alloc.Job = job
	alloc.ClientStatus = structs.AllocClientStatusRunning
	require.NoError(t, srv.State().UpsertJob(srv.State().LatestIndex()+1, nil, job))
	require.NoError(t, srv.State().UpsertAllocs(srv.State().LatestIndex()+1, []*structs.Allocation{alloc}))
	_, users, _, err := srv.HostVolumeGet(t.Context(), QueryOptions{}, v.ID)
	require.NoError(t, err)
	require.Len(t, users, 1)
	require.Equal(t, alloc.ID, users[0].ID)
	_, err = srv.HostVolumeDelete(nil, "default", v.ID)
	require.ErrorContains(t, err, "in use by allocations: ["+alloc.ID+"]")
	_, err = srv.HostVolumeDelete(nil, "default", logs.ID)
	require.NoError(t, err)
	_, _, _, err = srv.HostVolumeGet(t.Context(), QueryOptions{}, logs.ID)
	require.ErrorIs(t, err, structs.ErrNotFound)
	_, err = srv.HostVolumeDelete(nil, "default", logs.ID)
	require.ErrorIs(t, err, structs.ErrNotFound)

	// ACLs.
	reader := policyACL(t, `namespace "default" { capabilities = ["host-volume-read"] }`)
	_, _, err = srv.HostVolumeCreate(reader, scratchVolume())
	require.ErrorIs(t, err, structs.ErrPermissionDenied)
	_, err = srv.HostVolumeDelete(reader, "default", v.ID)
	require.ErrorIs(t, err, structs.ErrPermissionDenied)
	_, _, _, err = srv.HostVolumeGet(t.Context(), QueryOptions{ACL: reader}, v.ID)
	require.NoError(t, err)
	none := policyACL(t, `namespace "default" { capabilities = ["read-job"] }`)
	_, _, _, err = srv.HostVolumeGet(t.Context(), QueryOptions{ACL: none}, v.ID)
	require.ErrorIs(t, err, structs.ErrPermissionDenied)
	list, _, err = srv.HostVolumeList(t.Context(), QueryOptions{ACL: none, Namespace: "*"}, "", "")
	require.NoError(t, err)
	require.Empty(t, list)
}
