package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const logRotationJobHCL = `
job "logrot" {
  type        = "system"
  datacenters = ["dc1"]
  group "g" {
    task "server" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "seq 1 200000; while [ ! -e go ]; do sleep 0.1; done; seq 200001 450000; exec sleep 3600"]
      }
      logs {
        max_files     = 2
        max_file_size = 1
      }
      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
`

// TestLogRotationWhileTheClientIsDown: the executor enforces a raw_exec
// task's logs block (files of max_file_size MB, max_files kept) while its
// client is down, and `alloc logs` of the restarted client reads the
// newest output across the rotated files.
func TestLogRotationWhileTheClientIsDown(t *testing.T) {
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(t, srv)
	c := srv.client(t)
	client := newClientAgent(t, "client-1", srv.httpHostPort())
	waitReadyNodes(t, c, 1)
	code, out := drover(t, srv.httpAddr(), "job", "run", "-detach", writeJobFile(t, logRotationJobHCL))
	require.Equal(t, 0, code, out)
	var allocID string
	require.Eventually(t, func() bool {
		for _, a := range runningAllocs(t, c, "logrot") {
			allocID = a.ID
		}
		return allocID != ""
	}, 60*time.Second, 200*time.Millisecond)

	const mb = 1 << 20
	var want strings.Builder
	firstPart := 0 // bytes written before the task waits
	for i := 1; i <= 450000; i++ {
		fmt.Fprintln(&want, i)
		if i == 200000 {
			firstPart = want.Len()
		}
	}
	written := want.String() // about 3 MB: .0 and .1 full, .2 the rest
	logDir := filepath.Join(client.dataDir, "alloc", allocID, "alloc", "logs")
	sizes := func() map[string]int64 {
		out := map[string]int64{}
		entries, _ := os.ReadDir(logDir)
		for _, e := range entries {
			if info, err := e.Info(); err == nil {
				out[e.Name()] = info.Size()
			}
		}
		return out
	}
	require.Eventually(t, func() bool { return sizes()["server.stdout.1"] == int64(firstPart-mb) }, 30*time.Second, 50*time.Millisecond,
		"the first part rotated into .1: %v", sizes())

	// The client goes down; the task writes the rest.
	client.kill()
	require.NoError(t, os.WriteFile(filepath.Join(client.dataDir, "alloc", allocID, "server", "go"), nil, 0o644))
	require.Eventually(t, func() bool { return sizes()["server.stdout.2"] == int64(len(written)-2*mb) }, 30*time.Second, 50*time.Millisecond,
		"the rest was not written and rotated without the client: %v", sizes())
	require.Equal(t, map[string]int64{"server.stdout.1": mb, "server.stdout.2": int64(len(written) - 2*mb), "server.stderr.0": 0}, sizes(),
		"two stdout files kept, the first deleted")

	client.start(t)
	require.Eventually(t, func() bool {
		code, _ := drover(t, srv.httpAddr(), "alloc", "logs", "-tail", "-c", "20", allocID[:8])
		return code == 0
	}, 30*time.Second, 200*time.Millisecond, "alloc logs after the client restarted")
	code, out = drover(t, srv.httpAddr(), "alloc", "logs", "-tail", "-c", "20", allocID[:8])
	require.Equal(t, 0, code, out)
	require.Equal(t, written[len(written)-20:], out)
	code, out = drover(t, srv.httpAddr(), "alloc", "logs", allocID[:8])
	require.Equal(t, 0, code)
	require.Equal(t, len(written)-mb, len(out))
	require.True(t, written[mb:] == out, "alloc logs reads the kept files in order")
}
