package docker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/drivers/logrotate"
)

// fakeLogs answers ContainerLogs with a prepared multiplexed stream (the
// daemon's framing, one timestamped message per frame) of a stopped
// container.
type fakeLogs struct {
	stream []byte
	since  []string // the Since option of each call
}

func (f *fakeLogs) ContainerLogs(_ context.Context, _ string, o container.LogsOptions) (io.ReadCloser, error) {
	f.since = append(f.since, o.Since)
	return io.NopCloser(bytes.NewReader(f.stream)), nil
}

func (f *fakeLogs) ContainerInspect(context.Context, string) (container.InspectResponse, error) {
	return container.InspectResponse{ContainerJSONBase: &container.ContainerJSONBase{State: &container.State{Running: false}}}, nil
}

// daemonStream frames lines from..to-1 of stdout (and, every tenth line,
// of stderr) as the daemon does, one second apart from at; it returns the
// stream and what each log file should receive.
func daemonStream(t *testing.T, at time.Time, from, to int) (stream []byte, stdout, stderr string) {
	t.Helper()
	var buf bytes.Buffer
	outW, errW := stdcopy.NewStdWriter(&buf, stdcopy.Stdout), stdcopy.NewStdWriter(&buf, stdcopy.Stderr)
	var out, errs strings.Builder
	for i := from; i < to; i++ {
		line := fmt.Sprintf("line %08d %s\n", i, strings.Repeat("x", 400))
		w, sink := outW, &out
		if i%10 == 0 {
			w, sink = errW, &errs
		}
		ts := at.Add(time.Duration(i) * time.Second).UTC().Format(time.RFC3339Nano)
		_, err := w.Write([]byte(ts + " " + line))
		require.NoError(t, err)
		sink.WriteString(line)
	}
	return buf.Bytes(), out.String(), errs.String()
}

// readStream concatenates the kept files of a stream and checks that all
// but the newest are full.
func readStream(t *testing.T, first string, fileSize int64) (string, []logrotate.File) {
	t.Helper()
	files, err := logrotate.List(first)
	require.NoError(t, err)
	var all strings.Builder
	for i, f := range files {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(first), f.Name))
		require.NoError(t, err)
		if i < len(files)-1 {
			require.Equal(t, fileSize, int64(len(b)), f.Name)
		}
		all.Write(b)
	}
	return all.String(), files
}

func TestLogCopierRotatesAndResumesTheNewestFile(t *testing.T) {
	root := t.TempDir()
	stdoutPath := filepath.Join(root, "alloc", "logs", "web.stdout.0")
	stderrPath := filepath.Join(root, "alloc", "logs", "web.stderr.0")
	taskDir := filepath.Join(root, "web")
	require.NoError(t, os.MkdirAll(taskDir, 0o755))
	limits := logrotate.LimitsMB(2, 1)
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

	// About 2.6 MB of stdout: files .0 to .2, .0 deleted.
	stream, wantOut, wantErr := daemonStream(t, at, 0, 7000)
	fake := &fakeLogs{stream: stream}
	s := startLogStreamer(hclog.NewNullLogger(), fake, "c1", taskDir, logFiles{within: filepath.Join(root, "alloc"), stdout: stdoutPath, stderr: stderrPath, limits: limits}, time.Time{})
	<-s.done
	out, files := readStream(t, stdoutPath, logrotate.MB)
	require.Equal(t, []int{1, 2}, []int{files[0].Index, files[1].Index})
	require.True(t, strings.HasSuffix(wantOut, out), "stdout files do not hold the end of the output")
	require.Equal(t, int64(len(wantOut)), 2*logrotate.MB+files[1].Size)
	errs, _ := readStream(t, stderrPath, logrotate.MB)
	require.Equal(t, wantErr, errs)

	// A re-attached copier (a restarted client) resumes after the last
	// line copied and continues the newest file.
	since := readLogPos(taskDir)
	require.Equal(t, at.Add(6999*time.Second), since)
	more, moreOut, _ := daemonStream(t, at, 7000, 9000)
	fake = &fakeLogs{stream: append(stream, more...)} // the daemon sends from since on; old lines are dropped anyway
	s = startLogStreamer(hclog.NewNullLogger(), fake, "c1", taskDir, logFiles{within: filepath.Join(root, "alloc"), stdout: stdoutPath, stderr: stderrPath, limits: limits}, since)
	<-s.done
	require.Len(t, fake.since, 1)
	require.NotEmpty(t, fake.since[0])
	out2, files2 := readStream(t, stdoutPath, logrotate.MB)
	// .2 was continued (readStream checks that it is full), not left
	// short for a new file.
	all := wantOut + moreOut
	require.Equal(t, []int{2, 3}, []int{files2[0].Index, files2[1].Index})
	require.True(t, strings.HasSuffix(all, out2), "stdout files do not hold the end of the output")
	require.Equal(t, int64(len(all)), 3*logrotate.MB+files2[1].Size)
}

func TestLogCopierWithLogsDisabledWritesNothing(t *testing.T) {
	root := t.TempDir()
	stream, _, _ := daemonStream(t, time.Now(), 0, 100)
	s := startLogStreamer(hclog.NewNullLogger(), &fakeLogs{stream: stream}, "c1", "", logFiles{within: root}, time.Time{})
	<-s.done
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	require.Empty(t, entries)
}

// TestLogPosDir: the log position goes to the task's private dir; a
// handle of a task started without one (an older client) keeps the task
// dir, so that its restore still finds the position.
func TestLogPosDir(t *testing.T) {
	require.Equal(t, "/p", logPosDir(&drivers.TaskConfig{TaskDir: "/t", PrivateDir: "/p"}))
	require.Equal(t, "/t", logPosDir(&drivers.TaskConfig{TaskDir: "/t"}))
}
