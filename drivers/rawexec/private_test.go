package rawexec

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/drivers"
)

// taskDirFiles lists every path under dir, relative to it.
func taskDirFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if rel, _ := filepath.Rel(dir, p); rel != "." {
			out = append(out, rel)
		}
		return nil
	}))
	return out
}

// TestDriverFilesInPrivateDir: the executor's spec and exit record are
// kept in the private dir, which the handle names; the task dir holds only
// what the task wrote.
func TestDriverFilesInPrivateDir(t *testing.T) {
	d := newDriver(t)
	cfg := newTask(t, "/bin/sh", "-c", "echo x > mine; exit 6")
	h := start(t, d, cfg)
	require.Equal(t, 6, wait(t, d, cfg.ID, 10*time.Second).ExitCode)

	require.Equal(t, []string{"mine"}, taskDirFiles(t, cfg.TaskDir))
	var st State
	require.NoError(t, json.Unmarshal(h.DriverState, &st))
	require.Equal(t, filepath.Join(cfg.PrivateDir, exitFileName), st.ExitFile)
	rec, ok, err := readExitFile(st.ExitFile)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, 6, rec.ExitCode)
	fi, err := os.Stat(cfg.PrivateDir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
}

// TestStartNeedsPrivateDir: without a private dir the driver would have to
// put its files where the task can change them; it refuses instead.
func TestStartNeedsPrivateDir(t *testing.T) {
	d := newDriver(t)
	cfg := newTask(t, "/bin/true")
	cfg.PrivateDir = ""
	_, err := d.StartTask(cfg)
	require.ErrorContains(t, err, "private dir is required")
}

// TestPlantedExitFileAtOldNameIgnored: a task that writes an exit record
// where older executors kept theirs (its task dir), even one naming its
// own executor, neither ends it for a restarted client nor changes its
// exit.
func TestPlantedExitFileAtOldNameIgnored(t *testing.T) {
	a := newDriver(t)
	cfg := newTask(t, "sleep", "60")
	h := start(t, a, cfg)
	var st State
	require.NoError(t, json.Unmarshal(h.DriverState, &st))
	forged := exitRecord{ExitCode: 9, ExecutorPID: st.ExecutorPID, ExecutorStartTime: st.StartTime, TaskPID: st.TaskPID}
	require.NoError(t, writeFileAtomic(filepath.Join(cfg.TaskDir, legacyExitFileName), forged))

	b := newDriver(t)
	require.NoError(t, b.RecoverTask(roundTrip(t, h)))
	t.Cleanup(func() { _ = b.DestroyTask(cfg.ID, true) })
	stB, err := b.InspectTask(cfg.ID)
	require.NoError(t, err)
	require.Equal(t, drivers.TaskStateRunning, stB.State, "the planted record does not end the task")

	require.NoError(t, b.StopTask(cfg.ID, 5*time.Second, "SIGTERM"))
	res := wait(t, b, cfg.ID, 10*time.Second)
	require.Equal(t, int(syscall.SIGTERM), res.Signal, "the executor's record, not the planted one")
	require.NotEqual(t, 9, res.ExitCode)
}

// TestRecoverOlderClientsHandle: a handle without ExitFile (written by a
// client that kept the exit record in the task dir) still recovers: a
// running task as running, an exited one with the record found in the
// task dir.
func TestRecoverOlderClientsHandle(t *testing.T) {
	legacy := func(t *testing.T, h *drivers.TaskHandle) *drivers.TaskHandle {
		var st State
		require.NoError(t, json.Unmarshal(h.DriverState, &st))
		st.ExitFile = ""
		b, err := json.Marshal(st)
		require.NoError(t, err)
		require.NotContains(t, string(b), "ExitFile", "as an older client wrote it")
		h = roundTrip(t, h)
		h.DriverState = b
		h.Config.PrivateDir = ""
		return h
	}

	t.Run("exited", func(t *testing.T) {
		a := newDriver(t)
		cfg := newTask(t, "/bin/sh", "-c", "exit 7")
		h := start(t, a, cfg)
		require.Equal(t, 7, wait(t, a, cfg.ID, 10*time.Second).ExitCode)
		// Where the older executor wrote it.
		require.NoError(t, os.Rename(filepath.Join(cfg.PrivateDir, exitFileName), filepath.Join(cfg.TaskDir, legacyExitFileName)))

		b := newDriver(t)
		require.NoError(t, b.RecoverTask(legacy(t, h)))
		res := wait(t, b, cfg.ID, time.Second)
		require.Equal(t, 7, res.ExitCode)
		require.NoError(t, res.Err)
	})

	t.Run("running", func(t *testing.T) {
		a := newDriver(t)
		cfg := newTask(t, "sleep", "60")
		h := start(t, a, cfg)
		b := newDriver(t)
		require.NoError(t, b.RecoverTask(legacy(t, h)))
		t.Cleanup(func() { _ = b.DestroyTask(cfg.ID, true) })
		st, err := b.InspectTask(cfg.ID)
		require.NoError(t, err)
		require.Equal(t, drivers.TaskStateRunning, st.State)
		require.NoError(t, b.StopTask(cfg.ID, 5*time.Second, "SIGTERM"))
		wait(t, b, cfg.ID, 10*time.Second)
		var stA State
		require.NoError(t, json.Unmarshal(h.DriverState, &stA))
		require.False(t, processAlive(stA.TaskPID, stA.TaskStartTime), "the recovered task was stopped")
	})
}
