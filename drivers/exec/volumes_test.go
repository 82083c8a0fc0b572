package exec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/drivers"
)

func TestHostVolumeMounts(t *testing.T) {
	d := needRoot(t)
	rwDir, roDir := t.TempDir(), t.TempDir()
	require.NoError(t, os.Chmod(rwDir, 0o777)) // the task runs as nobody
	require.NoError(t, os.WriteFile(filepath.Join(roDir, "seed"), []byte("from the host\n"), 0o644))
	script := strings.Join([]string{
		`echo data > /srv/rw/out && echo rw=ok`,
		`echo "seed=$(cat /srv/ro/seed)"`,
		`if echo x > /srv/ro/evil 2>/dev/null; then echo ro=writable; else echo ro=readonly; fi`,
	}, "; ")
	cfg := newTask(t, "/bin/sh", "-c", script)
	cfg.Mounts = []*drivers.MountConfig{
		{HostPath: rwDir, TaskPath: "/srv/rw"},
		{HostPath: roDir, TaskPath: "srv/ro", ReadOnly: true, PropagationMode: "private"},
	}
	start(t, d, cfg)
	res := wait(t, d, cfg.ID, 20*time.Second)
	out := readFile(t, cfg.StdoutPath)
	require.True(t, res.Successful(), "result %s\nstdout:\n%s\nstderr:\n%s", res, out, readFile(t, cfg.StderrPath))
	require.Contains(t, out, "rw=ok\n")
	require.Contains(t, out, "seed=from the host\n")
	require.Contains(t, out, "ro=readonly\n", "a write to the read-only volume fails")
	require.Equal(t, "data\n", readFile(t, filepath.Join(rwDir, "out")), "the write reached the host directory")
	require.NoFileExists(t, filepath.Join(roDir, "evil"))
	// The mountpoints made in the task dir are gone with the task.
	_, err := os.Lstat(filepath.Join(cfg.TaskDir, "srv"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestHostVolumeMountsRefused(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name  string
		mount drivers.MountConfig
		want  string
	}{
		{"root", drivers.MountConfig{HostPath: dir, TaskPath: "/"}, "a volume cannot replace the task's root"},
		{"inside a chroot bind", drivers.MountConfig{HostPath: dir, TaskPath: "/usr/share/data"}, "overlaps /usr, which the exec driver mounts from /usr"},
		{"above a chroot bind", drivers.MountConfig{HostPath: dir, TaskPath: "/alloc/../alloc"}, "overlaps /alloc"},
		{"propagation", drivers.MountConfig{HostPath: dir, TaskPath: "/data", PropagationMode: "bidirectional"},
			`propagation_mode "bidirectional" is not supported by the exec driver`},
		{"missing host path", drivers.MountConfig{HostPath: filepath.Join(dir, "gone"), TaskPath: "/data"}, "host volume path: stat"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := newTask(t, "/bin/true")
			v := newRootView(cfg, map[string]string{"/usr": "/usr"})
			m := tc.mount
			require.ErrorContains(t, v.addVolumes([]*drivers.MountConfig{&m}), tc.want)
		})
	}
	// A volume next to the chroot binds is looked up like them.
	cfg := newTask(t, "/bin/true")
	v := newRootView(cfg, map[string]string{"/usr": "/usr"})
	require.NoError(t, v.addVolumes([]*drivers.MountConfig{{HostPath: dir, TaskPath: "/data", ReadOnly: true}}))
	require.Equal(t, filepath.Join(dir, "x"), v.hostPath("/data/x"))
	p, ro := v.readOnlyHostPath("/data/x")
	require.True(t, ro)
	require.Equal(t, filepath.Join(dir, "x"), p)
}
