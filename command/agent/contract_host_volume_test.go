package agent

import (
	"net/http"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// Dynamic host volumes are not built: create and register are refused
// with a 400 saying what to use instead, nothing is written; reads and
// deletes find no volume; the endpoints' ACL rules apply.
func TestContractDynamicHostVolumesRefused(t *testing.T) {
	ta := newACLTestAgent(t)
	c := ta.client
	vol := &api.HostVolume{Name: "scratch", PluginID: "mkdir"}

	before := ta.Server().State().LatestIndex()
	_, _, err := c.HostVolumes().Create(&api.HostVolumeCreateRequest{Volume: vol}, nil)
	requireStatus(t, err, http.StatusBadRequest, `dynamic host volumes are not supported by Drover yet (volume "scratch" is not created): declare the directory in the client's configuration, client { host_volume "scratch" { path = "..." } }`)
	_, _, err = c.HostVolumes().Register(&api.HostVolumeRegisterRequest{Volume: vol}, nil)
	requireStatus(t, err, http.StatusBadRequest, "dynamic host volumes are not supported by Drover yet")
	_, _, err = c.HostVolumes().Create(&api.HostVolumeCreateRequest{}, nil)
	requireStatus(t, err, http.StatusBadRequest, "missing volume definition")
	require.Equal(t, before, ta.Server().State().LatestIndex(), "nothing is written")

	_, _, err = c.HostVolumes().Get("vol-1", nil)
	requireStatus(t, err, http.StatusNotFound, "volume not found")
	_, _, err = c.HostVolumes().Delete(&api.HostVolumeDeleteRequest{ID: "vol-1"}, nil)
	requireStatus(t, err, http.StatusNotFound, "volume not found")

	// ACLs: creating needs host-volume-create in the namespace.
	reader := ta.clientWith(t, ta.tokenFor(t, "hv-read", `namespace "default" { capabilities = ["host-volume-read"] }`).SecretID)
	_, _, err = reader.HostVolumes().Create(&api.HostVolumeCreateRequest{Volume: vol}, nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
	_, _, err = reader.HostVolumes().Get("vol-1", nil)
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
