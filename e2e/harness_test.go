package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/e2e/internal/agentproc"
	"github.com/drover-project/drover/testutil/taskprocs"
)

// droverBin is the binary under test, built by TestMain (or named by
// DROVER_BIN).
var droverBin string

func TestMain(m *testing.M) {
	bin, cleanup, err := agentproc.Build("../cmd/drover") // or DROVER_BIN, prebuilt
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	droverBin = bin
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// freePort returns a TCP port that was free a moment ago on 127.0.0.1 and
// that it has not returned before.
func freePort(t testing.TB) int {
	t.Helper()
	return agentproc.FreePort(t, "127.0.0.1")
}

// agentProc is one drover agent process.
type agentProc struct {
	name     string
	dataDir  string
	config   string
	httpPort int
	rpcPort  int
	cmd      *exec.Cmd
	exited   chan struct{} // closed when cmd has been waited for
	logPath  string
}

// serverSpec describes a server agent to start.
type serverSpec struct {
	name            string
	bootstrapExpect int
	retryJoin       []string
	// extra is appended inside the server block (e.g. heartbeat settings).
	extra string
	// top is appended at the top level (e.g. an acl block).
	top string
}

// newServer writes the agent's config file and starts it on free ports.
func newServer(t testing.TB, spec serverSpec) *agentProc {
	t.Helper()
	return newServerOnPorts(t, spec, freePort(t), freePort(t))
}

// newServerOnPorts writes the agent's config file and starts it.
func newServerOnPorts(t testing.TB, spec serverSpec, httpPort, rpcPort int) *agentProc {
	t.Helper()
	dir := t.TempDir()
	p := &agentProc{name: spec.name, dataDir: filepath.Join(dir, "data"), httpPort: httpPort, rpcPort: rpcPort}
	p.config = filepath.Join(dir, "agent.hcl")
	joins := make([]string, len(spec.retryJoin))
	for i, j := range spec.retryJoin {
		joins[i] = fmt.Sprintf("%q", j)
	}
	hcl := fmt.Sprintf(`name = %q
data_dir = %q
bind_addr = "127.0.0.1"
log_level = "DEBUG"
ports {
  http = %d
  rpc  = %d
}
server {
  enabled          = true
  bootstrap_expect = %d
  server_join {
    retry_join = [%s]
  }
  %s
}
%s
`, spec.name, p.dataDir, p.httpPort, p.rpcPort, spec.bootstrapExpect, strings.Join(joins, ", "), spec.extra, spec.top)
	require.NoError(t, os.WriteFile(p.config, []byte(hcl), 0o600))
	p.logPath = filepath.Join(dir, "agent.log")
	taskprocs.Cleanup(t, p.dataDir) // after the kill below: executors outlive a killed agent
	p.start(t)
	t.Cleanup(p.kill)
	return p
}

func (p *agentProc) start(t testing.TB) {
	t.Helper()
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	require.NoError(t, err)
	p.cmd = exec.Command(droverBin, "agent", "-config", p.config)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	require.NoError(t, p.cmd.Start())
	exited := make(chan struct{})
	p.exited = exited
	cmd := p.cmd
	go func() {
		_ = cmd.Wait()
		_ = logf.Close()
		close(exited)
	}()
}

// stop sends SIGTERM and waits for a clean exit.
func (p *agentProc) stop(t testing.TB) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("agent %s did not exit on SIGTERM\n%s", p.name, p.logs())
	}
	require.True(t, p.cmd.ProcessState.Success(), "agent %s exit: %v\n%s", p.name, p.cmd.ProcessState, p.logs())
}

// kill sends SIGKILL (no clean shutdown) and waits for the process to go.
func (p *agentProc) kill() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
}

func (p *agentProc) logs() string {
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

func (p *agentProc) rpcAddr() string  { return fmt.Sprintf("127.0.0.1:%d", p.rpcPort) }
func (p *agentProc) httpAddr() string { return fmt.Sprintf("http://127.0.0.1:%d", p.httpPort) }

func (p *agentProc) client(t testing.TB) *api.Client {
	t.Helper()
	c, err := api.NewClient(&api.Config{Address: p.httpAddr()})
	require.NoError(t, err)
	return c
}

// waitLeader waits until every agent reports the same, non-empty leader and
// returns its rpc address.
func waitLeader(t testing.TB, agents ...*agentProc) string {
	t.Helper()
	return waitNewLeader(t, "", agents...)
}

// waitNewLeader is waitLeader for a leader other than old.
func waitNewLeader(t testing.TB, old string, agents ...*agentProc) string {
	t.Helper()
	var leader string
	agreed := func() bool {
		leader = ""
		for _, a := range agents {
			l, err := a.client(t).Status().Leader()
			if err != nil || l == "" || l == old || (leader != "" && l != leader) {
				return false
			}
			leader = l
		}
		return true
	}
	deadline := time.Now().Add(60 * time.Second)
	for !agreed() {
		if time.Now().After(deadline) {
			var b strings.Builder
			for _, a := range agents {
				fmt.Fprintf(&b, "\n--- %s (last lines of its log) ---\n%s", a.name, lastLines(a.logs(), 40))
			}
			t.Fatalf("no agreed leader within 60s%s", b.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return leader
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// newClientAgent starts a client-only agent that registers with servers
// (their HTTP addresses) and has raw_exec enabled.
func newClientAgent(t testing.TB, name string, servers ...string) *agentProc {
	t.Helper()
	return newClientAgentWith(t, name, "", "", servers...)
}

// newClientAgentWith is newClientAgent with extra lines inside the client
// block and extra top-level configuration.
func newClientAgentWith(t testing.TB, name, clientExtra, topExtra string, servers ...string) *agentProc {
	t.Helper()
	dir := t.TempDir()
	p := &agentProc{name: name, dataDir: filepath.Join(dir, "data"), httpPort: freePort(t), rpcPort: freePort(t)}
	p.config = filepath.Join(dir, "agent.hcl")
	quoted := make([]string, len(servers))
	for i, s := range servers {
		quoted[i] = fmt.Sprintf("%q", s)
	}
	hcl := fmt.Sprintf(`name = %q
data_dir = %q
bind_addr = "127.0.0.1"
log_level = "DEBUG"
ports {
  http = %d
  rpc  = %d
}
client {
  enabled = true
  servers = [%s]
  %s
}
plugin "raw_exec" {
  config {
    enabled = true
  }
}
%s
`, name, p.dataDir, p.httpPort, p.rpcPort, strings.Join(quoted, ", "), clientExtra, topExtra)
	require.NoError(t, os.WriteFile(p.config, []byte(hcl), 0o600))
	p.logPath = filepath.Join(dir, "agent.log")
	taskprocs.Cleanup(t, p.dataDir) // after the kill below: executors outlive a killed agent
	p.start(t)
	t.Cleanup(p.kill)
	return p
}

func (p *agentProc) httpHostPort() string { return fmt.Sprintf("127.0.0.1:%d", p.httpPort) }

// drover runs the CLI against addr and returns its exit code and output.
func drover(t testing.TB, addr string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(droverBin, args...)
	cmd.Env = append(os.Environ(), "NOMAD_ADDR="+addr)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	require.NoError(t, err)
	return 0, string(out)
}
