package apiconv

import (
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

func volumeAPIJob() *api.Job {
	return &api.Job{ID: new("vol"), TaskGroups: []*api.TaskGroup{{
		Name: new("g"),
		Volumes: map[string]*api.VolumeRequest{
			"data":  {Name: "data", Type: "host", Source: "shared", PerAlloc: true},
			"certs": {Name: "certs", Type: "host", Source: "certs", ReadOnly: true},
		},
		Tasks: []*api.Task{{Name: "t", Driver: "docker", Config: map[string]any{"image": "busybox"},
			VolumeMounts: []*api.VolumeMount{
				{Volume: new("data"), Destination: new("/data")},
				{Volume: new("certs"), Destination: new("/certs"), ReadOnly: new(true), PropagationMode: new("host-to-task")},
			}}},
	}}}
}

func TestJobFromAPI_HostVolumes(t *testing.T) {
	job, warnings, err := JobFromAPI(volumeAPIJob())
	require.NoError(t, err)
	assert.Empty(t, warnings)
	require.NoError(t, job.Validate())
	tg := job.TaskGroups[0]
	assert.Equal(t, map[string]*structs.VolumeRequest{
		"data":  {Name: "data", Type: "host", Source: "shared", PerAlloc: true},
		"certs": {Name: "certs", Type: "host", Source: "certs", ReadOnly: true},
	}, tg.Volumes)
	assert.Equal(t, []*structs.VolumeMount{
		{Volume: "data", Destination: "/data", PropagationMode: "private"},
		{Volume: "certs", Destination: "/certs", ReadOnly: true, PropagationMode: "host-to-task"},
	}, tg.Tasks[0].VolumeMounts)

	// What API readers get back is submitted again unchanged.
	back := JobToAPI(job)
	again, _, err := JobFromAPI(back)
	require.NoError(t, err)
	assert.Equal(t, tg.Volumes, again.TaskGroups[0].Volumes)
	assert.Equal(t, tg.Tasks[0].VolumeMounts, again.TaskGroups[0].Tasks[0].VolumeMounts)
}

func TestJobFromAPI_CSIAndDynamicVolumeFieldsRefused(t *testing.T) {
	j := volumeAPIJob()
	j.TaskGroups[0].Volumes["data"] = &api.VolumeRequest{Name: "data", Type: "csi", Source: "ebs",
		AccessMode: "single-node-writer", AttachmentMode: "file-system"}
	_, _, err := JobFromAPI(j)
	var ve *structs.ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, []string{
		`group "g": volume "data": access_mode: a group's access mode is not supported by Drover yet (a host volume is mounted as its read_only says)`,
		`group "g": volume "data": attachment_mode: a group's attachment mode is not supported by Drover yet (host volumes are file systems)`,
		`group "g": volume "data": CSI volumes are not supported by Drover`,
	}, ve.Problems)

	j = volumeAPIJob()
	j.TaskGroups[0].Volumes["data"] = &api.VolumeRequest{Name: "data", Type: "csi", Source: "ebs"}
	_, _, err = JobFromAPI(j)
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, []string{`group "g": volume "data": CSI volumes are not supported by Drover`}, ve.Problems)
}

func TestNodeToAPI_HostVolumes(t *testing.T) {
	n := &structs.Node{ID: "n", HostVolumes: map[string]*structs.ClientHostVolumeConfig{"data": {Path: "/srv/data", ReadOnly: true}}}
	out := NodeToAPI(n)
	assert.Equal(t, map[string]*api.HostVolumeInfo{"data": {Path: "/srv/data", ReadOnly: true}}, out.HostVolumes)
	assert.Equal(t, n.HostVolumes, NodeFromAPI(out).HostVolumes)
}
