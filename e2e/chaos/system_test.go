package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/e2e/internal/agentproc"
)

// startClients starts n client agents (raw_exec) on 127.0.0.<first>.., each
// in its own cgroup with its connections marked (Net.MarkConns),
// registering with the cluster's servers.
func startClients(t *testing.T, c *Cluster, n, first int) []*Server {
	t.Helper()
	var servers []string
	for _, s := range c.Servers {
		servers = append(servers, strings.TrimPrefix(s.HTTPAddr(), "http://"))
	}
	var out []*Server
	for i := 0; i < n; i++ {
		host := fmt.Sprintf("127.0.0.%d", first+i)
		dir := t.TempDir()
		p := &agentproc.Proc{
			Name: fmt.Sprintf("c%d", i), Bin: droverBin, Host: host,
			HTTPPort: agentproc.FreePort(t, host), RPCPort: agentproc.FreePort(t, host),
			DataDir: filepath.Join(dir, "data"), Config: filepath.Join(dir, "agent.hcl"),
			LogPath: filepath.Join(dir, "agent.log"),
		}
		attr, cg, err := c.Net.Cgroup(p.Name)
		if err != nil {
			t.Fatal(err)
		}
		p.SysProcAttr = attr
		mark, err := c.Net.MarkConns(cg) // before the start: every connection it opens is marked
		if err != nil {
			t.Fatal(err)
		}
		if err := p.WriteClientConfig(servers); err != nil {
			t.Fatal(err)
		}
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Kill) // its tasks are in its cgroup: the net's cleanup kills what is left
		out = append(out, &Server{Proc: p, Index: 100 + i, Cg: cg, Mark: mark})
	}
	return out
}

// guardedSystemJob is a system job whose task takes a per-node lock
// (flock on a file named by the node) for as long as it runs; a task that
// finds the lock held writes its allocation ID to double-<node> in dir.
func guardedSystemJob(dir, version string) *api.Job {
	job := api.NewSystemJob("chaos-sys", "chaos-sys", "global", 50)
	job.Datacenters = []string{"dc1"}
	script := fmt.Sprintf(`exec 9>>%[1]s/${node.unique.name}.lock
if flock -n 9; then exec sleep 3600; fi
echo "$NOMAD_ALLOC_ID" >> %[1]s/double-${node.unique.name}
exec sleep 3600`, dir)
	task := api.NewTask("guarded", "raw_exec").SetConfig("command", "/bin/sh").SetConfig("args", []string{"-c", script})
	task.Env = map[string]string{"VERSION": version}
	task.Resources = &api.Resources{CPU: new(50), MemoryMB: new(32)}
	kill := time.Second
	task.KillTimeout = &kill
	job.AddTaskGroup(api.NewTaskGroup("g", 1).AddTask(task))
	// One node at a time, each healthy once its task has run 2 s: every
	// version is a deployment.
	job.Update = &api.UpdateStrategy{
		MaxParallel: new(1), HealthCheck: new("task_states"), MinHealthyTime: new(2 * time.Second),
		HealthyDeadline: new(2 * time.Minute), ProgressDeadline: new(3 * time.Minute),
	}
	return job
}

// A system job's rollout, driven through faults of the servers (the
// leader cut off or paused, a server killed), never has two live
// allocations of the job on a node: each task holds a per-node lock for
// as long as it runs, and one that finds it held says so. Every version
// is a deployment, watched during the faults and after: it must end
// successful, and a deployment is never successful while a node lacks a
// running, healthy allocation of its version (DeploymentViolations).
func TestSystemRolloutUnderServerFaults(t *testing.T) {
	if _, err := os.Stat("/usr/bin/flock"); err != nil {
		t.Skip("SKIP: no /usr/bin/flock")
	}
	seed := envInt("DROVER_CHAOS_SEED", 1)
	base := int(envInt("DROVER_CHAOS_HOST", 11)) + 10
	c := StartCluster(t, droverBin, 3, base)
	clients := startClients(t, c, 2, base+3)
	dir := t.TempDir()

	api0 := func() *api.Client {
		l, err := c.WaitLeader(90 * time.Second)
		if err != nil {
			t.Fatalf("%v%s", err, c.Tails(30))
		}
		return c.Servers[l].API
	}
	register := func(a *api.Client, n int) (uint64, error) {
		if _, _, err := a.Jobs().Register(guardedSystemJob(dir, fmt.Sprint(n)), nil); err != nil {
			return 0, err
		}
		j, _, err := a.Jobs().Info("chaos-sys", nil)
		if err != nil {
			return 0, err
		}
		return *j.Version, nil
	}

	// watch reads the job's deployments through the agreed leader (none:
	// nothing this round) and checks each one newly seen successful
	// against the allocations read right after it; it returns the status
	// of version v's latest deployment ("" when not read).
	var nodeIDs []string
	checked := map[string]bool{}
	watch := func(v uint64) string {
		t.Helper()
		l := c.Leader()
		if l < 0 {
			return ""
		}
		a := c.Servers[l].API
		deps, _, err := a.Jobs().Deployments("chaos-sys", true, nil)
		if err != nil {
			return ""
		}
		var latest *api.Deployment
		for _, d := range deps {
			if d.JobVersion == v && (latest == nil || d.CreateIndex > latest.CreateIndex) {
				latest = d
			}
			if d.Status != api.DeploymentStatusSuccessful || checked[d.ID] {
				continue
			}
			allocs, _, err := a.Jobs().Allocations("chaos-sys", true, nil)
			if err != nil {
				return "" // checked on a later round
			}
			checked[d.ID] = true
			t.Logf("deployment %s of version %d successful: checked against %d allocations of the job", shortID(d.ID), d.JobVersion, len(allocs))
			if bad := DeploymentViolations(d, allocs, nodeIDs); len(bad) > 0 {
				t.Fatalf("a deployment succeeded while a node of its version is unhealthy:\n  %s\n%s", strings.Join(bad, "\n  "), rolloutState(a, c, clients))
			}
		}
		if latest == nil {
			return ""
		}
		return latest.Status
	}
	// settled watches until version v's deployment ends; it must succeed.
	settled := func(v uint64) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Minute)
		for {
			switch st := watch(v); st {
			case api.DeploymentStatusSuccessful:
				return
			case api.DeploymentStatusFailed, api.DeploymentStatusCancelled:
				t.Fatalf("the deployment of version %d ended %s\n%s", v, st, rolloutState(api0(), c, clients))
			}
			if time.Now().After(deadline) {
				t.Fatalf("the deployment of version %d did not end within 3m\n%s", v, rolloutState(api0(), c, clients))
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	// converged waits until every client node runs exactly one allocation
	// of the job, of version v.
	converged := func(v uint64) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Minute)
		for {
			a := api0()
			allocs, _, err := a.Jobs().Allocations("chaos-sys", true, nil)
			running := map[string][]uint64{}
			if err == nil {
				for _, al := range allocs {
					if al.ClientStatus == "running" {
						running[al.NodeID] = append(running[al.NodeID], al.JobVersion)
					}
				}
			}
			ok := err == nil && len(running) == len(clients)
			for _, vs := range running {
				ok = ok && len(vs) == 1 && vs[0] == v
			}
			watch(v) // a deployment may succeed, rightly or not, before v runs everywhere
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("job version %d not running once on each of %d nodes: %v (err %v)\n%s", v, len(clients), running, err, rolloutState(a, c, clients))
			}
			time.Sleep(250 * time.Millisecond)
		}
	}

	// Both clients registered and the first version running.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		nodes, _, err := api0().Nodes().List(nil)
		ready := 0
		nodeIDs = nil
		for _, n := range nodes {
			nodeIDs = append(nodeIDs, n.ID)
			if n.Status == "ready" {
				ready++
			}
		}
		if err == nil && ready == len(clients) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d clients ready", ready, len(clients))
		}
		time.Sleep(200 * time.Millisecond)
	}
	v, err := register(api0(), 1)
	if err != nil {
		t.Fatal(err)
	}
	converged(v)
	settled(v)

	kinds := []Kind{PartitionLeader, PauseLeader, KillRestart, PartitionServer}
	if v := os.Getenv("DROVER_CHAOS_KINDS"); v != "" { // narrows the faults, as for TestChaos
		kinds = nil
		for _, k := range strings.Split(v, ",") {
			kinds = append(kinds, Kind(strings.TrimSpace(k)))
		}
	}
	for i, f := range Schedule(seed, 4, kinds, Limits{HoldMin: 3 * time.Second, HoldMax: 5 * time.Second}) {
		leader, err := c.WaitLeader(90 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		// The new version is registered first; the fault strikes while it
		// rolls out.
		v, err = register(c.Servers[leader].API, i+2)
		if err != nil {
			t.Fatal(err)
		}
		heal, _, err := c.Apply(f, leader)
		if err != nil {
			if heal != nil {
				_ = heal()
			}
			t.Fatal(err)
		}
		t.Logf("rollout to version %d under %s (leader s%d) for %v", v, f.Kind, leader, f.Hold)
		for end := time.Now().Add(f.Hold); time.Now().Before(end); { // the fault's duration is the point of the test
			watch(v)
			time.Sleep(250 * time.Millisecond)
		}
		if err := heal(); err != nil {
			t.Fatal(err)
		}
		converged(v)
		settled(v)
	}
	if len(checked) != 5 {
		t.Errorf("%d successful deployments checked, want one per version (5)", len(checked))
	}
	doubles, _ := filepath.Glob(filepath.Join(dir, "double-*"))
	for _, d := range doubles {
		b, _ := os.ReadFile(d)
		t.Errorf("%s: allocations that found another allocation of the job live on their node: %s", filepath.Base(d), strings.TrimSpace(string(b)))
	}
	locks, _ := filepath.Glob(filepath.Join(dir, "*.lock"))
	if len(locks) != len(clients) {
		t.Fatalf("%d lock files for %d nodes: the guard did not run (%v)", len(locks), len(clients), locks)
	}
}

// rolloutState describes, for a failure message, every allocation of the
// job, its deployments, and what the servers and clients logged above
// debug level.
func rolloutState(a *api.Client, c *Cluster, clients []*Server) string {
	var b strings.Builder
	allocs, _, err := a.Jobs().Allocations("chaos-sys", true, nil)
	fmt.Fprintf(&b, "allocations (err %v):\n", err)
	for _, al := range allocs {
		health := "-"
		if ds := al.DeploymentStatus; ds != nil && ds.Healthy != nil {
			health = fmt.Sprint(*ds.Healthy)
		}
		fmt.Fprintf(&b, "  %s node %s v%d desired %s client %s healthy %s\n", al.ID[:8], al.NodeID[:8], al.JobVersion, al.DesiredStatus, al.ClientStatus, health)
	}
	deps, _, err := a.Jobs().Deployments("chaos-sys", true, nil)
	fmt.Fprintf(&b, "deployments (err %v):\n", err)
	for _, d := range deps {
		fmt.Fprintf(&b, "  %s v%d %s %q\n", d.ID[:8], d.JobVersion, d.Status, d.StatusDescription)
	}
	procs := append(append([]*Server{}, c.Servers...), clients...)
	if dir, err := os.MkdirTemp("", "drover-chaos-system-*"); err == nil { // kept: the whole logs, for the failure
		for _, s := range procs {
			_ = os.WriteFile(filepath.Join(dir, s.Name+".log"), []byte(s.Logs()), 0o644)
		}
		fmt.Fprintf(&b, "whole logs in %s\n", dir)
	}
	for _, s := range procs {
		var keep []string
		for _, l := range strings.Split(s.Logs(), "\n") {
			if l != "" && !strings.Contains(l, "[DEBUG] agent.http: request complete") {
				keep = append(keep, l)
			}
		}
		if len(keep) > 40 {
			keep = keep[len(keep)-40:]
		}
		fmt.Fprintf(&b, "--- %s (%s, last lines but HTTP request logs) ---\n%s\n", s.Name, s.Host, strings.Join(keep, "\n"))
	}
	return b.String()
}
