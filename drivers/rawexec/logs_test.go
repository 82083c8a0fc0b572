package rawexec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/drivers/logrotate"
)

// seqOutput is what `seq from to` prints.
func seqOutput(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintln(&b, i)
	}
	return b.String()
}

// requireRotated checks the files of the stream whose first file is first:
// written bytes were written to it in all, in files of exactly fileSize
// bytes but the newest, and only the newest maxFiles are left, holding the
// end of written.
func requireRotated(t *testing.T, first string, written string, fileSize int64, maxFiles int) {
	t.Helper()
	total := int64(len(written))
	count := int((total + fileSize - 1) / fileSize) // files the stream needed
	oldest := max(count-maxFiles, 0)
	prefix := strings.TrimSuffix(first, ".0")
	var kept strings.Builder
	for i := oldest; i < count; i++ {
		b, err := os.ReadFile(fmt.Sprintf("%s.%d", prefix, i))
		require.NoError(t, err, "file %d of %d", i, count)
		if i < count-1 {
			require.Equal(t, fileSize, int64(len(b)), "file %d is not full", i)
		}
		kept.Write(b)
	}
	for i := 0; i < oldest; i++ {
		_, err := os.Stat(fmt.Sprintf("%s.%d", prefix, i))
		require.ErrorIs(t, err, os.ErrNotExist, "file %d should have been deleted", i)
	}
	_, err := os.Stat(fmt.Sprintf("%s.%d", prefix, count))
	require.ErrorIs(t, err, os.ErrNotExist, "no file after the newest")
	want := written[int64(oldest)*fileSize:]
	require.Equal(t, len(want), kept.Len())
	require.True(t, want == kept.String(), "the kept files do not hold the end of the output")
}

// logFiles lists the names in the task's logs dir.
func logFiles(t *testing.T, first string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(first))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestLogsRotateAtMaxFileSizeAndKeepMaxFiles(t *testing.T) {
	d := newDriver(t)
	// About 4.8 MB of stdout and 2 MB of stderr, in files of 1 MB.
	cfg := newTask(t, "/bin/sh", "-c", "seq 1 700000; seq 1 300000 >&2")
	cfg.LogLimits = logrotate.LimitsMB(3, 1)
	start(t, d, cfg)
	require.True(t, wait(t, d, cfg.ID, 60*time.Second).Successful())

	stdout := seqOutput(1, 700000)
	require.Greater(t, len(stdout), 4*logrotate.MB)
	requireRotated(t, cfg.StdoutPath, stdout, logrotate.MB, 3)
	requireRotated(t, cfg.StderrPath, seqOutput(1, 300000), logrotate.MB, 3)
	require.ElementsMatch(t, []string{"web.stdout.2", "web.stdout.3", "web.stdout.4", "web.stderr.0", "web.stderr.1"}, logFiles(t, cfg.StdoutPath))
}

func TestRestartedTaskContinuesTheHighestLogFile(t *testing.T) {
	d := newDriver(t)
	cfg := newTask(t, "seq", "1", "200000") // 1.3 MB
	cfg.LogLimits = logrotate.LimitsMB(5, 1)
	start(t, d, cfg)
	require.True(t, wait(t, d, cfg.ID, 30*time.Second).Successful())
	require.NoError(t, d.DestroyTask(cfg.ID, false))

	start(t, d, cfg) // the task restarted: a new executor on the same files
	require.True(t, wait(t, d, cfg.ID, 30*time.Second).Successful())
	both := seqOutput(1, 200000)
	both += both
	requireRotated(t, cfg.StdoutPath, both, logrotate.MB, 5)
}

// The executor, not the client, rotates: a task started by a client
// process that is gone at once keeps rotating its logs, before and after
// another client recovers it.
func TestLogRotationGoesOnWithoutTheClient(t *testing.T) {
	cfg := newTask(t, "/bin/sh", "-c", `seq 1 200000; while [ ! -e go ]; do sleep 0.05; done; seq 200001 400000`)
	cfg.LogLimits = logrotate.LimitsMB(2, 1)
	h := startInOtherProcess(t, cfg)
	first := seqOutput(1, 200000)
	require.Eventually(t, func() bool {
		files, err := logrotate.List(cfg.StdoutPath)
		return err == nil && len(files) == 2 && files[0].Size+files[1].Size == int64(len(first))
	}, 30*time.Second, 20*time.Millisecond, "the first part was not written and rotated")

	d := newDriver(t)
	require.NoError(t, d.RecoverTask(h))
	t.Cleanup(func() { _ = d.DestroyTask(cfg.ID, true) })
	require.NoError(t, os.WriteFile(filepath.Join(cfg.TaskDir, "go"), nil, 0o644))
	require.True(t, wait(t, d, cfg.ID, 30*time.Second).Successful())
	requireRotated(t, cfg.StdoutPath, seqOutput(1, 400000), logrotate.MB, 2)
}

func TestLogsDisabledWritesNoFiles(t *testing.T) {
	d := newDriver(t)
	cfg := newTask(t, "/bin/sh", "-c", "echo out; echo err >&2")
	logDir := filepath.Dir(cfg.StdoutPath)
	cfg.StdoutPath, cfg.StderrPath = "", ""
	start(t, d, cfg)
	require.True(t, wait(t, d, cfg.ID, 10*time.Second).Successful())
	entries, err := os.ReadDir(logDir)
	if !os.IsNotExist(err) {
		require.NoError(t, err)
	}
	require.Empty(t, entries)
}
