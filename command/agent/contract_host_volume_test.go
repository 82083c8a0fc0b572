package agent

import (
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/wire"
)

// registerMkdirNode registers a node with the mkdir host volume plugin and
// the given host volumes; it returns the node's ID and secret.
func registerMkdirNode(t *testing.T, ta *aclTestAgent, id, secret string, vols map[string]*api.HostVolumeInfo) {
	t.Helper()
	node := &api.Node{
		ID: id, Name: "hv-node", Datacenter: "dc1", NodePool: "default", Status: "ready", SchedulingEligibility: "eligible",
		Attributes:        map[string]string{"kernel.name": "linux", "plugins.host_volume.mkdir.version": "0.0.1"},
		NodeResources:     &api.NodeResources{Cpu: api.NodeCpuResources{CpuShares: 4000}, Memory: api.NodeMemoryResources{MemoryMB: 8192}},
		ReservedResources: &api.NodeReservedResources{},
		Drivers:           map[string]*api.DriverInfo{"raw_exec": {Detected: true, Healthy: true}},
		HostVolumes:       vols,
	}
	var out wire.NodeRegisterResponse
	_, err := ta.client.Raw().Write(wire.RouteNodeRegister, &wire.NodeRegisterRequest{Node: node, SecretID: secret}, &out, nil)
	require.NoError(t, err)
}

// Dynamic host volumes through the API: created pending on a node with
// the mkdir plugin, listed and read, handed to the node by its internal
// query, ready (with the node's path) once the node reports it, deleted.
// An existing directory of the node is registered the same way (pending,
// then ready once the node reports it). The ACL rules apply.
func TestContractDynamicHostVolumes(t *testing.T) {
	ta := newACLTestAgent(t)
	c := ta.client
	spec := &api.HostVolume{Name: "scratch", RequestedCapabilities: []*api.HostVolumeCapability{
		{AccessMode: "single-node-writer", AttachmentMode: "file-system"}}}

	_, _, err := c.HostVolumes().Create(&api.HostVolumeCreateRequest{Volume: spec}, nil)
	requireStatus(t, err, http.StatusBadRequest, "no node meets the volume's requirements (nodes: none registered)")

	nodeID, secret := uuid.NewString(), uuid.NewString()
	registerMkdirNode(t, ta, nodeID, secret, nil)
	resp, _, err := c.HostVolumes().Create(&api.HostVolumeCreateRequest{Volume: spec}, nil)
	require.NoError(t, err)
	v := resp.Volume
	require.Equal(t, api.HostVolumeStatePending, v.State)
	require.Equal(t, nodeID, v.NodeID)
	require.Equal(t, "mkdir", v.PluginID)
	require.Equal(t, "default", v.NodePool)

	stubs, _, err := c.HostVolumes().List(nil, nil)
	require.NoError(t, err)
	require.Len(t, stubs, 1)
	require.Equal(t, v.ID, stubs[0].ID)
	stubs, _, err = c.HostVolumes().List(&api.HostVolumeListRequest{NodeID: "other"}, nil)
	require.NoError(t, err)
	require.Empty(t, stubs)

	// The node's query lists it; the node reports it created: ready.
	nodeClient := ta.clientWith(t, secret)
	var mine []map[string]any
	_, err = nodeClient.Raw().Query(wire.NodePath(wire.RouteNodeHostVolumes, nodeID), &mine, nil)
	require.NoError(t, err)
	require.Len(t, mine, 1)
	require.Equal(t, v.ID, mine[0]["ID"])
	other := ta.clientWith(t, uuid.NewString())
	_, err = other.Raw().Query(wire.NodePath(wire.RouteNodeHostVolumes, nodeID), &mine, nil)
	require.Error(t, err, "another secret does not read the node's volumes")
	registerMkdirNode(t, ta, nodeID, secret, map[string]*api.HostVolumeInfo{"scratch": {Path: "/hv/" + v.ID, ID: v.ID}})
	got, _, err := c.HostVolumes().Get(v.ID, nil)
	require.NoError(t, err)
	require.Equal(t, api.HostVolumeStateReady, got.State)
	require.Equal(t, "/hv/"+v.ID, got.HostPath)
	node, _, err := c.Nodes().Info(nodeID, nil)
	require.NoError(t, err)
	require.Equal(t, map[string]*api.HostVolumeInfo{"scratch": {Path: "/hv/" + v.ID, ID: v.ID}}, node.HostVolumes)

	// Registering an existing directory of the node: pending, no plugin,
	// then ready at that path once the node reports it.
	_, _, err = c.HostVolumes().Register(&api.HostVolumeRegisterRequest{Volume: &api.HostVolume{Name: "old", HostPath: "/srv/old",
		RequestedCapabilities: spec.RequestedCapabilities}}, nil)
	requireStatus(t, err, http.StatusBadRequest, "missing node ID")
	regSpec := &api.HostVolume{Name: "old", NodeID: nodeID, HostPath: "/srv/old", RequestedCapabilities: spec.RequestedCapabilities}
	reg, _, err := c.HostVolumes().Register(&api.HostVolumeRegisterRequest{Volume: regSpec}, nil)
	require.NoError(t, err)
	require.Equal(t, api.HostVolumeStatePending, reg.Volume.State)
	require.Equal(t, nodeID, reg.Volume.NodeID)
	require.Empty(t, reg.Volume.PluginID)
	require.Equal(t, "/srv/old", reg.Volume.HostPath)
	registerMkdirNode(t, ta, nodeID, secret, map[string]*api.HostVolumeInfo{
		"scratch": {Path: "/hv/" + v.ID, ID: v.ID}, "old": {Path: "/srv/old", ID: reg.Volume.ID}})
	got, _, err = c.HostVolumes().Get(reg.Volume.ID, nil)
	require.NoError(t, err)
	require.Equal(t, api.HostVolumeStateReady, got.State)
	_, err = nodeClient.Raw().Query(wire.NodePath(wire.RouteNodeHostVolumes, nodeID), &mine, nil)
	require.NoError(t, err)
	require.Len(t, mine, 2, "the node's query lists the registered volume too")
	_, _, err = c.HostVolumes().Delete(&api.HostVolumeDeleteRequest{ID: reg.Volume.ID}, nil)
	require.NoError(t, err)
	_, _, err = c.HostVolumes().Create(&api.HostVolumeCreateRequest{}, nil)
	requireStatus(t, err, http.StatusBadRequest, "missing volume definition")

	// ACLs: creating and deleting need their capabilities.
	reader := ta.clientWith(t, ta.tokenFor(t, "hv-read", `namespace "default" { capabilities = ["host-volume-read"] }`).SecretID)
	_, _, err = reader.HostVolumes().Create(&api.HostVolumeCreateRequest{Volume: spec}, nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
	_, _, err = reader.HostVolumes().Register(&api.HostVolumeRegisterRequest{Volume: regSpec}, nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
	_, _, err = reader.HostVolumes().Delete(&api.HostVolumeDeleteRequest{ID: v.ID}, nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
	_, _, err = reader.HostVolumes().Get(v.ID, nil)
	require.NoError(t, err)
	anon := ta.clientWith(t, "")
	_, _, err = anon.HostVolumes().Get(v.ID, nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")

	_, _, err = c.HostVolumes().Delete(&api.HostVolumeDeleteRequest{ID: v.ID}, nil)
	require.NoError(t, err)
	_, _, err = c.HostVolumes().Get(v.ID, nil)
	requireStatus(t, err, http.StatusNotFound, "volume not found")
	_, _, err = c.HostVolumes().Delete(&api.HostVolumeDeleteRequest{ID: v.ID}, nil)
	requireStatus(t, err, http.StatusNotFound, "volume not found")
}

// Mounting a host volume needs the host_volume rule's capability, as in
// Nomad: read_only volumes mount-readonly (or mount-readwrite), others
// mount-readwrite.
func TestContractJobRegisterChecksHostVolumeACL(t *testing.T) {
	ta := newACLTestAgent(t)
	job := testJob("hv-acl")
	job.TaskGroups[0].Volumes = map[string]*api.VolumeRequest{"data": {Name: "data", Type: "host", Source: "data", ReadOnly: true}}
	job.TaskGroups[0].Tasks[0].VolumeMounts = []*api.VolumeMount{{Volume: new("data"), Destination: new("/data")}}
	// raw_exec tasks mount no volumes; the mock driver is not checked.
	job.TaskGroups[0].Tasks[0].Driver = "mock"
	job.TaskGroups[0].Tasks[0].Config = map[string]any{"run_for": "1s"}
	write := `namespace "default" { policy = "write" }` + "\n"
	none := ta.clientWith(t, ta.tokenFor(t, "no-volumes", write).SecretID)
	_, _, err := none.Jobs().Register(job, nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")

	ro := ta.clientWith(t, ta.tokenFor(t, "ro-volumes", write+`host_volume "data" { policy = "read" }`).SecretID)
	_, _, err = ro.Jobs().Register(job, nil)
	require.NoError(t, err, "a read_only volume mounts with mount-readonly")
	job.TaskGroups[0].Volumes["data"].ReadOnly = false
	_, _, err = ro.Jobs().Register(job, nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")

	rw := ta.clientWith(t, ta.tokenFor(t, "rw-volumes", write+`host_volume "d*" { policy = "write" }`).SecretID)
	_, _, err = rw.Jobs().Register(job, nil)
	require.NoError(t, err)
}
