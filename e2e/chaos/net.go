package chaos

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Net cuts links between cluster members. Each member runs in its own
// cgroup (cgroup2); a link from member a to address b is cut by a rule in
// this run's own iptables chain (DROVER-CHAOS-<pid>, jumped to from
// OUTPUT) that drops packets sent by a's cgroup to b's address. On
// loopback every packet passes OUTPUT in the sender's socket, so matching
// the sender's cgroup names the source even though the kernel gives every
// loopback connection the source address 127.0.0.1. Traffic of other
// processes (the test's own workers included) is never matched.
//
// A member's packets to an address are not all of a link: on loopback a
// connection's source address is 127.0.0.1, so the answers a peer sends
// on a connection the member opened go to 127.0.0.1 and pass a rule on the
// member's address. For members that must be cut off completely (a client
// whose open blocking queries would otherwise still be answered),
// MarkConns marks every connection the member opens (conntrack mark, from
// the first packet, in a second chain that Heal leaves alone) and
// DropConns drops both directions of the marked connections.
type Net struct {
	chain     string
	markChain string // CONNMARK rules, never flushed by Heal
	cgRoot    string // the cgroup2 mount
	cgDir     string // this run's cgroup, below cgRoot
	mu        sync.Mutex
	rules     int
	marks     uint32 // conntrack marks handed out
	fds       []int  // open cgroup directories
}

// connMarkMask is the part of a connection's conntrack mark that MarkConns
// sets (other users of the mark keep the rest).
const connMarkMask = 0x0fff0000

// marksPerNet is how many marks one Net hands out. Each process's Net takes
// its own range of them (by pid: markBase), so that two suites running at
// once (a long run beside CI) never drop each other's connections: the
// DROP rules of every chain see every connection of the machine.
const marksPerNet = 16

// markBase is the first mark of the range of the process with pid (255
// ranges of marksPerNet fit in connMarkMask).
func markBase(pid int) uint32 { return uint32(pid%255) * marksPerNet }

// cgroup2Root returns the mount point of the cgroup2 hierarchy.
func cgroup2Root() (string, error) {
	f, err := os.Open("/proc/mounts")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 3 && fields[2] == "cgroup2" {
			return fields[1], nil
		}
	}
	return "", fmt.Errorf("no cgroup2 hierarchy mounted")
}

// iptables runs iptables -w with args.
func iptables(args ...string) error {
	out, err := exec.Command("iptables", append([]string{"-w", "5"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// NewNet creates this run's chain and cgroup and registers their removal
// (and a check that nothing is left) with t.Cleanup. It skips the test when
// the machine cannot do it (not root, no iptables, no cgroup2).
func NewNet(t testing.TB) *Net {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIP chaos: needs root for iptables and cgroups")
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		t.Skip("SKIP chaos: no iptables on PATH")
	}
	root, err := cgroup2Root()
	if err != nil {
		t.Skipf("SKIP chaos: %v", err)
	}
	n := &Net{chain: fmt.Sprintf("DROVER-CHAOS-%d", os.Getpid()), cgRoot: root}
	n.markChain = n.chain + "-M"
	n.cgDir = filepath.Join(root, n.chain)
	// A chain of this name can only be left by a killed earlier process
	// with the same pid: remove it first.
	n.removeChain()
	if err := os.Mkdir(n.cgDir, 0o755); err != nil && !os.IsExist(err) {
		t.Skipf("SKIP chaos: create cgroup: %v", err)
	}
	t.Cleanup(func() { n.close(t) })
	if err := iptables("-N", n.chain); err != nil {
		t.Fatalf("chaos: %v", err)
	}
	if err := iptables("-I", "OUTPUT", "-j", n.chain); err != nil {
		t.Fatalf("chaos: %v", err)
	}
	if err := iptables("-N", n.markChain); err != nil {
		t.Fatalf("chaos: %v", err)
	}
	// Marks first: a connection's first packet is marked before any drop
	// rule sees it.
	if err := iptables("-I", "OUTPUT", "-j", n.markChain); err != nil {
		t.Fatalf("chaos: %v", err)
	}
	// Probe the cgroup match once, so a kernel without it skips here
	// rather than failing mid-run.
	if err := iptables("-A", n.chain, "-m", "cgroup", "--path", n.chain, "-j", "RETURN"); err != nil {
		t.Skipf("SKIP chaos: iptables cgroup match unavailable: %v", err)
	}
	if err := iptables("-F", n.chain); err != nil {
		t.Fatalf("chaos: %v", err)
	}
	return n
}

// Chain is the name of this run's iptables chain.
func (n *Net) Chain() string { return n.chain }

// Cgroup creates member's cgroup and returns a SysProcAttr that starts a
// process inside it, and its path as the cgroup match names it.
func (n *Net) Cgroup(member string) (*syscall.SysProcAttr, string, error) {
	dir := filepath.Join(n.cgDir, member)
	if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
		return nil, "", err
	}
	fd, err := syscall.Open(dir, syscall.O_DIRECTORY|syscall.O_RDONLY, 0)
	if err != nil {
		return nil, "", err
	}
	n.mu.Lock()
	n.fds = append(n.fds, fd)
	n.mu.Unlock()
	// The fd stays open for the run: every restart of the member clones
	// into it. Setpgid keeps a SIGSTOP of the agent from touching the
	// test; Pdeathsig kills the agent should the test process die without
	// its cleanups (a go test timeout).
	return &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd, Setpgid: true, Pdeathsig: syscall.SIGKILL}, n.chain + "/" + member, nil
}

// Drop cuts the link from the member in cgroup fromCg to address to
// (packets from from to to are dropped; the other direction is untouched).
func (n *Net) Drop(fromCg, to string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.rules++
	return iptables("-A", n.chain, "-m", "cgroup", "--path", fromCg, "-d", to, "-j", "DROP")
}

// Cut cuts the link between two members both ways: packets from the
// member in cgroup aCg to bHost, and from the member in bCg to aHost, are
// dropped, so neither can open or keep a conversation with the other.
func (n *Net) Cut(aCg, aHost, bCg, bHost string) error {
	if err := n.Drop(aCg, bHost); err != nil {
		return err
	}
	return n.Drop(bCg, aHost)
}

// MarkConns marks every connection the member in cgroup cg opens from now
// on (call it before starting the member) and returns the mark for
// DropConns.
func (n *Net) MarkConns(cg string) (uint32, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.marks++
	if n.marks >= marksPerNet {
		return 0, fmt.Errorf("chaos: more than %d marked members", marksPerNet-1)
	}
	mark := (markBase(os.Getpid()) + n.marks) << 16
	return mark, iptables("-A", n.markChain, "-m", "cgroup", "--path", cg, "-j", "CONNMARK", "--set-xmark", fmt.Sprintf("%#x/%#x", mark, connMarkMask))
}

// DropConns drops every packet, either way, of the connections marked
// with mark (until Heal).
func (n *Net) DropConns(mark uint32) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.rules++
	return iptables("-A", n.chain, "-m", "connmark", "--mark", fmt.Sprintf("%#x/%#x", mark, connMarkMask), "-j", "DROP")
}

// Loss drops packets from fromCg to to at random with probability p.
func (n *Net) Loss(fromCg, to string, p float64) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.rules++
	return iptables("-A", n.chain, "-m", "cgroup", "--path", fromCg, "-d", to,
		"-m", "statistic", "--mode", "random", "--probability", strconv.FormatFloat(p, 'f', 3, 64), "-j", "DROP")
}

// Heal removes every rule of the chain.
func (n *Net) Heal() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.rules = 0
	return iptables("-F", n.chain)
}

// removeChain removes the jump, the rules and the chain (errors ignored:
// parts may not exist).
func (n *Net) removeChain() {
	for _, c := range []string{n.chain, n.markChain} {
		for iptables("-D", "OUTPUT", "-j", c) == nil {
		}
		_ = iptables("-F", c)
		_ = iptables("-X", c)
	}
}

// close removes the chain and the cgroups (killing any process still in
// them: only the members this run started can be there), then fails t if
// anything of the run is left.
func (n *Net) close(t testing.TB) {
	n.removeChain()
	for _, fd := range n.fds {
		_ = syscall.Close(fd)
	}
	out, err := exec.Command("iptables", "-w", "5", "-S").CombinedOutput()
	if err != nil {
		t.Errorf("chaos cleanup: iptables -S: %v", err)
	} else if strings.Contains(string(out), n.chain) { // the mark chain's name begins with it
		t.Errorf("chaos cleanup: iptables chain %s is left:\n%s", n.chain, out)
	}
	dirs, _ := os.ReadDir(n.cgDir)
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		dir := filepath.Join(n.cgDir, d.Name())
		killCgroup(dir)
		if err := rmdirRetry(dir); err != nil {
			t.Errorf("chaos cleanup: %v", err)
		}
	}
	if err := rmdirRetry(n.cgDir); err != nil {
		t.Errorf("chaos cleanup: %v", err)
	}
}

// killCgroup SIGKILLs the processes listed in the cgroup dir.
func killCgroup(dir string) {
	b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGCONT)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// rmdirRetry removes an (empty) cgroup, waiting up to 10s for the killed
// processes to leave it.
func rmdirRetry(dir string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := syscall.Rmdir(dir)
		if err == nil || os.IsNotExist(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("remove cgroup %s: %v", dir, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// NetemAvailable reports whether the kernel has the netem qdisc, probed
// in a throwaway network namespace (so no interface of the machine is
// touched), and why not.
func NetemAvailable() (bool, string) {
	ns := fmt.Sprintf("drover-chaos-netem-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		return false, fmt.Sprintf("ip netns add: %v: %s", err, strings.TrimSpace(string(out)))
	}
	defer func() { _ = exec.Command("ip", "netns", "del", ns).Run() }()
	out, err := exec.Command("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "10ms").CombinedOutput()
	if err != nil {
		return false, fmt.Sprintf("tc qdisc add netem: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return true, ""
}
