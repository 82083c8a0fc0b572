//go:build linux

package exec

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/helper/pathguard"
)

// hostDir returns a directory outside any task dir, standing for a host
// path a task must not reach (/etc, /root), with a marker file in it.
func hostDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "marker"), []byte("host"), 0o600))
	return dir
}

// requireUntouched checks that dir still has mode 0700, root's ownership
// (or the test's) and only the marker in it.
func requireUntouched(t *testing.T, dir string) {
	t.Helper()
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "mode of %s", dir)
	require.Equal(t, uint32(os.Getuid()), fi.Sys().(*syscall.Stat_t).Uid, "owner of %s", dir)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing is created in %s", dir)
}

// TestPrepareTaskDirsRefusesSymlinks: local/, secrets/ or tmp/ replaced by
// a symlink to a host directory must not make the driver chown or chmod
// the host directory.
func TestPrepareTaskDirsRefusesSymlinks(t *testing.T) {
	for _, name := range []string{"local", "secrets", "tmp"} {
		t.Run(name, func(t *testing.T) {
			host := hostDir(t)
			taskDir := t.TempDir()
			require.NoError(t, os.Symlink(host, filepath.Join(taskDir, name)))
			nobody := uint32(65534)
			err := prepareTaskDirs(taskDir, &nobody, &nobody)
			require.ErrorIs(t, err, pathguard.ErrOutside)
			require.ErrorContains(t, err, filepath.Join(taskDir, name))
			require.ErrorContains(t, err, "leaves the task directory")
			requireUntouched(t, host)
		})
	}

	// A symlink that stays inside the task dir is followed.
	taskDir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(taskDir, "elsewhere"), 0o755))
	require.NoError(t, os.Symlink("elsewhere", filepath.Join(taskDir, "local")))
	require.NoError(t, prepareTaskDirs(taskDir, nil, nil))
}

// TestPrepareRootRefusesSymlinkedMountpoints: a directory of the task's
// root replaced by a symlink to a host directory must not make the
// executor create a mountpoint there.
func TestPrepareRootRefusesSymlinkedMountpoints(t *testing.T) {
	src := t.TempDir() // a chroot_env source
	for _, tc := range []struct{ name, link, dst string }{
		{"parent of a chroot_env target", "opt", "/opt/tool"},
		{"the alloc mountpoint", "alloc", "/alloc"},
		{"the proc mountpoint", "proc", "/proc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := hostDir(t)
			root := t.TempDir()
			require.NoError(t, os.Symlink(host, filepath.Join(root, tc.link)))
			created, err := prepareRoot(&isoSpec{Root: root, Binds: []bind{{Src: src, Dst: tc.dst, ReadOnly: true}}})
			require.ErrorIs(t, err, pathguard.ErrOutside)
			require.ErrorContains(t, err, filepath.Join(root, tc.link))
			removeCreated(root, created)
			requireUntouched(t, host)
		})
	}
}

// TestRemoveCreatedSkipsRedirectedPaths: a mountpoint's parent the task
// replaced by a symlink after the start must not make the cleanup remove
// the host's file of the same name.
func TestRemoveCreatedSkipsRedirectedPaths(t *testing.T) {
	src := t.TempDir()
	root := t.TempDir()
	created, err := prepareRoot(&isoSpec{Root: root, Binds: []bind{{Src: src, Dst: "/opt/tool"}}})
	require.NoError(t, err)
	require.Contains(t, created, filepath.Join(root, "opt", "tool"))

	// The task swaps /opt for a symlink to a host dir holding an empty
	// "tool".
	host := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(host, "tool"), 0o755))
	require.NoError(t, os.Remove(filepath.Join(root, "opt", "tool")))
	require.NoError(t, os.Remove(filepath.Join(root, "opt")))
	require.NoError(t, os.Symlink(host, filepath.Join(root, "opt")))

	removeCreated(root, created)
	require.DirExists(t, filepath.Join(host, "tool"), "the host's directory stays")
}

// TestResolveCommandInTheTaskRoot: the command is looked up the way the
// task will see it. A symlink to an absolute path leads into the task's
// root, not the host's, so a host binary the task cannot reach is not
// found through it; one that stays in the root works.
func TestResolveCommandInTheTaskRoot(t *testing.T) {
	root := t.TempDir()
	cfg := &drivers.TaskConfig{TaskDir: filepath.Join(root, "web"), AllocDir: filepath.Join(root, "alloc")}
	local := filepath.Join(cfg.TaskDir, "local")
	require.NoError(t, os.MkdirAll(local, 0o755))
	require.NoError(t, os.MkdirAll(cfg.AllocDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(local, "real"), []byte("#!/bin/sh\n"), 0o755))

	host := t.TempDir()
	hostBinary := filepath.Join(host, "tool")
	require.NoError(t, os.WriteFile(hostBinary, []byte("#!/bin/sh\n"), 0o755))

	links := map[string]string{
		"local/to-host":      hostBinary,         // absolute: the task's /<host>/tool, which does not exist
		"local/up-and-out":   "../../../" + host, // climbs past the root: stops at the task's "/"
		"local/in-root":      "/local/real",      // absolute, inside the root
		"local/in-root-rel":  "real",
		"local/through-bind": "/bin/env", // into a chroot_env bind
		"alloc-link":         "/alloc/x", // into the alloc dir
	}
	for name, target := range links {
		require.NoError(t, os.Symlink(target, filepath.Join(cfg.TaskDir, name)))
	}
	require.NoError(t, os.WriteFile(filepath.Join(cfg.AllocDir, "x"), []byte("#!/bin/sh\n"), 0o755))
	tools := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(tools, "tool"), []byte("#!/bin/sh\n"), 0o755))
	v := newRootView(cfg, map[string]string{"/usr/bin": "/bin", tools: "/opt/tools"})

	for _, cmd := range []string{"/local/to-host", "/local/up-and-out/tool"} {
		_, err := v.resolveCommand(cmd)
		require.ErrorIs(t, err, os.ErrNotExist, cmd)
	}
	for cmd, host := range map[string]string{
		"/local/in-root":      filepath.Join(local, "real"),
		"/local/in-root-rel":  filepath.Join(local, "real"),
		"/local/through-bind": "/usr/bin/env",
		"/alloc-link":         filepath.Join(cfg.AllocDir, "x"),
		"/opt/tools/tool":     filepath.Join(tools, "tool"), // a bind below a directory not made yet
	} {
		p, err := v.resolveCommand(cmd)
		require.NoError(t, err, cmd)
		require.Equal(t, cmd, p)
		got, err := v.resolveInRoot(cmd)
		require.NoError(t, err)
		require.Equal(t, host, got, cmd)
	}
}

// TestPlantedSymlinkRefusedAtStart runs the whole path: a task running as
// root replaces its local/ with a symlink to a host directory; its next
// start fails naming the path, and the host directory is untouched.
func TestPlantedSymlinkRefusedAtStart(t *testing.T) {
	d := needRoot(t)
	host := hostDir(t)
	cfg := newTask(t, "/bin/sh", "-c", "rm -rf /local && ln -s "+host+" /local")
	cfg.User = "root"
	start(t, d, cfg)
	res := wait(t, d, cfg.ID, 30e9)
	require.Equal(t, 0, res.ExitCode, readFile(t, cfg.StderrPath))
	require.NoError(t, d.DestroyTask(cfg.ID, true))

	cfg.Config = map[string]any{"command": "/bin/true"}
	cfg.User = ""
	_, err := d.StartTask(cfg)
	require.ErrorContains(t, err, filepath.Join(cfg.TaskDir, "local"))
	require.ErrorContains(t, err, "leaves the task directory")
	requireUntouched(t, host)
}

// TestPlantedLogSymlinkRefusedAtStart: a task of the allocation plants a
// symlink where another task's log file goes; that task's start fails
// naming it and the host file is never created.
func TestPlantedLogSymlinkRefusedAtStart(t *testing.T) {
	d := needRoot(t)
	host := hostDir(t)
	victim := filepath.Join(host, "authorized_keys")
	planter := newTask(t, "/bin/sh", "-c", "ln -s "+victim+" /alloc/logs/web.stdout.0")
	planter.ID, planter.TaskName = "alloc1/plant", "plant"
	planter.TaskDir = filepath.Join(filepath.Dir(planter.TaskDir), "plant")
	planter.StdoutPath = filepath.Join(planter.AllocDir, "logs", "plant.stdout.0")
	planter.StderrPath = filepath.Join(planter.AllocDir, "logs", "plant.stderr.0")
	planter.User = "root"
	start(t, d, planter)
	res := wait(t, d, planter.ID, 30e9)
	require.Equal(t, 0, res.ExitCode, readFile(t, planter.StderrPath))

	web := *planter
	web.ID, web.TaskName = "alloc1/web", "web"
	web.TaskDir = filepath.Join(filepath.Dir(planter.TaskDir), "web")
	web.StdoutPath = filepath.Join(planter.AllocDir, "logs", "web.stdout.0")
	web.StderrPath = filepath.Join(planter.AllocDir, "logs", "web.stderr.0")
	web.User = ""
	web.Config = map[string]any{"command": "/bin/sh", "args": []any{"-c", "echo ssh-rsa attacker"}}
	_, err := d.StartTask(&web)
	require.ErrorContains(t, err, web.StdoutPath)
	require.ErrorContains(t, err, "resolves outside")
	require.NoFileExists(t, victim)
}
