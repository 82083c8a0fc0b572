package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/drivers/logrotate"
)

// rotatingLogAlloc runs a mock task that writes chunk 1+repeats times to
// stdout with a logs block of maxFiles files of 1 MB, and waits until all
// of it is written. It returns the client, the alloc and the stdout written.
func rotatingLogAlloc(t *testing.T, chunk string, repeats, maxFiles int, every string) (*Client, *api.Allocation, string) {
	t.Helper()
	srv := newFakeServer(t)
	cfg := testConfig(srv, t.TempDir())
	cfg.timing.logPoll = 10 * time.Millisecond
	cfg.timing.logHeartbeat = 50 * time.Millisecond
	c := startClient(t, cfg)
	waitRegistered(t, c)
	a := mockAlloc(c.NodeID(), map[string]any{
		"run_for": "1h", "stdout_string": chunk, "stdout_repeat": repeats, "stdout_repeat_duration": every,
	})
	a.Job.TaskGroups[0].Tasks[0].LogConfig = &api.LogConfig{MaxFiles: ptr(maxFiles), MaxFileSizeMB: ptr(1)}
	srv.upsertAlloc(a)
	require.Eventually(t, func() bool { return srv.clientStatus(a.ID) == "running" }, waitFor, tick)
	written := strings.Repeat(chunk, 1+repeats)
	return c, a, written
}

// waitWritten waits until the stream of the alloc's task t holds total
// bytes in all (the newest file's index tells how many came before it).
func waitWritten(t *testing.T, c *Client, a *api.Allocation, total int) {
	t.Helper()
	first := filepath.Join(c.cfg.AllocDir(), a.ID, "alloc", "logs", "t.stdout.0")
	require.Eventually(t, func() bool {
		files, err := logrotate.List(first)
		if err != nil || len(files) == 0 {
			return false
		}
		last := files[len(files)-1]
		return int64(last.Index)*logrotate.MB+last.Size == int64(total)
	}, waitFor, tick, "the task did not write %d bytes", total)
}

// lines returns n bytes of numbered lines.
func lines(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %07d\n", i)
	}
	return b.String()[:n]
}

func TestLogs_ReadAcrossRotatedFiles(t *testing.T) {
	// 3,000,000 bytes in files of 1 MiB, 2 kept: .1 (full) and .2.
	c, a, written := rotatingLogAlloc(t, lines(300_000), 9, 2, "1ms")
	waitWritten(t, c, a, len(written))
	h := c.Handler()
	base := "/v1/client/fs/logs/" + a.ID + "?task=t&type=stdout"

	_, body := getBody(t, h, base+"&plain=true")
	require.Equal(t, len(written)-logrotate.MB, len(body))
	require.True(t, written[logrotate.MB:] == body, "from the start: the kept files, oldest first")

	_, body = getBody(t, h, base+"&plain=true&origin=end&offset=1000000")
	require.True(t, written[len(written)-1_000_000:] == body, "the last 1,000,000 bytes, across both files")

	_, body = getBody(t, h, base+"&plain=true&origin=start&offset=1200000")
	require.True(t, written[logrotate.MB+1_200_000:] == body, "an offset from the start of the oldest kept file")

	// Framed: each frame names its file and the offset in it.
	_, body = getBody(t, h, base+"&origin=end&offset=1000000")
	dec := json.NewDecoder(strings.NewReader(body))
	var data []byte
	var files []string
	offsets := map[string]int64{}
	for {
		var f api.StreamFrame
		if err := dec.Decode(&f); err == io.EOF {
			break
		} else {
			require.NoError(t, err)
		}
		if len(files) == 0 || files[len(files)-1] != f.File {
			files = append(files, f.File)
		}
		if _, ok := offsets[f.File]; !ok {
			offsets[f.File] = f.Offset - int64(len(f.Data)) // where the file's first frame started
		}
		require.Greater(t, f.Offset, offsets[f.File])
		data = append(data, f.Data...)
	}
	require.Equal(t, []string{"alloc/logs/t.stdout.1", "alloc/logs/t.stdout.2"}, files)
	require.Equal(t, int64(len(written)-1_000_000-logrotate.MB), offsets["alloc/logs/t.stdout.1"])
	require.Equal(t, int64(0), offsets["alloc/logs/t.stdout.2"])
	require.True(t, written[len(written)-1_000_000:] == string(data))
}

// `nomad alloc logs -f` through the official api client follows the task
// as its stdout rotates into new files.
func TestLogs_FollowAcrossRotation(t *testing.T) {
	c, a, written := rotatingLogAlloc(t, lines(300_000), 9, 10, "20ms")
	hs := httptest.NewServer(c.Handler())
	defer hs.Close()
	apiClient, err := api.NewClient(&api.Config{Address: hs.URL})
	require.NoError(t, err)
	cancel := make(chan struct{})
	defer close(cancel)
	frames, errs := apiClient.AllocFS().Logs(&api.Allocation{ID: a.ID, NodeID: a.NodeID}, true, "t", "stdout", "start", 0, cancel, nil)
	var got bytes.Buffer
	files := map[string]bool{}
	deadline := time.After(waitFor)
	for got.Len() < len(written) {
		select {
		case f, ok := <-frames:
			require.True(t, ok, "stream ended early after %d bytes", got.Len())
			got.Write(f.Data)
			if len(f.Data) > 0 {
				files[f.File] = true
			}
		case err := <-errs:
			t.Fatalf("log stream failed: %v", err)
		case <-deadline:
			t.Fatalf("got %d of %d bytes so far", got.Len(), len(written))
		}
	}
	require.True(t, written == got.String(), "followed content differs")
	require.Equal(t, map[string]bool{"alloc/logs/t.stdout.0": true, "alloc/logs/t.stdout.1": true, "alloc/logs/t.stdout.2": true}, files)
}

func TestLogs_DisabledWritesNoFiles(t *testing.T) {
	srv := newFakeServer(t)
	cfg := testConfig(srv, t.TempDir())
	c := startClient(t, cfg)
	waitRegistered(t, c)
	a := mockAlloc(c.NodeID(), map[string]any{"run_for": "1h", "stdout_string": "hello\n"})
	a.Job.TaskGroups[0].Tasks[0].LogConfig = &api.LogConfig{Disabled: ptr(true)}
	srv.upsertAlloc(a)
	require.Eventually(t, func() bool { return srv.clientStatus(a.ID) == "running" }, waitFor, tick)
	code, body := getBody(t, c.Handler(), "/v1/client/fs/logs/"+a.ID+"?task=t&plain=true")
	require.Equal(t, http.StatusOK, code)
	require.Empty(t, body)
	files, err := logrotate.List(filepath.Join(c.cfg.AllocDir(), a.ID, "alloc", "logs", "t.stdout.0"))
	require.NoError(t, err)
	require.Empty(t, files)
}
