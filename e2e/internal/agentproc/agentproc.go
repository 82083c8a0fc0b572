package agentproc

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Build builds the drover binary into a new temporary directory (static,
// as `make build` makes it) from the module's cmd/drover, named relative to
// the calling test package's directory by pkgDir (e.g. "../cmd/drover").
// DROVER_BIN names a prebuilt binary instead. cleanup removes what Build
// made.
func Build(pkgDir string) (bin string, cleanup func(), err error) {
	if bin := os.Getenv("DROVER_BIN"); bin != "" {
		return bin, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "drover-e2e-bin-")
	if err != nil {
		return "", nil, err
	}
	bin = filepath.Join(dir, "drover")
	build := exec.Command("go", "build", "-o", bin, pkgDir)
	// Static: bridge mode's Docker pause image is the drover executable
	// itself, which must run without the host's libc.
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, fmt.Errorf("build drover: %w", err)
	}
	return bin, func() { _ = os.RemoveAll(dir) }, nil
}

// handedPorts are the host:port pairs FreePort returned in this process:
// the kernel may hand a just-closed port out again, so two calls could
// otherwise give one agent the same port twice.
var handedPorts sync.Map

// FreePort returns a TCP port that was free a moment ago on host (an IP
// address) and that it has not returned for host before.
func FreePort(t testing.TB, host string) int {
	t.Helper()
	for {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			t.Fatalf("free port on %s: %v", host, err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		_ = ln.Close()
		if _, seen := handedPorts.LoadOrStore(fmt.Sprintf("%s:%d", host, port), true); !seen {
			return port
		}
	}
}

// Proc is one drover agent process. Start it with Start; Kill is safe to
// call at any time and more than once.
type Proc struct {
	Name     string
	Bin      string // the drover binary
	Host     string // the IP address the agent binds
	HTTPPort int
	RPCPort  int
	DataDir  string
	Config   string // path of the agent's HCL file
	LogPath  string
	// SysProcAttr, if set, is used for every start (e.g. to start the
	// agent inside a cgroup).
	SysProcAttr *syscall.SysProcAttr

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
}

// Start starts the agent with its configuration file (written by the
// caller, or by WriteServerConfig). Logs are appended to LogPath.
func (p *Proc) Start() error {
	logf, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.Bin, "agent", "-config", p.Config)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = p.SysProcAttr
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logf.Close()
		close(exited)
	}()
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	p.mu.Unlock()
	return nil
}

// Pid is the running process's id (0 before the first start).
func (p *Proc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Exited reports whether the last started process has exited (true
// before the first start).
func (p *Proc) Exited() bool {
	p.mu.Lock()
	exited := p.exited
	p.mu.Unlock()
	if exited == nil {
		return true
	}
	select {
	case <-exited:
		return true
	default:
		return false
	}
}

// Signal sends sig to the running process.
func (p *Proc) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return fmt.Errorf("agent %s not started", p.Name)
	}
	return cmd.Process.Signal(sig)
}

// Kill sends SIGKILL (and SIGCONT, should it be stopped) and waits for the
// process to go.
func (p *Proc) Kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Kill()
	_ = cmd.Process.Signal(syscall.SIGCONT)
	<-exited
}

// Stop sends SIGTERM and waits up to timeout for the process to exit.
func (p *Proc) Stop(timeout time.Duration) error {
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	select {
	case <-exited:
	case <-time.After(timeout):
		return fmt.Errorf("agent %s did not exit on SIGTERM within %v", p.Name, timeout)
	}
	if !cmd.ProcessState.Success() {
		return fmt.Errorf("agent %s exit: %v", p.Name, cmd.ProcessState)
	}
	return nil
}

// Logs returns the agent's log so far.
func (p *Proc) Logs() string {
	b, _ := os.ReadFile(p.LogPath)
	return string(b)
}

// RPCAddr is host:port of the agent's RPC listener.
func (p *Proc) RPCAddr() string { return net.JoinHostPort(p.Host, fmt.Sprint(p.RPCPort)) }

// HTTPAddr is the agent's HTTP API base URL.
func (p *Proc) HTTPAddr() string {
	return "http://" + net.JoinHostPort(p.Host, fmt.Sprint(p.HTTPPort))
}

// Client returns a nomad/api client for the agent's HTTP API; timeout
// bounds every request (0: none).
func (p *Proc) Client(timeout time.Duration) (*api.Client, error) {
	cfg := &api.Config{Address: p.HTTPAddr()}
	if timeout > 0 {
		cfg.HttpClient = &http.Client{Timeout: timeout}
	}
	return api.NewClient(cfg)
}

// ServerConfig is what WriteServerConfig puts in a server agent's file.
type ServerConfig struct {
	BootstrapExpect int
	RetryJoin       []string // RPC addresses of the other servers
	Extra           string   // appended inside the server block
	Top             string   // appended at the top level
}

// WriteServerConfig writes p.Config for a server agent binding p.Host on
// p.HTTPPort and p.RPCPort, with its data in p.DataDir.
func (p *Proc) WriteServerConfig(c ServerConfig) error {
	joins := ""
	for i, j := range c.RetryJoin {
		if i > 0 {
			joins += ", "
		}
		joins += fmt.Sprintf("%q", j)
	}
	hcl := fmt.Sprintf(`name = %q
data_dir = %q
bind_addr = %q
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
`, p.Name, p.DataDir, p.Host, p.HTTPPort, p.RPCPort, c.BootstrapExpect, joins, c.Extra, c.Top)
	return os.WriteFile(p.Config, []byte(hcl), 0o600)
}

// WriteClientConfig writes p.Config for a client agent binding p.Host,
// registering with servers (their HTTP addresses), with raw_exec enabled.
func (p *Proc) WriteClientConfig(servers []string) error {
	quoted := ""
	for i, s := range servers {
		if i > 0 {
			quoted += ", "
		}
		quoted += fmt.Sprintf("%q", s)
	}
	hcl := fmt.Sprintf(`name = %q
data_dir = %q
bind_addr = %q
log_level = "DEBUG"
ports {
  http = %d
  rpc  = %d
}
client {
  enabled = true
  servers = [%s]
}
plugin "raw_exec" {
  config {
    enabled = true
  }
}
`, p.Name, p.DataDir, p.Host, p.HTTPPort, p.RPCPort, quoted)
	return os.WriteFile(p.Config, []byte(hcl), 0o600)
}
