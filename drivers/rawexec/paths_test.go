package rawexec

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLogSymlinkInAllocDirRefused: a symlink planted where the task's log
// goes (the logs dir is shared by the allocation's tasks) that leads out
// of the alloc dir fails the start naming the log path; the host file is
// never created.
func TestLogSymlinkInAllocDirRefused(t *testing.T) {
	d := newDriver(t)
	cfg := newTask(t, "/bin/echo", "written")
	victim := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.MkdirAll(filepath.Dir(cfg.StdoutPath), 0o755))
	require.NoError(t, os.Symlink(victim, cfg.StdoutPath))

	_, err := d.StartTask(cfg)
	require.ErrorContains(t, err, "opening stdout")
	require.ErrorContains(t, err, cfg.StdoutPath)
	require.ErrorContains(t, err, "resolves outside")
	require.NoFileExists(t, victim)

	// A symlink that stays in the alloc dir is followed.
	require.NoError(t, os.Remove(cfg.StdoutPath))
	inside := filepath.Join(cfg.AllocDir, "data", "out")
	require.NoError(t, os.Symlink(inside, cfg.StdoutPath))
	start(t, d, cfg)
	require.Equal(t, 0, wait(t, d, cfg.ID, 10*time.Second).ExitCode)
	b, err := os.ReadFile(inside)
	require.NoError(t, err)
	require.Equal(t, "written\n", string(b))
}

// TestSpecFileSymlinkNotFollowed: a symlink in the private dir where the
// executor's spec (the task's environment) is written is replaced, not
// written through.
func TestSpecFileSymlinkNotFollowed(t *testing.T) {
	d := newDriver(t)
	cfg := newTask(t, "/bin/true")
	victim := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(victim, []byte("host"), 0o600))
	require.NoError(t, os.MkdirAll(cfg.PrivateDir, 0o700))
	require.NoError(t, os.Symlink(victim, filepath.Join(cfg.PrivateDir, specFileName)))

	start(t, d, cfg)
	require.Equal(t, 0, wait(t, d, cfg.ID, 10*time.Second).ExitCode)
	b, err := os.ReadFile(victim)
	require.NoError(t, err)
	require.Equal(t, "host", string(b))
}

// TestWriteNewRefusesOutside: the spec file's path itself must stay in the
// task dir.
func TestWriteNewRefusesOutside(t *testing.T) {
	taskDir := t.TempDir()
	host := t.TempDir()
	require.NoError(t, os.Symlink(host, filepath.Join(taskDir, "sub")))
	err := writeNew(taskDir, filepath.Join(taskDir, "sub", "spec"), []byte("x"), 0o600)
	require.ErrorContains(t, err, "resolves outside")
	require.NoFileExists(t, filepath.Join(host, "spec"))
}

// TestExitFileSymlinkNotRead: a task that replaced its exit file with a
// symlink gets no read of what it points to.
func TestExitFileSymlinkNotRead(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(target, []byte(`{"ExitCode":7}`), 0o600))
	p := filepath.Join(dir, exitFileName)
	require.NoError(t, os.Symlink(target, p))
	_, ok, err := readExitFile(p)
	require.Error(t, err)
	require.False(t, ok)
}
