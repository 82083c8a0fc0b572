package agent

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// readLogs reads a task's whole stdout through the api client, as `nomad
// alloc logs` does without -f.
func readLogs(t *testing.T, c *api.Client, alloc *api.Allocation, origin string, offset int64) string {
	t.Helper()
	cancel := make(chan struct{})
	defer close(cancel)
	frames, errs := c.AllocFS().Logs(alloc, false, "server", "stdout", origin, offset, cancel, nil)
	var out bytes.Buffer
	for {
		select {
		case f, ok := <-frames:
			if !ok {
				return out.String()
			}
			out.Write(f.Data)
		case err := <-errs:
			t.Fatalf("reading logs: %v", err)
		case <-time.After(20 * time.Second):
			t.Fatalf("logs did not end; %d bytes so far", out.Len())
		}
	}
}

// TestContractAllocLogsRotated: a raw_exec task's logs block is enforced
// (files of max_file_size MB, max_files kept) and `alloc logs` reads the
// newest output across the rotated files.
func TestContractAllocLogsRotated(t *testing.T) {
	_, c := newDevAgent(t)
	job := testJob("web")
	task := job.TaskGroups[0].Tasks[0]
	task.SetConfig("command", "/bin/sh").SetConfig("args", []string{"-c", "seq 1 450000; exec sleep 3600"})
	task.LogConfig = &api.LogConfig{MaxFiles: new(2), MaxFileSizeMB: new(1)}
	registerAndWait(t, c, job)
	var alloc *api.Allocation
	require.Eventually(t, func() bool {
		stubs, _, err := c.Jobs().Allocations("web", false, nil)
		if err != nil || len(stubs) != 1 || stubs[0].ClientStatus != "running" {
			return false
		}
		alloc, _, err = c.Allocations().Info(stubs[0].ID, nil)
		return err == nil
	}, 20*time.Second, 50*time.Millisecond)

	var want strings.Builder
	for i := 1; i <= 450000; i++ {
		fmt.Fprintln(&want, i)
	}
	const mb = 1 << 20
	written := want.String() // about 3 MB: .0 and .1 full, .2 the rest
	sizes := map[string]int64{}
	require.Eventually(t, func() bool {
		entries, _, err := c.AllocFS().List(alloc, "alloc/logs", nil)
		if err != nil {
			return false
		}
		clear(sizes)
		for _, e := range entries {
			sizes[e.Name] = e.Size
		}
		return sizes["server.stdout.2"] == int64(len(written)-2*mb)
	}, 30*time.Second, 50*time.Millisecond, "the task's output was not written and rotated: %v", sizes)
	require.Equal(t, map[string]int64{"server.stdout.1": mb, "server.stdout.2": int64(len(written) - 2*mb), "server.stderr.0": 0}, sizes,
		"two stdout files are kept, the first is gone")

	got := readLogs(t, c, alloc, "start", 0)
	require.Equal(t, len(written)-mb, len(got))
	require.True(t, written[mb:] == got, "alloc logs reads the kept files in order")
	require.Equal(t, written[len(written)-20:], readLogs(t, c, alloc, "end", 20))
	require.Equal(t, written[len(written)-mb-20:], readLogs(t, c, alloc, "end", mb+20), "an offset from the end reaches into the older file")
}
