package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nodesim"
)

// BenchmarkScale runs simulated fleets (package nodesim, in this process)
// against real server processes and prints, per number of servers and
// fleet size: the leader's CPU and RSS at rest, heartbeat latency, the
// time to place and run a system job on every node, a rollout in waves of
// 10% with min_healthy_time 5s against its floor, and the wave-to-wave
// control-plane delay. With 3 servers the leader is killed (SIGKILL) once
// a third of the rollout is healthy: the time to a new leader and to the
// next placement of the rollout are printed, and the rollout must finish.
//
//	DROVER_SCALE_NODES    fleet sizes (default "1000,10000")
//	DROVER_SCALE_SERVERS  numbers of servers, 1 or 3 (default "1,3")
//	DROVER_SCALE_ROLLOUTS extra quick rollouts for the memory row (default 0;
//	                      1 server only)
//	DROVER_SCALE_SIM_LOG  a file for the simulator's debug log (its failed
//	                      calls and why); none by default
//
// `make bench-scale` runs it; it is not part of the test suite.
func BenchmarkScale(b *testing.B) {
	sizes := []int{1000, 10000}
	if v := os.Getenv("DROVER_SCALE_NODES"); v != "" {
		sizes = nil
		for _, s := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			require.NoError(b, err)
			sizes = append(sizes, n)
		}
	}
	servers := []int{1, 3}
	if v := os.Getenv("DROVER_SCALE_SERVERS"); v != "" {
		servers = nil
		for _, s := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			require.NoError(b, err)
			require.True(b, n == 1 || n == 3, "DROVER_SCALE_SERVERS: 1 or 3, not %d", n)
			servers = append(servers, n)
		}
	}
	rollouts, _ := strconv.Atoi(os.Getenv("DROVER_SCALE_ROLLOUTS"))
	for _, srv := range servers {
		for _, n := range sizes {
			b.Run(fmt.Sprintf("servers=%d/nodes=%d", srv, n), func(b *testing.B) {
				for range b.N {
					if srv == 1 {
						benchScaleOnce(b, n, rollouts)
					} else {
						benchScaleFailover(b, n)
					}
				}
			})
		}
	}
}

func scaleJob(nodes int, version string, minHealthy time.Duration) *api.Job {
	job := api.NewSystemJob("fleet", "fleet", "global", 50)
	job.Datacenters = []string{"dc1"}
	task := api.NewTask("app", "mock").SetConfig("run_for", "0s")
	task.Env = map[string]string{"VERSION": version}
	task.Resources = &api.Resources{CPU: new(10), MemoryMB: new(16)}
	tg := api.NewTaskGroup("app", 1).AddTask(task)
	tg.Update = &api.UpdateStrategy{
		MaxParallel: new(max(1, nodes/10)), HealthCheck: new("task_states"), MinHealthyTime: new(minHealthy),
		HealthyDeadline: new(5 * time.Minute), ProgressDeadline: new(10 * time.Minute), AutoRevert: new(false),
	}
	job.AddTaskGroup(tg)
	return job
}

func benchScaleOnce(b *testing.B, nodes, rollouts int) {
	// enable_debug: the memory row reads the server's heap profile.
	srv := newServer(b, serverSpec{name: "s1", bootstrapExpect: 1, top: "enable_debug = true"})
	waitLeader(b, srv)
	c := srv.client(b)
	pid := srv.cmd.Process.Pid
	sim := startFleet(b, []string{srv.httpAddr()}, nodes)
	measureRest(b, sim, pid)
	placeFleet(b, c, nodes)

	// A rollout in waves of 10%, min_healthy_time 5s.
	start := time.Now()
	_, _, err := c.Jobs().Register(scaleJob(nodes, "2", 5*time.Second), nil)
	require.NoError(b, err)
	waitFleetDeployment(b, c, 1, 20*time.Minute)
	reportRollout(b, c, nodes, time.Since(start))
	report(b, "after_rollout_server_rss_MB", procRSSMB(b, pid))
	st := sim.Stats()
	report(b, "missed_heartbeats", float64(st.Missed))
	report(b, "update_errors", float64(st.UpdateErrors))

	if rollouts > 0 {
		rss := map[int]float64{}
		for i := 1; i <= rollouts; i++ {
			_, _, err = c.Jobs().Register(scaleJob(nodes, fmt.Sprint(10+i), 0), nil)
			require.NoError(b, err)
			waitFleetDeployment(b, c, uint64(1+i), 10*time.Minute)
			require.NoError(b, c.System().GarbageCollect())
			if i == 10 || i == rollouts {
				rss[i] = procRSSMB(b, pid)
				report(b, fmt.Sprintf("rss_after_%d_rollouts_MB", i), rss[i])
				report(b, fmt.Sprintf("heap_after_%d_rollouts_MB", i), heapAfterGCMB(b, srv))
				report(b, fmt.Sprintf("snapshot_allocs_after_%d_rollouts", i), float64(countAllocs(b, c)))
				evals, _, err := c.Evaluations().List(nil)
				require.NoError(b, err)
				report(b, fmt.Sprintf("evals_after_%d_rollouts", i), float64(len(evals)))
				deps, _, err := c.Deployments().List(nil)
				require.NoError(b, err)
				report(b, fmt.Sprintf("deployments_after_%d_rollouts", i), float64(len(deps)))
				versions, _, _, err := c.Jobs().Versions("fleet", false, nil)
				require.NoError(b, err)
				report(b, fmt.Sprintf("job_versions_after_%d_rollouts", i), float64(len(versions)))
				if st, err := os.Stat(filepath.Join(srv.dataDir, "server", "raft", "raft.db")); err == nil {
					report(b, fmt.Sprintf("raft_db_after_%d_rollouts_MB", i), float64(st.Size())/(1<<20))
				}
			}
		}
	}
}

// startFleet runs a simulated fleet of nodes against servers until the
// benchmark ends and waits until every node is registered.
func startFleet(b *testing.B, servers []string, nodes int) *nodesim.Sim {
	logger := hclog.NewNullLogger()
	if path := os.Getenv("DROVER_SCALE_SIM_LOG"); path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		require.NoError(b, err)
		b.Cleanup(func() { _ = f.Close() })
		logger = hclog.New(&hclog.LoggerOptions{Name: b.Name(), Level: hclog.Debug, Output: f})
	}
	sim, err := nodesim.New(nodesim.Config{Servers: servers, Nodes: nodes, Logger: logger})
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = sim.Run(ctx) }()
	b.Cleanup(func() { cancel(); <-done })

	start := time.Now()
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Minute)
	defer wcancel()
	require.NoError(b, sim.WaitRegistered(wctx))
	report(b, "register_all_s", time.Since(start).Seconds())
	return sim
}

// measureRest reports server pid's CPU and RSS and the heartbeat latency
// over 30 s of heartbeats only.
func measureRest(b *testing.B, sim *nodesim.Sim, pid int) {
	time.Sleep(5 * time.Second)
	sim.ResetLatencies()
	cpu0, t0 := procCPU(b, pid), time.Now()
	time.Sleep(30 * time.Second)
	cpu := (procCPU(b, pid) - cpu0) / time.Since(t0).Seconds()
	st := sim.Stats()
	report(b, "rest_server_cpu_cores", cpu)
	report(b, "rest_server_rss_MB", procRSSMB(b, pid))
	report(b, "heartbeat_p50_ms", float64(st.HeartbeatP50.Microseconds())/1000)
	report(b, "heartbeat_p99_ms", float64(st.HeartbeatP99.Microseconds())/1000)
}

// placeFleet registers the system job (version 0) and waits until it runs
// on every node and its deployment succeeded.
func placeFleet(b *testing.B, c *api.Client, nodes int) {
	start := time.Now()
	_, _, err := c.Jobs().Register(scaleJob(nodes, "1", 5*time.Second), nil)
	require.NoError(b, err)
	waitSummaryRunning(b, c, nodes, 10*time.Minute)
	place := time.Since(start)
	report(b, "place_all_running_s", place.Seconds())
	report(b, "placements_per_s", float64(nodes)/place.Seconds())
	waitFleetDeployment(b, c, 0, 10*time.Minute)
}

// benchScaleFailover is the rollout on three servers with the leader
// killed once a third of the nodes run the new version healthy.
func benchScaleFailover(b *testing.B, nodes int) {
	_, leader, followers := startThreeServers(b)
	c := followers[0].client(b)
	addrs := []string{leader.httpAddr()}
	for _, f := range followers {
		addrs = append(addrs, f.httpAddr())
	}
	sim := startFleet(b, addrs, nodes)
	measureRest(b, sim, leader.cmd.Process.Pid)
	placeFleet(b, c, nodes)

	start := time.Now()
	_, _, err := c.Jobs().Register(scaleJob(nodes, "2", 5*time.Second), nil)
	require.NoError(b, err)
	waitFleetHealthy(b, c, 1, nodes/3, 20*time.Minute)
	killed := time.Now()
	leader.kill()
	waitNewLeader(b, leader.rpcAddr(), followers...)
	report(b, "failover_new_leader_s", time.Since(killed).Seconds())
	waitFleetDeployment(b, c, 1, 20*time.Minute)
	total := time.Since(start)

	stubs, _, err := c.Jobs().Allocations("fleet", true, nil)
	require.NoError(b, err)
	next := int64(0)
	for _, s := range stubs {
		if s.JobVersion == 1 && s.CreateTime > killed.UnixNano() && (next == 0 || s.CreateTime < next) {
			next = s.CreateTime
		}
	}
	if next > 0 {
		report(b, "failover_next_placement_s", float64(next-killed.UnixNano())/1e9)
	}
	reportRollout(b, c, nodes, total)
	var newLeader *agentProc
	for _, f := range followers {
		if l, err := f.client(b).Status().Leader(); err == nil && l == f.rpcAddr() {
			newLeader = f
		}
	}
	if newLeader != nil {
		report(b, "after_rollout_leader_rss_MB", procRSSMB(b, newLeader.cmd.Process.Pid))
	}
	st := sim.Stats()
	report(b, "missed_heartbeats", float64(st.Missed))
	report(b, "update_errors", float64(st.UpdateErrors))
}

// reportRollout reports the rollout of version 1 that took total: against
// its floor, and the wave-to-wave delays.
func reportRollout(b *testing.B, c *api.Client, nodes int, total time.Duration) {
	waves, delays, starts := fleetWaveDelays(b, c, 1, max(1, nodes/10))
	floor := time.Duration(waves) * 5 * time.Second
	report(b, "rollout_total_s", total.Seconds())
	report(b, "rollout_waves", float64(waves))
	report(b, "rollout_total_over_floor", total.Seconds()/floor.Seconds())
	report(b, "wave_delay_p50_ms", pct(delays, 50))
	report(b, "wave_delay_p99_ms", pct(delays, 99))
	report(b, "start_delay_p50_ms", pct(starts, 50))
	report(b, "start_delay_p99_ms", pct(starts, 99))
}

// waitFleetHealthy waits until version's deployment counts at least want
// healthy allocations.
func waitFleetHealthy(b *testing.B, c *api.Client, version uint64, want int, within time.Duration) {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		d, _, err := c.Jobs().LatestDeployment("fleet", nil)
		if err == nil && d != nil && d.JobVersion == version && d.TaskGroups["app"] != nil &&
			d.TaskGroups["app"].HealthyAllocs >= want {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.Fatalf("deployment of version %d: not %d healthy within %v", version, want, within)
}

// heapAfterGCMB is the server's live Go heap: HeapAlloc after a forced
// collection, from its heap profile (the agent runs with enable_debug).
// RSS also holds freed memory the runtime has not returned yet.
func heapAfterGCMB(b *testing.B, srv *agentProc) float64 {
	resp, err := http.Get(srv.httpAddr() + "/debug/pprof/heap?debug=1&gc=1")
	require.NoError(b, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(b, err)
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, "# HeapAlloc = "); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			require.NoError(b, err)
			return n / (1 << 20)
		}
	}
	b.Fatalf("no HeapAlloc in the heap profile (%d bytes, status %s)", len(raw), resp.Status)
	return 0
}

func report(b *testing.B, name string, v float64) {
	b.ReportMetric(v, name)
	fmt.Fprintf(os.Stderr, "    %-34s %.3f\n", name, v)
}

func countAllocs(b *testing.B, c *api.Client) int {
	all, _, err := c.Allocations().List(nil)
	require.NoError(b, err)
	return len(all)
}

func waitSummaryRunning(b *testing.B, c *api.Client, want int, within time.Duration) {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		s, _, err := c.Jobs().Summary("fleet", nil)
		if err == nil && s.Summary["app"].Running >= want {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.Fatalf("not all %d allocations running within %v", want, within)
}

func waitFleetDeployment(b *testing.B, c *api.Client, version uint64, within time.Duration) {
	deadline := time.Now().Add(within)
	var last string
	for time.Now().Before(deadline) {
		d, _, err := c.Jobs().LatestDeployment("fleet", nil)
		if err == nil && d != nil && d.JobVersion == version {
			last = d.Status + " " + d.StatusDescription
			switch d.Status {
			case "successful":
				return
			case "failed", "cancelled":
				b.Fatalf("deployment of version %d: %s", version, last)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.Fatalf("deployment of version %d not successful within %v (last %s)", version, within, last)
}

// fleetWaveDelays returns, for version's allocations placed in waves of
// at most maxParallel, the waves a rollout needs (nodes / maxParallel,
// rounded up), the control-plane delay of every placement beyond the
// first wave, and every allocation's start delay, in milliseconds. The
// k-th placement waits for the (k-maxParallel)-th health report to free a
// slot, so its delay is its create time less that report's time. The
// start delay is from an allocation's create time to its task's start on
// the node: the commit of its plan, the node's allocation query and the
// node's start (min_healthy_time counts from there).
func fleetWaveDelays(b *testing.B, c *api.Client, version uint64, maxParallel int) (waves int, delays, starts []float64) {
	stubs, _, err := c.Jobs().Allocations("fleet", true, nil)
	require.NoError(b, err)
	var created, healthy []int64
	for _, s := range stubs {
		if s.JobVersion != version {
			continue
		}
		created = append(created, s.CreateTime)
		if s.DeploymentStatus != nil && s.DeploymentStatus.Healthy != nil {
			healthy = append(healthy, s.DeploymentStatus.Timestamp.UnixNano())
		}
		if ts := s.TaskStates["app"]; ts != nil && !ts.StartedAt.IsZero() {
			starts = append(starts, float64(ts.StartedAt.UnixNano()-s.CreateTime)/1e6)
		}
	}
	slices.Sort(created)
	slices.Sort(healthy)
	for k := maxParallel; k < len(created) && k-maxParallel < len(healthy); k++ {
		delays = append(delays, float64(created[k]-healthy[k-maxParallel])/1e6)
	}
	return (len(created) + maxParallel - 1) / maxParallel, delays, starts
}

func pct(v []float64, p int) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

// procCPU is the CPU time (user+system) process pid used, in seconds.
func procCPU(b *testing.B, pid int) float64 {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	require.NoError(b, err)
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	ut, _ := strconv.ParseFloat(f[11], 64)
	stt, _ := strconv.ParseFloat(f[12], 64)
	return (ut + stt) / 100 // USER_HZ
}

func procRSSMB(b *testing.B, pid int) float64 {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	require.NoError(b, err)
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			kb, _ := strconv.ParseFloat(strings.Fields(l)[1], 64)
			return kb / 1024
		}
	}
	return 0
}
