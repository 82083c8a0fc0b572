package docker

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/docker/docker/api/types/mount"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/drivers"
)

func TestHostVolumeBindMounts(t *testing.T) {
	e := newEnv(t)
	ref, _ := e.push("web", "hostvol", "1", 0)
	rwDir, roDir := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(roDir, "seed"), []byte("from the host\n"), 0o644))
	mounts := []*drivers.MountConfig{
		{HostPath: rwDir, TaskPath: "/srv/rw", PropagationMode: "private"},
		{HostPath: roDir, TaskPath: "srv/ro", ReadOnly: true}, // relative: from the container's root
	}

	// Volumes are not enabled in the plugin config: host volumes are the
	// operator's and are mounted anyway. The task writes to the writable
	// volume and reads the read-only one.
	cfg, _ := e.taskConfig(ref, map[string]any{"args": anySlice([]string{"probe", "write", "/srv/rw/out", "cat", "/srv/ro/seed"})})
	cfg.Mounts = mounts
	h := e.start(cfg)
	res := e.wait(cfg.ID)
	require.True(t, res.Successful(), res.String())
	b, err := os.ReadFile(filepath.Join(rwDir, "out"))
	require.NoError(t, err)
	require.Equal(t, "written by probe\n", string(b), "the write reached the host directory")
	eventuallyContains(t, cfg.StdoutPath, "from the host")

	var st State
	require.NoError(t, json.Unmarshal(h.DriverState, &st))
	ins, err := e.cli.ContainerInspect(context.Background(), st.ContainerID)
	require.NoError(t, err)
	got := map[string]mount.Mount{}
	for _, m := range ins.HostConfig.Mounts {
		got[m.Target] = m
	}
	require.Equal(t, rwDir, got["/srv/rw"].Source)
	require.False(t, got["/srv/rw"].ReadOnly)
	require.Equal(t, mount.PropagationRPrivate, got["/srv/rw"].BindOptions.Propagation)
	require.Equal(t, roDir, got["/srv/ro"].Source)
	require.True(t, got["/srv/ro"].ReadOnly)
	require.Equal(t, mount.PropagationRPrivate, got["/srv/ro"].BindOptions.Propagation)

	// A write to the read-only volume fails.
	cfg2, _ := e.taskConfig(ref, map[string]any{"args": anySlice([]string{"probe", "write", "/srv/ro/evil"})})
	cfg2.Mounts = mounts
	e.start(cfg2)
	res = e.wait(cfg2.ID)
	require.Equal(t, 3, res.ExitCode, res.String())
	eventuallyContains(t, cfg2.StderrPath, "read-only file system")
	require.NoFileExists(t, filepath.Join(roDir, "evil"))

	// A host volume path removed since the client started is a recoverable
	// start error, not a container without its volume.
	cfg3, _ := e.taskConfig(ref, nil)
	cfg3.Mounts = []*drivers.MountConfig{{HostPath: filepath.Join(rwDir, "gone"), TaskPath: "/x"}}
	_, err = e.d.StartTask(cfg3)
	require.ErrorContains(t, err, `volume_mount destination "/x": host volume path`)
	require.True(t, drivers.IsRecoverable(err))
}

// Propagation other than private needs a shared (or slave) host mount,
// which test hosts may not have: the mapping is checked without Docker.
func TestHostVolumePropagation(t *testing.T) {
	dir := t.TempDir()
	for mode, want := range map[string]mount.Propagation{
		"": mount.PropagationRPrivate, "private": mount.PropagationRPrivate,
		"host-to-task": mount.PropagationRSlave, "bidirectional": mount.PropagationRShared,
	} {
		ms, err := hostVolumeMounts(&drivers.TaskConfig{Mounts: []*drivers.MountConfig{{HostPath: dir, TaskPath: "/v", PropagationMode: mode}}})
		require.NoError(t, err)
		require.Len(t, ms, 1)
		require.Equal(t, mount.Mount{Type: mount.TypeBind, Source: dir, Target: "/v",
			BindOptions: &mount.BindOptions{Propagation: want}}, ms[0], mode)
	}
	_, err := hostVolumeMounts(&drivers.TaskConfig{Mounts: []*drivers.MountConfig{{HostPath: dir, TaskPath: "/v", PropagationMode: "shared"}}})
	require.ErrorContains(t, err, `unknown propagation_mode "shared"`)
}
