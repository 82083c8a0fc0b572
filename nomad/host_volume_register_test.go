package nomad

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/mock"
	"github.com/drover-project/drover/nomad/structs"
)

func registeredVolume(nodeID, path string) *structs.HostVolume {
	v := scratchVolume()
	v.Name, v.NodeID, v.HostPath = "data", nodeID, path
	return v
}

// TestHostVolumeRegister: an existing directory of a named node is
// registered pending, with no plugin; it is ready once its node reports
// it; the checks refuse what a
// registration cannot have; the caller needs host-volume-register; delete
// removes the record.
func TestHostVolumeRegister(t *testing.T) {
	srv := queryTestServer(t)
	n1 := mock.Node()
	n1.ID, n1.Name, n1.NodePool = "b-node", "b", "default"
	n1.HostVolumes = map[string]*structs.ClientHostVolumeConfig{"static": {Path: "/srv/static"}}
	_, _, _, err := srv.NodeRegister(n1, "")
	require.NoError(t, err)

	v, _, err := srv.HostVolumeRegister(nil, registeredVolume("b-node", "/srv/data"))
	require.NoError(t, err)
	require.Equal(t, structs.HostVolumeStatePending, v.State)
	require.Empty(t, v.PluginID)
	require.Equal(t, "/srv/data", v.HostPath)
	require.Equal(t, "default", v.NodePool)
	require.True(t, v.Registered())

	for _, tc := range []struct {
		name   string
		mutate func(*structs.HostVolume)
		want   string
	}{
		{"no node", func(v *structs.HostVolume) { v.NodeID = "" }, "missing node ID"},
		{"unknown node", func(v *structs.HostVolume) { v.NodeID = "nope" }, `node "nope" does not exist`},
		{"no path", func(v *structs.HostVolume) { v.HostPath = "" }, "missing host path"},
		{"relative path", func(v *structs.HostVolume) { v.HostPath = "srv/x" }, `host_path "srv/x" must be absolute`},
		{"dot-dot", func(v *structs.HostVolume) { v.HostPath = "/srv/link/../x" }, `host_path "/srv/link/../x" must not contain ".."`},
		{"a plugin", func(v *structs.HostVolume) { v.PluginID = "mkdir" }, `plugin_id = "mkdir": a registered volume is an existing directory`},
		{"parameters", func(v *structs.HostVolume) { v.Parameters = map[string]string{"mode": "0700"} }, "parameters are for the plugin of volume create only"},
		{"name taken by a static volume", func(v *structs.HostVolume) { v.Name = "static" }, `node "b-node" already has a host volume named "static"`},
		{"name taken by a registered volume", func(v *structs.HostVolume) { v.Name = "data" }, `node "b-node" already has a host volume named "data"`},
		{"block device", func(v *structs.HostVolume) {
			v.Name = "blk"
			v.RequestedCapabilities[0].AttachmentMode = structs.HostVolumeAttachmentModeBlockDevice
		}, `attachment mode "block-device" is not supported`},
		{"an ID", func(v *structs.HostVolume) { v.ID = v.NodeID }, "updating a host volume is not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := registeredVolume("b-node", "/srv/other")
			bad.Name = "other"
			tc.mutate(bad)
			_, _, err := srv.HostVolumeRegister(nil, bad)
			require.ErrorIs(t, err, structs.ErrBadRequest)
			require.ErrorContains(t, err, tc.want)
		})
	}

	// The node reports it (at its path): ready.
	reported := n1.Copy()
	reported.HostVolumes = map[string]*structs.ClientHostVolumeConfig{
		"static": {Path: "/srv/static"}, "data": {Path: "/srv/data", ID: v.ID},
	}
	_, _, _, err = srv.NodeRegister(reported, "")
	require.NoError(t, err)
	got, _, _, err := srv.HostVolumeGet(t.Context(), QueryOptions{}, v.ID)
	require.NoError(t, err)
	require.Equal(t, structs.HostVolumeStateReady, got.State)
	require.Equal(t, "/srv/data", got.HostPath)
	mine, _, err := srv.NodeHostVolumes(t.Context(), callerOf(n1), QueryOptions{})
	require.NoError(t, err)
	require.Len(t, mine, 1, "the node's client is told of it")

	// host_path was a symlink on the node: the client offers the volume
	// at the resolved path, and the volume shows it.
	resolved := reported.Copy()
	resolved.HostVolumes["data"] = &structs.ClientHostVolumeConfig{Path: "/mnt/disk1/data", ID: v.ID}
	_, _, _, err = srv.NodeRegister(resolved, "")
	require.NoError(t, err)
	got, _, _, err = srv.HostVolumeGet(t.Context(), QueryOptions{}, v.ID)
	require.NoError(t, err)
	require.Equal(t, structs.HostVolumeStateReady, got.State)
	require.Equal(t, "/mnt/disk1/data", got.HostPath)

	// ACLs: create's capability is not register's.
	creator := policyACL(t, `namespace "default" { capabilities = ["host-volume-create", "host-volume-read"] }`)
	other := registeredVolume("b-node", "/srv/x")
	other.Name = "x"
	_, _, err = srv.HostVolumeRegister(creator, other)
	require.ErrorIs(t, err, structs.ErrPermissionDenied)
	registrar := policyACL(t, `namespace "default" { capabilities = ["host-volume-register"] }`)
	_, _, err = srv.HostVolumeRegister(registrar, other)
	require.NoError(t, err)

	// Delete removes the record (the client leaves the directory alone).
	_, err = srv.HostVolumeDelete(nil, "default", v.ID)
	require.NoError(t, err)
	_, _, _, err = srv.HostVolumeGet(t.Context(), QueryOptions{}, v.ID)
	require.ErrorIs(t, err, structs.ErrNotFound)
}
