package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/e2e/internal/agentproc"
)

// Server is one server of the cluster: an agent process in its own cgroup
// on its own loopback address.
type Server struct {
	*agentproc.Proc
	Index int
	Cg    string // its cgroup, as the iptables cgroup match names it
	Mark  uint32 // its connections' conntrack mark (Net.MarkConns; clients only)
	// API answers through this server with a short request timeout.
	API *api.Client
}

// Cluster is a set of servers started by StartCluster.
type Cluster struct {
	Net     *Net
	Servers []*Server
	maxDisk map[string]int64 // server name -> most bytes seen in use (DiskUse)
}

// requestTimeout bounds every request of the suite's clients: an
// operation that takes longer has an unknown outcome.
const requestTimeout = 4 * time.Second

// StartCluster starts n servers on 127.0.0.<first>.. (one address each)
// and waits for them to agree on a leader. Everything it starts is
// stopped in t.Cleanup.
func StartCluster(t testing.TB, bin string, n, first int) *Cluster {
	t.Helper()
	return StartClusterWith(t, bin, n, first, "")
}

// StartClusterWith is StartCluster with serverExtra (HCL) added inside
// every server's server block (e.g. heartbeat settings).
func StartClusterWith(t testing.TB, bin string, n, first int, serverExtra string) *Cluster {
	t.Helper()
	c := &Cluster{Net: NewNet(t)}
	for i := 0; i < n; i++ {
		host := fmt.Sprintf("127.0.0.%d", first+i)
		dir := t.TempDir()
		p := &agentproc.Proc{
			Name: fmt.Sprintf("s%d", i), Bin: bin, Host: host,
			HTTPPort: agentproc.FreePort(t, host), RPCPort: agentproc.FreePort(t, host),
			DataDir: filepath.Join(dir, "data"), Config: filepath.Join(dir, "agent.hcl"),
			LogPath: filepath.Join(dir, "agent.log"),
		}
		attr, cg, err := c.Net.Cgroup(p.Name)
		if err != nil {
			t.Fatalf("chaos: cgroup for %s: %v", p.Name, err)
		}
		p.SysProcAttr = attr
		if err := os.MkdirAll(p.DataDir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := mountDisk(t, p.DataDir); err != nil {
			t.Fatalf("chaos: %v", err)
		}
		c.Servers = append(c.Servers, &Server{Proc: p, Index: i, Cg: cg})
	}
	for _, s := range c.Servers {
		var joins []string
		for _, o := range c.Servers {
			if o != s {
				joins = append(joins, o.RPCAddr())
			}
		}
		if err := s.WriteServerConfig(agentproc.ServerConfig{BootstrapExpect: n, RetryJoin: joins, Extra: serverExtra}); err != nil {
			t.Fatal(err)
		}
		if err := s.Start(); err != nil {
			t.Fatalf("chaos: start %s: %v", s.Name, err)
		}
		t.Cleanup(s.Kill)
		api, err := s.Client(requestTimeout)
		if err != nil {
			t.Fatal(err)
		}
		s.API = api
	}
	if _, err := c.WaitLeader(90 * time.Second); err != nil {
		t.Fatalf("chaos: %v\n%s", err, c.Tails(30))
	}
	return c
}

// Leader returns the index of the leader every server agrees on, or -1.
func (c *Cluster) Leader() int {
	leader := ""
	for _, s := range c.Servers {
		l, err := s.API.Status().Leader()
		if err != nil || l == "" || (leader != "" && l != leader) {
			return -1
		}
		leader = l
	}
	for _, s := range c.Servers {
		if s.RPCAddr() == leader {
			return s.Index
		}
	}
	return -1
}

// ClaimsLead reports whether server i names itself the leader.
func (c *Cluster) ClaimsLead(i int) bool {
	s := c.Servers[i]
	l, err := s.API.Status().Leader()
	return err == nil && l == s.RPCAddr()
}

// Views returns the leader each server reports ("-" for none or no answer).
func (c *Cluster) Views() string {
	out := ""
	for _, s := range c.Servers {
		l, err := s.API.Status().Leader()
		name := "-"
		if err == nil {
			for _, o := range c.Servers {
				if o.RPCAddr() == l {
					name = o.Name
				}
			}
		}
		out += fmt.Sprintf(" %s:%s", s.Name, name)
	}
	return strings.TrimSpace(out)
}

// WaitLeader waits until every server agrees on a leader and a write
// through it is acknowledged; it returns the leader's index.
func (c *Cluster) WaitLeader(timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	for {
		if l := c.Leader(); l >= 0 {
			v := &api.Variable{Path: "chaos/probe", Items: api.VariableItems{"t": time.Now().String()}}
			if _, _, err := c.Servers[l].API.Variables().Update(v, nil); err == nil {
				return l, nil
			}
		}
		if time.Now().After(deadline) {
			return -1, fmt.Errorf("no agreed leader acknowledging writes within %v", timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Tails returns the last n lines of every server's log.
func (c *Cluster) Tails(n int) string {
	out := ""
	for _, s := range c.Servers {
		out += fmt.Sprintf("\n--- %s (%s, last lines) ---\n%s", s.Name, s.Host, lastLines(s.Logs(), n))
	}
	return out
}

// Fault is carried out on the cluster by Apply, which returns what to do
// to heal it and the window during which a server (or none) is cut off
// from its majority.
func (c *Cluster) Apply(f Fault, leader int) (heal func() error, cutOff int, err error) {
	others := func(i int) []*Server {
		var out []*Server
		for _, s := range c.Servers {
			if s.Index != i {
				out = append(out, s)
			}
		}
		return out
	}
	isolate := func(i int) (func() error, int, error) {
		s := c.Servers[i]
		for _, o := range others(i) {
			if err := c.Net.Cut(s.Cg, s.Host, o.Cg, o.Host); err != nil {
				return c.Net.Heal, i, err
			}
		}
		return c.Net.Heal, i, nil
	}
	switch f.Kind {
	case PartitionServer:
		fs := others(leader)
		return isolate(fs[f.Pick%len(fs)].Index)
	case PartitionLeader:
		return isolate(leader)
	case Asymmetric:
		s := c.Servers[leader]
		for _, o := range others(leader) {
			if err := c.Net.Drop(s.Cg, o.Host); err != nil {
				return c.Net.Heal, leader, err
			}
		}
		return c.Net.Heal, leader, nil
	case PauseLeader:
		s := c.Servers[leader]
		if err := s.Signal(syscall.SIGSTOP); err != nil {
			return func() error { return nil }, -1, err
		}
		return func() error { return s.Signal(syscall.SIGCONT) }, -1, nil
	case KillRestart:
		s := c.Servers[f.Pick%len(c.Servers)]
		s.Kill()
		return s.Start, -1, nil
	case DiskFull:
		s := c.DiskTarget(f)
		free, err := fillDisk(s.DataDir)
		if err != nil {
			if free != nil {
				_ = free()
			}
			return func() error { return nil }, -1, fmt.Errorf("fill the disk of %s: %w", s.Name, err)
		}
		stopBallast := c.writeBallast()
		return func() error {
			stopBallast()
			if err := free(); err != nil {
				return err
			}
			if s.Exited() { // it may stop on a full disk: it must come back on its data
				return s.Start()
			}
			return nil
		}, -1, nil
	case Loss:
		for _, s := range c.Servers {
			for _, o := range others(s.Index) {
				if err := c.Net.Loss(s.Cg, o.Host, f.Loss); err != nil {
					return c.Net.Heal, -1, err
				}
			}
		}
		return c.Net.Heal, -1, nil
	}
	return nil, -1, fmt.Errorf("unknown fault %q", f.Kind)
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// writeBallast writes 32 KiB variables (chaos/ballast/0..49, not part of
// the checked history) through every server in turn until the returned
// function is called, so the raft log grows and a full disk is written
// to within the hold. Refused writes are expected and ignored.
func (c *Cluster) writeBallast() (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	pad := strings.Repeat("x", 32<<10)
	go func() {
		defer close(finished)
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			s := c.Servers[i%len(c.Servers)]
			v := &api.Variable{Path: fmt.Sprintf("chaos/ballast/%d", i%50), Items: api.VariableItems{"pad": pad}}
			_, _, _ = s.API.Variables().Update(v, nil)
		}
	}()
	return func() { close(done); <-finished }
}

// DiskTarget is the server whose disk a DiskFull fault fills.
func (c *Cluster) DiskTarget(f Fault) *Server { return c.Servers[f.Pick%len(c.Servers)] }

// noSpaceLines counts the lines of s's log that report a full disk and
// returns the last.
func noSpaceLines(s *Server) (n int, last string) {
	for _, l := range strings.Split(s.Logs(), "\n") {
		if strings.Contains(l, "no space left on device") {
			n, last = n+1, l
		}
	}
	return n, last
}
