package e2e

import (
	"cmp"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// BenchmarkFleet measures a fleet rollout on one server from the API's own
// timestamps and the server's /proc: simulated nodes (Drover's nodesim, in
// this process) register, a system job is placed on every node, then
// rolled in 10 waves of 10% with min_healthy_time 1s. It prints, per fleet
// size:
//
//   - placement: the job version's submit time to the last allocation's
//     create time, and to the last task's start;
//   - rollout total (submit of the new version to the last health verdict)
//     against its floor, waves × the median create → healthy time of the
//     rollout's own allocations;
//   - the per-wave control-plane delay, p50 and p99 over the waves: the
//     first create of a wave (allocations of one evaluation) less the last
//     health verdict before it;
//   - server CPU seconds and peak RSS per phase (rest, place, rollout; the
//     peak is /proc's VmHWM, reset through clear_refs at each phase start);
//   - at the end of the rest: the server's RSS (VmRSS) and, for Drover,
//     its heap in use, goroutine stacks and goroutines (/debug/pprof);
//   - missed heartbeats: "Node heartbeat missed" node events in the API
//     (and, for Drover, the simulator's own count of late heartbeats).
//
// With NOMAD_BIN and NOMAD_NODESIM_BIN (an operator's own Nomad and
// nomad-nodesim builds; nothing of Nomad is imported or downloaded) the
// same job runs on both, alternating, and both columns are printed; the
// Nomad job's driver is NOMAD_FLEET_DRIVER (default "mock_driver").
//
//	DROVER_FLEET_NODES   fleet sizes (default "1000,3000")
//	DROVER_FLEET_ROUNDS  rounds per system, alternating; medians (default 1)
//
// `make bench-fleet` runs it; it is not part of the test suite.
func BenchmarkFleet(b *testing.B) {
	sizes := envInts(b, "DROVER_FLEET_NODES", []int{1000, 3000})
	rounds := envInts(b, "DROVER_FLEET_ROUNDS", []int{1})[0]
	nomadBin, simBin := os.Getenv("NOMAD_BIN"), os.Getenv("NOMAD_NODESIM_BIN")
	require.Equal(b, nomadBin == "", simBin == "", "NOMAD_BIN and NOMAD_NODESIM_BIN go together")
	systems := []string{"drover"}
	if nomadBin != "" {
		systems = append(systems, "nomad")
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			results := map[string][]fleetResult{}
			for range b.N {
				for round := 1; round <= rounds; round++ {
					for _, sys := range systems {
						b.Run(fmt.Sprintf("%s/round=%d", sys, round), func(b *testing.B) {
							for range b.N {
								var r fleetResult
								if sys == "drover" {
									r = fleetRunDrover(b, n)
								} else {
									r = fleetRunNomad(b, n, nomadBin, simBin)
								}
								results[sys] = append(results[sys], r)
							}
						})
					}
				}
			}
			printFleetTable(b, n, systems, results)
		})
	}
}

func envInts(b *testing.B, name string, def []int) []int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for _, s := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		require.NoError(b, err, name)
		out = append(out, n)
	}
	return out
}

// fleetResult is one run's figures by name (fleetRows orders them).
type fleetResult map[string]float64

var fleetRows = []struct{ key, label string }{
	{"register_s", "all nodes registered (s)"},
	{"place_created_s", "placement: submit → last allocation created (s)"},
	{"place_running_s", "placement: submit → last task started (s)"},
	{"rollout_total_s", "rollout total (s)"},
	{"rollout_floor_s", "rollout floor: waves × median create → healthy (s)"},
	{"rollout_over_floor", "rollout / floor"},
	{"rollout_waves", "waves (evaluations that placed)"},
	{"create_healthy_p50_ms", "an allocation's create → healthy, p50 (ms)"},
	{"create_healthy_p99_ms", "an allocation's create → healthy, p99 (ms)"},
	{"create_started_p50_ms", "of which create → task started, p50 (ms)"},
	{"create_started_p99_ms", "of which create → task started, p99 (ms)"},
	{"wave_delay_p50_ms", "wave delay p50 (ms)"},
	{"wave_delay_p99_ms", "wave delay p99 (ms)"},
	{"wave_to_eval_p50_ms", "of which verdict → evaluation created, p50 (ms)"},
	{"eval_to_place_p50_ms", "of which evaluation created → first placement, p50 (ms)"},
	{"rest_cpu_s", "server CPU at rest, 10 s (s)"},
	{"rest_peak_rss_MB", "server peak RSS at rest (MB)"},
	{"rest_rss_MB", "server RSS at the end of the rest (MB)"},
	{"rest_heap_inuse_MB", "server heap in use at the end of the rest (MB)"},
	{"rest_stack_MB", "server goroutine stacks at the end of the rest (MB)"},
	{"rest_goroutines", "server goroutines at the end of the rest"},
	{"place_cpu_s", "server CPU, placement (s)"},
	{"place_peak_rss_MB", "server peak RSS, placement (MB)"},
	{"rollout_cpu_s", "server CPU, rollout (s)"},
	{"rollout_peak_rss_MB", "server peak RSS, rollout (MB)"},
	{"missed_heartbeats", "missed heartbeats (node events)"},
	{"sim_late_heartbeats", "late heartbeats (simulator's count)"},
}

// fleetRunDrover runs the fleet against one Drover server.
func fleetRunDrover(b *testing.B, nodes int) fleetResult {
	// enable_debug: the server's /debug/pprof can be read during a run.
	srv := newServer(b, serverSpec{name: "s1", bootstrapExpect: 1, top: "enable_debug = true"})
	waitLeader(b, srv)
	r := fleetResult{}
	start := time.Now()
	sim := startFleet(b, []string{srv.httpAddr()}, nodes)
	r["register_s"] = time.Since(start).Seconds()
	fleetPhases(b, srv.client(b), srv.cmd.Process.Pid, nodes, "mock", r, func() { restRuntime(b, srv.httpAddr(), r) })
	r["sim_late_heartbeats"] = float64(sim.Stats().Missed)
	return r
}

// fleetRunNomad runs the fleet against one server of the operator's own
// Nomad build and nomad-nodesim, both as processes; the benchmark ends
// them.
func fleetRunNomad(b *testing.B, nodes int, nomadBin, simBin string) fleetResult {
	dir := b.TempDir()
	httpPort, rpcPort, serfPort := freePort(b), freePort(b), freePort(b)
	conf := fmt.Sprintf(`data_dir = %q
bind_addr = "127.0.0.1"
log_level = "WARN"
ports {
  http = %d
  rpc  = %d
  serf = %d
}
server {
  enabled          = true
  bootstrap_expect = 1
}
limits {
  http_max_conns_per_client = 0
  rpc_max_conns_per_client  = 0
}
`, filepath.Join(dir, "server"), httpPort, rpcPort, serfPort)
	require.NoError(b, os.WriteFile(filepath.Join(dir, "server.hcl"), []byte(conf), 0o600))
	server := startFleetProc(b, filepath.Join(dir, "server.log"), nomadBin, "agent", "-config", filepath.Join(dir, "server.hcl"))
	c, err := api.NewClient(&api.Config{Address: fmt.Sprintf("http://127.0.0.1:%d", httpPort)})
	require.NoError(b, err)
	require.Eventually(b, func() bool { l, err := c.Status().Leader(); return err == nil && l != "" },
		60*time.Second, 100*time.Millisecond, "nomad server elected itself")

	simConf := fmt.Sprintf(`work_dir    = %q
server_addr = ["127.0.0.1:%d"]
node_num    = %d
log {
  level = "warn"
}
node {
  region     = "global"
  datacenter = "dc1"
}
`, filepath.Join(dir, "sim"), rpcPort, nodes)
	require.NoError(b, os.WriteFile(filepath.Join(dir, "sim.hcl"), []byte(simConf), 0o600))
	start := time.Now()
	startFleetProc(b, filepath.Join(dir, "sim.log"), simBin, "-config", filepath.Join(dir, "sim.hcl"))
	require.Eventually(b, func() bool {
		ns, _, err := c.Nodes().List(nil)
		if err != nil {
			return false
		}
		ready := 0
		for _, n := range ns {
			if n.Status == "ready" {
				ready++
			}
		}
		return ready >= nodes
	}, 10*time.Minute, 200*time.Millisecond, "nomad-nodesim's nodes ready")
	r := fleetResult{"register_s": time.Since(start).Seconds()}
	driver := os.Getenv("NOMAD_FLEET_DRIVER")
	if driver == "" {
		driver = "mock_driver"
	}
	fleetPhases(b, c, server.Process.Pid, nodes, driver, r, nil)
	return r
}

// startFleetProc starts bin with args, its output in logPath, and kills it
// (and waits for it) when the benchmark ends.
func startFleetProc(b *testing.B, logPath, bin string, args ...string) *exec.Cmd {
	logf, err := os.Create(logPath)
	require.NoError(b, err)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(b, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = logf.Close(); close(done) }()
	b.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	return cmd
}

// fleetPhases runs the rest, placement and rollout phases against the
// server c (process pid) and records their figures in r; atRest, when
// set, records more at the end of the rest.
func fleetPhases(b *testing.B, c *api.Client, pid, nodes int, driver string, r fleetResult, atRest func()) {
	job := func(version string) *api.Job {
		j := scaleJob(nodes, version, time.Second)
		j.TaskGroups[0].Tasks[0].Driver = driver
		return j
	}

	m := startPhaseMeter(b, pid)
	time.Sleep(10 * time.Second)
	r["rest_cpu_s"], r["rest_peak_rss_MB"] = m.end(b)
	r["rest_rss_MB"] = procRSSMB(b, pid)
	if atRest != nil {
		atRest()
	}

	m = startPhaseMeter(b, pid)
	_, _, err := c.Jobs().Register(job("1"), nil)
	require.NoError(b, err)
	waitSummaryRunning(b, c, nodes, 10*time.Minute)
	waitFleetDeployment(b, c, 0, 10*time.Minute)
	r["place_cpu_s"], r["place_peak_rss_MB"] = m.end(b)
	v0 := fleetVersion(b, c, 0)
	r["place_created_s"] = float64(v0.lastCreated-v0.submit) / 1e9
	r["place_running_s"] = float64(v0.lastStarted-v0.submit) / 1e9

	m = startPhaseMeter(b, pid)
	_, _, err = c.Jobs().Register(job("2"), nil)
	require.NoError(b, err)
	waitFleetDeployment(b, c, 1, 20*time.Minute)
	r["rollout_cpu_s"], r["rollout_peak_rss_MB"] = m.end(b)
	v1 := fleetVersion(b, c, 1)
	waves := 10 // max_parallel is a tenth of the nodes
	if nodes < 10 {
		waves = nodes
	}
	floor := float64(waves) * pct(v1.createToHealthy, 50) / 1e3
	r["rollout_total_s"] = float64(v1.lastHealthy-v1.submit) / 1e9
	r["rollout_floor_s"] = floor
	r["rollout_over_floor"] = r["rollout_total_s"] / floor
	r["rollout_waves"] = float64(len(v1.waveDelays) + 1)
	r["create_healthy_p50_ms"] = pct(v1.createToHealthy, 50)
	r["create_healthy_p99_ms"] = pct(v1.createToHealthy, 99)
	r["create_started_p50_ms"] = pct(v1.createToStarted, 50)
	r["create_started_p99_ms"] = pct(v1.createToStarted, 99)
	r["wave_delay_p50_ms"] = pct(v1.waveDelays, 50)
	r["wave_delay_p99_ms"] = pct(v1.waveDelays, 99)
	r["wave_to_eval_p50_ms"] = pct(v1.toEval, 50)
	r["eval_to_place_p50_ms"] = pct(v1.evalToPlace, 50)
	r["missed_heartbeats"] = float64(missedHeartbeatEvents(b, c))
	fmt.Fprintf(os.Stderr, "    rollout wave delays (ms): %.1f\n", v1.waveDelays)
}

// fleetVersionTimes are one job version's timestamps, from the API.
type fleetVersionTimes struct {
	submit, lastCreated, lastStarted, lastHealthy int64 // unix ns
	createToHealthy                               []float64
	createToStarted                               []float64 // ms, to the first task's start
	waveDelays                                    []float64 // ms, one per wave after the first
	// The wave delays split at the evaluation's create time: verdict →
	// evaluation created, and evaluation created → first placement (ms).
	toEval, evalToPlace []float64
}

// fleetVersion reads version's submit time and its allocations. A wave is
// the allocations one evaluation placed; its delay is its first create
// time less the latest health verdict of the version before it.
func fleetVersion(b *testing.B, c *api.Client, version uint64) fleetVersionTimes {
	versions, _, _, err := c.Jobs().Versions("fleet", false, nil)
	require.NoError(b, err)
	var t fleetVersionTimes
	for _, j := range versions {
		if j.Version != nil && *j.Version == version && j.SubmitTime != nil {
			t.submit = *j.SubmitTime
		}
	}
	require.NotZero(b, t.submit, "version %d's submit time", version)
	stubs, _, err := c.Jobs().Allocations("fleet", true, nil)
	require.NoError(b, err)
	firstOfEval := map[string]int64{}
	var healthy []int64
	for _, s := range stubs {
		if s.JobVersion != version {
			continue
		}
		t.lastCreated = max(t.lastCreated, s.CreateTime)
		if f, ok := firstOfEval[s.EvalID]; !ok || s.CreateTime < f {
			firstOfEval[s.EvalID] = s.CreateTime
		}
		var started int64
		for _, ts := range s.TaskStates {
			if !ts.StartedAt.IsZero() {
				t.lastStarted = max(t.lastStarted, ts.StartedAt.UnixNano())
				if started == 0 || ts.StartedAt.UnixNano() < started {
					started = ts.StartedAt.UnixNano()
				}
			}
		}
		if started != 0 {
			t.createToStarted = append(t.createToStarted, float64(started-s.CreateTime)/1e6)
		}
		if ds := s.DeploymentStatus; ds != nil && ds.Healthy != nil && *ds.Healthy {
			h := ds.Timestamp.UnixNano()
			healthy = append(healthy, h)
			t.lastHealthy = max(t.lastHealthy, h)
			t.createToHealthy = append(t.createToHealthy, float64(h-s.CreateTime)/1e6)
		}
	}
	evals, _, err := c.Jobs().Evaluations("fleet", nil)
	require.NoError(b, err)
	evalCreated := map[string]int64{}
	for _, e := range evals {
		evalCreated[e.ID] = e.CreateTime
	}
	type wave struct{ first, evalAt int64 }
	waves := make([]wave, 0, len(firstOfEval))
	for id, f := range firstOfEval {
		waves = append(waves, wave{f, evalCreated[id]})
	}
	slices.SortFunc(waves, func(x, y wave) int { return cmp.Compare(x.first, y.first) })
	slices.Sort(healthy)
	for _, w := range waves[min(1, len(waves)):] {
		i, _ := slices.BinarySearch(healthy, w.first+1) // verdicts at or before the wave
		if i == 0 {
			continue
		}
		verdict := healthy[i-1]
		t.waveDelays = append(t.waveDelays, float64(w.first-verdict)/1e6)
		if w.evalAt >= verdict && w.evalAt <= w.first {
			t.toEval = append(t.toEval, float64(w.evalAt-verdict)/1e6)
			t.evalToPlace = append(t.evalToPlace, float64(w.first-w.evalAt)/1e6)
		}
	}
	return t
}

// restRuntime records a Drover server's heap in use, goroutine stacks and
// goroutines, from its profiler (the benchmark's agent runs with
// enable_debug), without forcing a collection: the heap in use is what
// the process holds, live or not yet collected.
func restRuntime(b *testing.B, addr string, r fleetResult) {
	get := func(path string) string {
		resp, err := http.Get(addr + path)
		require.NoError(b, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(b, err)
		require.Equal(b, http.StatusOK, resp.StatusCode, "GET %s", path)
		return string(raw)
	}
	for _, l := range strings.Split(get("/debug/pprof/heap?debug=1"), "\n") {
		if v, ok := strings.CutPrefix(l, "# HeapInuse = "); ok {
			n, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			r["rest_heap_inuse_MB"] = n / (1 << 20)
		}
		if v, ok := strings.CutPrefix(l, "# Stack = "); ok { // "inuse / sys"
			n, _ := strconv.ParseFloat(strings.TrimSpace(strings.Split(v, "/")[0]), 64)
			r["rest_stack_MB"] = n / (1 << 20)
		}
	}
	first, _, _ := strings.Cut(get("/debug/pprof/goroutine?debug=1"), "\n")
	if v, ok := strings.CutPrefix(first, "goroutine profile: total "); ok {
		n, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
		r["rest_goroutines"] = n
	}
}

// missedHeartbeatEvents counts the nodes' "Node heartbeat missed" events.
func missedHeartbeatEvents(b *testing.B, c *api.Client) int {
	ns, _, err := c.Nodes().List(nil)
	require.NoError(b, err)
	missed := 0
	for _, n := range ns {
		node, _, err := c.Nodes().Info(n.ID, nil)
		require.NoError(b, err)
		for _, e := range node.Events {
			if strings.HasPrefix(e.Message, "Node heartbeat missed") {
				missed++
			}
		}
	}
	return missed
}

// phaseMeter measures a server process over one phase: CPU seconds, and
// the peak RSS (VmHWM, reset at the start through clear_refs; where the
// reset is refused the peak is since the process started).
type phaseMeter struct {
	pid  int
	cpu0 float64
}

func startPhaseMeter(b *testing.B, pid int) phaseMeter {
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
	return phaseMeter{pid: pid, cpu0: procCPU(b, pid)}
}

func (m phaseMeter) end(b *testing.B) (cpuS, peakRSSMB float64) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", m.pid))
	require.NoError(b, err)
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			kb, _ := strconv.ParseFloat(strings.Fields(l)[1], 64)
			peakRSSMB = kb / 1024
		}
	}
	return procCPU(b, m.pid) - m.cpu0, peakRSSMB
}

// printFleetTable prints one column per system (medians over its rounds)
// as a Markdown table, and reports Drover's medians as metrics.
func printFleetTable(b *testing.B, nodes int, systems []string, results map[string][]fleetResult) {
	var sb strings.Builder
	fmt.Fprintf(&sb, "\nfleet of %d simulated nodes, one server (median of %d round(s))\n\n| |", nodes, len(results["drover"]))
	for _, s := range systems {
		fmt.Fprintf(&sb, " %s |", s)
	}
	sb.WriteString("\n|---|" + strings.Repeat("---|", len(systems)) + "\n")
	for _, row := range fleetRows {
		fmt.Fprintf(&sb, "| %s |", row.label)
		for _, s := range systems {
			var vs []float64
			for _, r := range results[s] {
				if v, ok := r[row.key]; ok {
					vs = append(vs, v)
				}
			}
			if len(vs) == 0 {
				sb.WriteString(" – |")
				continue
			}
			med := pct(vs, 50)
			if len(vs)%2 == 0 { // the mean of the two middle values
				sorted := slices.Clone(vs)
				slices.Sort(sorted)
				med = (sorted[len(vs)/2-1] + sorted[len(vs)/2]) / 2
			}
			fmt.Fprintf(&sb, " %s |", strconv.FormatFloat(med, 'f', 3, 64))
			if s == "drover" {
				b.ReportMetric(med, row.key)
			}
		}
		sb.WriteString("\n")
	}
	fmt.Fprint(os.Stderr, sb.String())
}
