package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Client faults: a client cut from every server, or paused, for longer
// than its heartbeat TTL. The servers run with a short TTL so that a node
// is given up on in seconds.

// shortHeartbeats is the servers' heartbeat configuration for the client
// fault tests: a node that sends nothing for 5–7 s is given up on.
const shortHeartbeats = `min_heartbeat_ttl = "2s"
  heartbeat_grace = "3s"`

// guardScript is a raw_exec task's shell script that takes an exclusive
// lock on <dir>/<key>.lock (key is a shell word: one lock per allocation
// name, or per node) for as long as it runs. Every start is appended to
// <key>.starts as "<alloc ID> <node> <unix time>"; a start that finds the
// lock held (another live copy) appends "<alloc ID> <node> <time> held" to
// <key>.overlap, waits for the lock, and appends "... acquired" once the
// other copy is gone.
func guardScript(dir, key string) string {
	return fmt.Sprintf(`f=%[1]s/%[2]s
echo "$NOMAD_ALLOC_ID ${node.unique.name} $(date +%%s.%%N)" >> "$f.starts"
exec 9>>"$f.lock"
if ! flock -n 9; then
  echo "$NOMAD_ALLOC_ID ${node.unique.name} $(date +%%s.%%N) held" >> "$f.overlap"
  flock 9
  echo "$NOMAD_ALLOC_ID ${node.unique.name} $(date +%%s.%%N) acquired" >> "$f.overlap"
fi
exec sleep 3600`, dir, key)
}

// guardedTask is a raw_exec task running guardScript.
func guardedTask(dir, key string) *api.Task {
	task := api.NewTask("guarded", "raw_exec").SetConfig("command", "/bin/sh").SetConfig("args", []string{"-c", guardScript(dir, key)})
	task.Resources = &api.Resources{CPU: new(50), MemoryMB: new(32)}
	kill := time.Second
	task.KillTimeout = &kill
	return task
}

// clientFaultJobs are the two jobs of a client fault test: a service job of
// count 2 on distinct nodes, locked per allocation name (so two live
// copies of one index on any nodes are seen), and a system job locked per
// node; both groups get disconnect.
func clientFaultJobs(dir string, disconnect func() *api.DisconnectStrategy) (svc, sys *api.Job) {
	svc = api.NewServiceJob("chaos-svc", "chaos-svc", "global", 50)
	svc.Datacenters = []string{"dc1"}
	svc.Constraints = []*api.Constraint{api.NewConstraint("", api.ConstraintDistinctHosts, "true")}
	g := api.NewTaskGroup("g", 2).AddTask(guardedTask(dir, "$NOMAD_JOB_NAME-$NOMAD_ALLOC_INDEX"))
	g.Disconnect = disconnect()
	svc.AddTaskGroup(g)

	sys = api.NewSystemJob("chaos-node", "chaos-node", "global", 50)
	sys.Datacenters = []string{"dc1"}
	sg := api.NewTaskGroup("g", 1).AddTask(guardedTask(dir, "$NOMAD_JOB_NAME-${node.unique.name}"))
	sg.Disconnect = disconnect()
	sys.AddTaskGroup(sg)
	return svc, sys
}

// guardLine is one line of a guard file.
type guardLine struct {
	Alloc, Node string
	At          time.Time
	Event       string // "" (a start), "held" or "acquired"
}

// readGuard parses the guard files of dir whose names end in suffix, by
// lock key.
func readGuard(t *testing.T, dir, suffix string) map[string][]guardLine {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*"+suffix))
	out := map[string][]guardLine{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		key := strings.TrimSuffix(filepath.Base(f), suffix)
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			fs := strings.Fields(l)
			if len(fs) < 3 {
				t.Fatalf("%s: malformed guard line %q", f, l)
			}
			sec, err := strconv.ParseFloat(fs[2], 64)
			if err != nil {
				t.Fatalf("%s: %q: %v", f, l, err)
			}
			gl := guardLine{Alloc: fs[0], Node: fs[1], At: time.Unix(0, int64(sec*1e9))}
			if len(fs) > 3 {
				gl.Event = fs[3]
			}
			out[key] = append(out[key], gl)
		}
	}
	return out
}

// clientRig is a cluster of three servers with short heartbeats and three
// clients.
type clientRig struct {
	t       *testing.T
	c       *Cluster
	clients []*Server
	byName  map[string]*Server // client by node name
	nodes   map[string]string  // node ID -> name
	dir     string             // the guards' shared directory
}

// startClientRig starts the servers on 127.0.0.<first>.. and the clients
// after them, and waits for the three nodes to be ready.
func startClientRig(t *testing.T, first int) *clientRig {
	if _, err := os.Stat("/usr/bin/flock"); err != nil {
		t.Skip("SKIP: no /usr/bin/flock")
	}
	r := &clientRig{t: t, c: StartClusterWith(t, droverBin, 3, first, shortHeartbeats), dir: t.TempDir(), byName: map[string]*Server{}}
	r.clients = startClients(t, r.c, 3, first+3)
	for _, cl := range r.clients {
		r.byName[cl.Name] = cl
	}
	r.waitFor(2*time.Minute, "three ready nodes", func(a *api.Client) (bool, string) {
		nodes, _, err := a.Nodes().List(nil)
		if err != nil {
			return false, err.Error()
		}
		r.nodes = map[string]string{}
		ready := 0
		for _, n := range nodes {
			r.nodes[n.ID] = n.Name
			if n.Status == "ready" {
				ready++
			}
		}
		return ready == len(r.clients), fmt.Sprintf("%d of %d ready", ready, len(r.clients))
	})
	return r
}

// api returns a client of the current leader.
func (r *clientRig) api() *api.Client {
	l, err := r.c.WaitLeader(90 * time.Second)
	if err != nil {
		r.t.Fatalf("%v%s", err, r.c.Tails(30))
	}
	return r.c.Servers[l].API
}

// waitFor polls cond through the leader until it holds, failing the test
// with cond's last word and the cluster's state after timeout.
func (r *clientRig) waitFor(timeout time.Duration, what string, cond func(a *api.Client) (bool, string)) {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		a := r.api()
		ok, why := cond(a)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("not within %v: %s: %s\n%s", timeout, what, why, r.state(a))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// allocs lists the allocations of job.
func (r *clientRig) allocs(a *api.Client, job string) ([]*api.AllocationListStub, error) {
	allocs, _, err := a.Jobs().Allocations(job, true, nil)
	return allocs, err
}

// nodeStatus is the status of the named node.
func (r *clientRig) nodeStatus(a *api.Client, name string) (string, error) {
	nodes, _, err := a.Nodes().List(nil)
	if err != nil {
		return "", err
	}
	for _, n := range nodes {
		if n.Name == name {
			return n.Status, nil
		}
	}
	return "", fmt.Errorf("no node %s", name)
}

// state describes the nodes and the allocations of both jobs, and the
// logs, for a failure message.
func (r *clientRig) state(a *api.Client) string {
	var b strings.Builder
	nodes, _, err := a.Nodes().List(nil)
	fmt.Fprintf(&b, "nodes (err %v):", err)
	for _, n := range nodes {
		fmt.Fprintf(&b, " %s=%s", n.Name, n.Status)
	}
	b.WriteString("\n")
	for _, job := range []string{"chaos-svc", "chaos-node"} {
		allocs, err := r.allocs(a, job)
		fmt.Fprintf(&b, "%s allocations (err %v):\n", job, err)
		for _, al := range allocs {
			fmt.Fprintf(&b, "  %s %s on %s desired %s client %s next %.8s\n", al.ID[:8], al.Name, al.NodeName, al.DesiredStatus, al.ClientStatus, al.NextAllocation)
		}
	}
	for _, suffix := range []string{".starts", ".overlap"} {
		for key, lines := range readGuard(r.t, r.dir, suffix) {
			for _, l := range lines {
				fmt.Fprintf(&b, "guard %s%s: %.8s on %s at %s %s\n", key, suffix, l.Alloc, l.Node, l.At.Format("15:04:05.000"), l.Event)
			}
		}
	}
	procs := append(append([]*Server{}, r.c.Servers...), r.clients...)
	for _, s := range procs {
		var keep []string
		for _, l := range strings.Split(s.Logs(), "\n") {
			if l != "" && !strings.Contains(l, "[DEBUG] agent.http: request complete") && !strings.Contains(l, "[TRACE]") {
				keep = append(keep, l)
			}
		}
		if len(keep) > 30 {
			keep = keep[len(keep)-30:]
		}
		fmt.Fprintf(&b, "--- %s (%s, last lines but HTTP request logs) ---\n%s\n", s.Name, s.Host, strings.Join(keep, "\n"))
	}
	return b.String()
}

// placed registers both jobs and waits until the service job runs its two
// allocations on two nodes and the system job one on each node. It
// returns the service allocation on the node to strike, that node, the
// spare node (running no service allocation) and the system allocation of
// each node, by node name.
func (r *clientRig) placed(svc, sys *api.Job) (victim *api.AllocationListStub, target, spare string, sysByNode map[string]string) {
	for _, j := range []*api.Job{svc, sys} {
		if _, _, err := r.api().Jobs().Register(j, nil); err != nil {
			r.t.Fatal(err)
		}
	}
	r.waitFor(2*time.Minute, "both jobs placed and running", func(a *api.Client) (bool, string) {
		sa, err1 := r.allocs(a, "chaos-svc")
		ya, err2 := r.allocs(a, "chaos-node")
		if err1 != nil || err2 != nil {
			return false, fmt.Sprint(err1, err2)
		}
		svcOn := map[string]*api.AllocationListStub{}
		for _, al := range sa {
			if al.ClientStatus == "running" {
				svcOn[al.NodeName] = al
			}
		}
		sysByNode = map[string]string{}
		for _, al := range ya {
			if al.ClientStatus == "running" {
				sysByNode[al.NodeName] = al.ID
			}
		}
		if len(svcOn) != 2 || len(sysByNode) != len(r.clients) {
			return false, fmt.Sprintf("service running on %d nodes, system on %d", len(svcOn), len(sysByNode))
		}
		names := make([]string, 0, 2)
		for n := range svcOn {
			names = append(names, n)
		}
		sort.Strings(names)
		target, victim = names[0], svcOn[names[0]]
		for _, cl := range r.clients {
			if svcOn[cl.Name] == nil {
				spare = cl.Name
			}
		}
		return true, ""
	})
	r.t.Logf("service allocation %s (%s) on %s is struck; %s is the spare node", victim.ID[:8], victim.Name, target, spare)
	return victim, target, spare, sysByNode
}

// cutOff partitions the client from every server: its packets to every
// server's address, every server's packets to its address, and both
// directions of every connection it opened are dropped. The last matters:
// a server answers a connection the client opened at 127.0.0.1, not at the
// client's address, so without it an answer to a blocking query open at
// the cut (the original's stop, once the node is down) would still reach
// the client.
func (r *clientRig) cutOff(cl *Server) {
	for _, s := range r.c.Servers {
		if err := r.c.Net.Cut(cl.Cg, cl.Host, s.Cg, s.Host); err != nil {
			_ = r.c.Net.Heal()
			r.t.Fatal(err)
		}
	}
	if cl.Mark == 0 {
		r.t.Fatalf("client %s has no conntrack mark: its open connections would survive the cut", cl.Name)
	}
	if err := r.c.Net.DropConns(cl.Mark); err != nil {
		_ = r.c.Net.Heal()
		r.t.Fatal(err)
	}
}

// struck waits, while target is cut off or paused, until the servers have
// given up on it: the node has status nodeStatus, the victim and target's
// system allocation have client status allocStatus, the victim's
// replacement (same name) runs on spare, and no other node got a system
// allocation besides its own.
func (r *clientRig) struck(victim *api.AllocationListStub, target, spare string, sysByNode map[string]string, nodeStatus, allocStatus string) (replacement string) {
	r.waitFor(90*time.Second, fmt.Sprintf("%s %s, its allocations %s, the service allocation replaced on %s", target, nodeStatus, allocStatus, spare), func(a *api.Client) (bool, string) {
		st, err := r.nodeStatus(a, target)
		if err != nil || st != nodeStatus {
			return false, fmt.Sprintf("node %s status %q (err %v)", target, st, err)
		}
		sa, err1 := r.allocs(a, "chaos-svc")
		ya, err2 := r.allocs(a, "chaos-node")
		if err1 != nil || err2 != nil {
			return false, fmt.Sprint(err1, err2)
		}
		replacement = ""
		for _, al := range sa {
			switch {
			case al.ID == victim.ID && al.ClientStatus != allocStatus:
				return false, fmt.Sprintf("struck service allocation %s is %s", al.ID[:8], al.ClientStatus)
			case al.ID != victim.ID && al.Name == victim.Name && al.NodeName == spare && al.ClientStatus == "running":
				replacement = al.ID
			}
		}
		if replacement == "" {
			return false, "no running replacement on " + spare
		}
		for _, al := range ya {
			switch {
			case al.ID == sysByNode[target] && al.ClientStatus != allocStatus:
				return false, fmt.Sprintf("struck system allocation %s is %s", al.ID[:8], al.ClientStatus)
			case al.ID != sysByNode[al.NodeName] && !clientTerminal(al.ClientStatus):
				return false, fmt.Sprintf("system job got a further allocation %s on %s (%s)", al.ID[:8], al.NodeName, al.ClientStatus)
			}
		}
		return true, ""
	})
	return replacement
}

// clientTerminal reports whether a client status is terminal.
func clientTerminal(s string) bool { return s == "complete" || s == "failed" || s == "lost" }

// healed waits, after the heal, until target is ready again and runs what
// the servers decided: the service job exactly its two allocations, the
// victim no longer running anywhere and the replacement running; the
// system job one running allocation on each node, which on target is the
// original when keepSys (and a new one otherwise).
func (r *clientRig) healed(victim *api.AllocationListStub, replacement, target string, sysByNode map[string]string, keepSys bool) {
	r.waitFor(90*time.Second, fmt.Sprintf("%s ready and running what the servers decided", target), func(a *api.Client) (bool, string) {
		st, err := r.nodeStatus(a, target)
		if err != nil || st != "ready" {
			return false, fmt.Sprintf("node %s status %q (err %v)", target, st, err)
		}
		sa, err1 := r.allocs(a, "chaos-svc")
		ya, err2 := r.allocs(a, "chaos-node")
		if err1 != nil || err2 != nil {
			return false, fmt.Sprint(err1, err2)
		}
		running := map[string]string{} // name -> ID
		for _, al := range sa {
			if al.ClientStatus == "running" || al.ClientStatus == "pending" {
				if o, dup := running[al.Name]; dup {
					return false, fmt.Sprintf("%s has two live allocations %s and %s", al.Name, o[:8], al.ID[:8])
				}
				running[al.Name] = al.ID
			}
		}
		if len(running) != 2 || running[victim.Name] != replacement {
			return false, fmt.Sprintf("service allocations live: %v (want the replacement %s for %s)", running, replacement[:8], victim.Name)
		}
		sysOn := map[string]string{}
		for _, al := range ya {
			if al.ClientStatus == "running" {
				if o, dup := sysOn[al.NodeName]; dup {
					return false, fmt.Sprintf("two running system allocations on %s: %s and %s", al.NodeName, o[:8], al.ID[:8])
				}
				sysOn[al.NodeName] = al.ID
			} else if al.ClientStatus == "pending" {
				return false, fmt.Sprintf("system allocation %s on %s pending", al.ID[:8], al.NodeName)
			}
		}
		if len(sysOn) != len(r.clients) {
			return false, fmt.Sprintf("system allocations running on %v", sysOn)
		}
		for n, id := range sysOn {
			switch {
			case n != target && id != sysByNode[n]:
				return false, fmt.Sprintf("system allocation on %s replaced: %s", n, id[:8])
			case n == target && keepSys && id != sysByNode[n]:
				return false, fmt.Sprintf("system allocation on %s is %s, not the original %s", n, id[:8], sysByNode[n][:8])
			case n == target && !keepSys && id == sysByNode[n]:
				return false, fmt.Sprintf("the lost system allocation %s runs again on %s", id[:8], n)
			}
		}
		return true, ""
	})
}

// settle gives the clients a moment after convergence (a copy that should
// be gone would show in the guard files), then returns the guard's starts
// and overlaps.
func (r *clientRig) settle() (starts, overlaps map[string][]guardLine) {
	time.Sleep(3 * time.Second) // nothing to wait on: a late second copy would start within it
	starts, overlaps = readGuard(r.t, r.dir, ".starts"), readGuard(r.t, r.dir, ".overlap")
	if len(starts) != 2+len(r.clients) {
		r.t.Fatalf("guard files for %d locks, want %d (2 service names, %d nodes): the guard did not run (%v)", len(starts), 2+len(r.clients), len(r.clients), starts)
	}
	return starts, overlaps
}

// checkOverlaps judges the guard's overlap records once the cluster has
// converged: with overlap false, no lock was ever found held; with overlap
// true, only victim's replacement found its name's lock held (the
// original still ran where the servers could not stop it), and it got
// the lock within bound of healed (the client stopped the original).
func (r *clientRig) checkOverlaps(overlaps map[string][]guardLine, victim *api.AllocationListStub, replacement string, overlap bool, healed time.Time) {
	t := r.t
	const bound = 20 * time.Second
	victimKey := "chaos-svc-" + strconv.Itoa(allocIndex(victim.Name))
	var acquired time.Time
	for key, lines := range overlaps {
		for _, l := range lines {
			switch {
			case overlap && key == victimKey && l.Alloc == replacement && l.Event == "held":
			case overlap && key == victimKey && l.Alloc == replacement && l.Event == "acquired":
				acquired = l.At
			default:
				t.Errorf("%s: allocation %s on %s found another live copy (%s at %s)", key, l.Alloc, l.Node, l.Event, l.At.Format("15:04:05.000"))
			}
		}
	}
	if !overlap {
		return
	}
	switch {
	case len(overlaps[victimKey]) == 0:
		t.Errorf("the replacement %s never found the original's lock held: the guard does not see copies across nodes", replacement[:8])
	case acquired.IsZero():
		t.Errorf("the replacement %s still waits for the original %s to stop", replacement[:8], victim.ID[:8])
	case acquired.Sub(healed) > bound:
		t.Errorf("the original %s stopped %v after the heal (more than %v)", victim.ID[:8], acquired.Sub(healed), bound)
	default:
		t.Logf("the original %s and its replacement overlapped until the heal; the original stopped %v after it", victim.ID[:8], acquired.Sub(healed).Round(time.Millisecond))
	}
}

// A client cut from every server past its heartbeat TTL is marked down;
// its allocations are lost. The service allocation is replaced on the
// spare node; the system job gets no replacement elsewhere. On healing
// the node is ready again, the service job runs exactly its two
// allocations (the original stopped, the replacement kept), and the
// system job gets a new allocation on the node (never two at once there).
//
// With disconnect.stop_on_client_after, the cut-off client stops both
// allocations itself and the servers place the replacement only after
// that long: no allocation name ever has two live copies. Without a
// disconnect block the cut-off client keeps its copy running (the
// servers cannot reach it), so the original and the replacement overlap
// until the heal; the client must stop the original soon after.
func TestClientPartitionedPastTTL(t *testing.T) {
	stopAfter := 3 * time.Second
	cases := []struct {
		name       string
		disconnect func() *api.DisconnectStrategy
		overlap    bool
	}{
		{"stop_on_client_after", func() *api.DisconnectStrategy { return &api.DisconnectStrategy{StopOnClientAfter: &stopAfter} }, false},
		{"no disconnect block", func() *api.DisconnectStrategy { return nil }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := startClientRig(t, int(envInt("DROVER_CHAOS_HOST", 11))+20)
			svc, sys := clientFaultJobs(r.dir, tc.disconnect)
			victim, target, spare, sysByNode := r.placed(svc, sys)

			cut := time.Now()
			r.cutOff(r.byName[target])
			replacement := r.struck(victim, target, spare, sysByNode, "down", "lost")
			t.Logf("%s down and replaced by %s on %s after %v", target, replacement[:8], spare, time.Since(cut).Round(time.Millisecond))
			time.Sleep(2 * time.Second) // the partition outlasts the replacement a little; nothing to wait on
			if err := r.c.Net.Heal(); err != nil {
				t.Fatal(err)
			}
			heal := time.Now()
			r.healed(victim, replacement, target, sysByNode, false)
			t.Logf("%s ready and converged %v after the heal", target, time.Since(heal).Round(time.Millisecond))

			starts, overlaps := r.settle()
			r.checkOverlaps(overlaps, victim, replacement, tc.overlap, heal)
			if n := len(starts["chaos-svc-"+strconv.Itoa(allocIndex(victim.Name))]); n != 2 {
				t.Errorf("%s started %d times, want 2 (the original and its replacement)", victim.Name, n)
			}
			if n := len(starts["chaos-node-"+target]); n != 2 {
				t.Errorf("the system allocations on %s started %d times, want 2 (the lost one and the new one)", target, n)
			}
		})
	}
}

// A client paused (SIGSTOP, a long GC pause) past its heartbeat TTL, with
// disconnect { lost_after } on both groups, is marked disconnected; its
// allocations are unknown. The service allocation is replaced on the
// spare node (disconnect.reconcile = keep_replacement); the system job
// gets no replacement. A paused client cannot stop anything, so the
// original and its replacement overlap until the client resumes: the
// replacement waits for the original's lock, and must get it soon after
// SIGCONT. On resuming, the node is ready, the client stops the replaced
// service allocation and keeps the system allocation (the same one,
// never restarted).
func TestClientPausedPastTTL(t *testing.T) {
	r := startClientRig(t, int(envInt("DROVER_CHAOS_HOST", 11))+30)
	lostAfter := 10 * time.Minute
	keep := "keep_replacement"
	svc, sys := clientFaultJobs(r.dir, func() *api.DisconnectStrategy {
		return &api.DisconnectStrategy{LostAfter: &lostAfter, Reconcile: &keep}
	})
	victim, target, spare, sysByNode := r.placed(svc, sys)

	cl := r.byName[target]
	paused := time.Now()
	if err := cl.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = cl.Signal(syscall.SIGCONT)
		}
	}
	t.Cleanup(resume)
	replacement := r.struck(victim, target, spare, sysByNode, "disconnected", "unknown")
	t.Logf("%s disconnected and %s replaced by %s on %s after %v", target, victim.ID[:8], replacement[:8], spare, time.Since(paused).Round(time.Millisecond))
	time.Sleep(2 * time.Second) // the pause outlasts the replacement a little; nothing to wait on
	resume()
	at := time.Now()
	r.healed(victim, replacement, target, sysByNode, true)
	t.Logf("%s ready and converged %v after SIGCONT", target, time.Since(at).Round(time.Millisecond))

	starts, overlaps := r.settle()
	r.checkOverlaps(overlaps, victim, replacement, true, at)
	if n := len(starts["chaos-node-"+target]); n != 1 {
		t.Errorf("the system allocation on %s started %d times, want once (kept through the pause)", target, n)
	}
}

// allocIndex is the index in an allocation name "job.group[i]".
func allocIndex(name string) int {
	i := strings.LastIndex(name, "[")
	n, err := strconv.Atoi(strings.TrimSuffix(name[i+1:], "]"))
	if i < 0 || err != nil {
		return -1
	}
	return n
}
