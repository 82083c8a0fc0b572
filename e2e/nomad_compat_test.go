package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/testutil/taskprocs"
)

// The binary answers the same under the name `nomad`, as the nomad/api
// test harness runs it.
func TestBinaryAsNomad(t *testing.T) {
	nomad := filepath.Join(t.TempDir(), "nomad")
	require.NoError(t, os.Symlink(droverBin, nomad))
	want, err := exec.Command(droverBin, "version").CombinedOutput()
	require.NoError(t, err)
	require.Contains(t, string(want), "Drover v")
	for _, args := range [][]string{{"version"}, {"-version"}} {
		out, err := exec.Command(nomad, args...).CombinedOutput()
		require.NoError(t, err, "nomad %v: %s", args, out)
		require.Equal(t, string(want), string(out), "nomad %v", args)
	}
}

// A dev agent started the way the nomad/api test harness starts one (JSON
// configuration with Nomad's keys, in a file without an extension, plus
// -dev) publishes a signing key, listens on its serf port, warns about the
// keys it ignores, and stops
// on SIGINT within two seconds with exit code 0.
func TestDevAgentWithNomadConfigStopsQuickly(t *testing.T) {
	dir := t.TempDir()
	httpPort, rpcPort, serfPort := freePort(t), freePort(t), freePort(t)
	cfg := fmt.Sprintf(`{"name":"node-%d","data_dir":%q,"disable_update_check":true,"log_level":"INFO",
"ports":{"http":%d,"rpc":%d,"serf":%d},"server":{"enabled":true,"bootstrap_expect":1,"raft_protocol":3},
"client":{"enabled":true,"options":{"test.tighten_network_timeouts":"true"}},
"vault":{"enabled":false},"acl":{"enabled":false},"telemetry":{"prometheus_metrics":false}}`,
		httpPort, filepath.Join(dir, "data"), httpPort, rpcPort, serfPort)
	cfgPath := filepath.Join(dir, "nomad123456")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o600))
	logPath := filepath.Join(dir, "agent.log")
	logf, err := os.Create(logPath)
	require.NoError(t, err)
	defer logf.Close()
	taskprocs.Cleanup(t, dir)
	cmd := exec.Command(droverBin, "agent", "-config", cfgPath, "-dev")
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	logs := func() string { b, _ := os.ReadFile(logPath); return string(b) }

	base := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/.well-known/jwks.json")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var set struct{ Keys []any }
		return resp.StatusCode == 200 && json.NewDecoder(resp.Body).Decode(&set) == nil && len(set.Keys) > 0
	}, 20*time.Second, 100*time.Millisecond, "a signing key is published\n%s", logs())
	// The dev client is registered and long-polling its allocations.
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/v1/nodes")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var nodes []struct{ Status string }
		return json.NewDecoder(resp.Body).Decode(&nodes) == nil && len(nodes) == 1 && nodes[0].Status == "ready"
	}, 20*time.Second, 100*time.Millisecond, "the dev client registers\n%s", logs())

	// ports.serf is a second entrance to the rpc port (`agent join` may
	// name a server by it).
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", serfPort), 2*time.Second)
	require.NoError(t, err, "the serf port listens\n%s", logs())
	conn.Close()

	start := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	select {
	case err := <-exited:
		require.NoError(t, err, "clean exit\n%s", logs())
	case <-time.After(5 * time.Second):
		t.Fatalf("agent did not stop within 5s\n%s", logs())
	}
	took := time.Since(start)
	require.Less(t, took, 2*time.Second, "graceful shutdown within 2s\n%s", logs())
	out := logs()
	require.NotContains(t, out, "Error during shutdown")
	for _, key := range []string{"vault", "telemetry", "disable_update_check", "server.raft_protocol"} {
		require.Equal(t, 1, strings.Count(out, "key="+key+"\n"), "one warning naming %s\n%s", key, out)
	}
	require.NotContains(t, out, "key=ports.serf", "Drover acts on ports.serf")
	require.NotContains(t, out, "key=acl\n", "Drover acts on the acl block")
}
