package structs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// volumeJob is testJob with a host volume "data" mounted at /data by its
// docker task.
func volumeJob() *Job {
	j := testJob()
	tg := j.TaskGroups[0]
	tg.Update.Canary = 0
	tg.Volumes = map[string]*VolumeRequest{"data": {Name: "data", Type: VolumeTypeHost, Source: "shared-data"}}
	tg.Tasks[0].VolumeMounts = []*VolumeMount{{Volume: "data", Destination: "/data", PropagationMode: VolumeMountPropagationPrivate}}
	return j
}

func TestValidateVolumes(t *testing.T) {
	require.NoError(t, volumeJob().Validate())
	cases := []struct {
		name   string
		mutate func(tg *TaskGroup)
		want   string
	}{
		{"csi", func(tg *TaskGroup) { tg.Volumes["data"].Type = VolumeTypeCSI },
			`Task group "web" validation failed: volume "data": CSI volumes are not supported by Drover`},
		{"unknown type", func(tg *TaskGroup) { tg.Volumes["data"].Type = "nfs" },
			`volume "data": volume has unrecognized type "nfs"`},
		{"no type", func(tg *TaskGroup) { tg.Volumes["data"].Type = "" },
			`volume "data": volume has unrecognized type ""`},
		{"empty source", func(tg *TaskGroup) { tg.Volumes["data"].Source = "" },
			`volume "data": volume has an empty source`},
		{"per_alloc with canaries", func(tg *TaskGroup) { tg.Volumes["data"].PerAlloc = true; tg.Update.Canary = 1 },
			`volume "data": volume cannot be per_alloc when canaries are in use`},
		{"undefined volume", func(tg *TaskGroup) { tg.Tasks[0].VolumeMounts[0].Volume = "logs" },
			`task "server": Volume Mount (0) references undefined volume logs`},
		{"empty volume", func(tg *TaskGroup) { tg.Tasks[0].VolumeMounts[0].Volume = "" },
			`task "server": Volume Mount (0) references an empty volume`},
		{"empty destination", func(tg *TaskGroup) { tg.Tasks[0].VolumeMounts[0].Destination = "" },
			`task "server": Volume Mount (0) references an empty destination`},
		{"bad propagation", func(tg *TaskGroup) { tg.Tasks[0].VolumeMounts[0].PropagationMode = "shared" },
			`task "server": Volume Mount "data" has an invalid propagation mode: "shared"`},
		{"selinux label", func(tg *TaskGroup) { tg.Tasks[0].VolumeMounts[0].SELinuxLabel = "z" },
			`Volume Mount "data": selinux_label is not supported by Drover yet`},
		{"raw_exec", func(tg *TaskGroup) {
			tg.Tasks[0].Driver = "raw_exec"
			tg.Tasks[0].Config = map[string]any{"command": "/bin/true"}
		}, `Volume Mount "data": the raw_exec driver has no filesystem isolation and mounts no volumes`},
		{"exec propagation", func(tg *TaskGroup) {
			tg.Tasks[0].Driver = "exec"
			tg.Tasks[0].Config = map[string]any{"command": "/bin/true"}
			tg.Tasks[0].VolumeMounts[0].PropagationMode = VolumeMountPropagationHostToTask
		}, `propagation_mode "host-to-task" is not supported by the exec driver in Drover`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := volumeJob()
			tc.mutate(j.TaskGroups[0])
			err := j.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestVolumesChangeIsDestructive(t *testing.T) {
	old := volumeJob().TaskGroups[0]
	newer := volumeJob().TaskGroups[0]
	assert.Equal(t, UpdateTypeNone, old.UpdateType(newer))
	newer.Volumes["data"].Source = "other"
	assert.Equal(t, UpdateTypeDestructive, old.UpdateType(newer))
	newer = volumeJob().TaskGroups[0]
	newer.Tasks[0].VolumeMounts[0].ReadOnly = true
	assert.Equal(t, UpdateTypeDestructive, old.UpdateType(newer))
}

func TestResolveHostVolumeMounts(t *testing.T) {
	node := &Node{HostVolumes: map[string]*ClientHostVolumeConfig{
		"shared-data": {Path: "/srv/data"}, "certs": {Path: "/srv/certs", ReadOnly: true}, "db[3]": {Path: "/srv/db3"},
	}}
	tg := &TaskGroup{Name: "web", Volumes: map[string]*VolumeRequest{
		"data":  {Type: VolumeTypeHost, Source: "shared-data"},
		"ro":    {Type: VolumeTypeHost, Source: "shared-data", ReadOnly: true},
		"certs": {Type: VolumeTypeHost, Source: "certs", ReadOnly: true},
		"db":    {Type: VolumeTypeHost, Source: "db", PerAlloc: true},
	}}
	task := &Task{Name: "t", VolumeMounts: []*VolumeMount{
		{Volume: "data", Destination: "/data"},
		{Volume: "data", Destination: "/data-ro", ReadOnly: true},
		{Volume: "ro", Destination: "/ro"},
		{Volume: "certs", Destination: "/certs", PropagationMode: "host-to-task"},
		{Volume: "db", Destination: "/db"},
	}}
	got, err := ResolveHostVolumeMounts(node, tg, task, "job.web[3]")
	require.NoError(t, err)
	assert.Equal(t, []HostVolumeMount{
		{HostPath: "/srv/data", Destination: "/data"},
		{HostPath: "/srv/data", Destination: "/data-ro", ReadOnly: true},
		{HostPath: "/srv/data", Destination: "/ro", ReadOnly: true},
		{HostPath: "/srv/certs", Destination: "/certs", ReadOnly: true, PropagationMode: "host-to-task"},
		{HostPath: "/srv/db3", Destination: "/db"},
	}, got)

	_, err = ResolveHostVolumeMounts(node, tg, task, "job.web[4]")
	require.ErrorContains(t, err, `volume "db": the node has no host volume "db[4]"`)
}

func TestAllocIndex(t *testing.T) {
	for name, want := range map[string]int{"j.g[0]": 0, "j.g[12]": 12, "a[1].b[7]": 7, "j.g": 0, "j.g[x]": 0} {
		assert.Equal(t, want, AllocIndex(name), name)
	}
}
