package prefetch

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/drover-project/drover/nomad/structs"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// fixture is a job at two versions (image v1 → v2) on n nodes.
type fixture struct {
	v1, v2 *structs.Job
	dep    *structs.Deployment
	nodes  map[string]*structs.Node
	allocs []*structs.Allocation
}

func job(version uint64, image string, cfg map[string]any) *structs.Job {
	c := map[string]any{"image": image}
	for k, v := range cfg {
		c[k] = v
	}
	return &structs.Job{
		Namespace: "default", ID: "web", Version: version, Type: structs.JobTypeSystem,
		TaskGroups: []*structs.TaskGroup{{Name: "web", Tasks: []*structs.Task{{Name: "server", Driver: "docker", Config: c}}}},
	}
}

func nodeID(i int) string { return fmt.Sprintf("node-%02d", i) }

func newFixture(n int, cfg map[string]any) *fixture {
	f := &fixture{v1: job(1, "web:v1", nil), v2: job(2, "web:v2", cfg), nodes: map[string]*structs.Node{}}
	f.dep = &structs.Deployment{ID: "dep", Namespace: "default", JobID: "web", JobVersion: 2, Status: structs.DeploymentStatusRunning}
	for i := 0; i < n; i++ {
		id := nodeID(i)
		f.nodes[id] = &structs.Node{ID: id, Status: structs.NodeStatusReady, SchedulingEligibility: structs.NodeSchedulingEligible}
		f.allocs = append(f.allocs, alloc(f.v1, id))
	}
	return f
}

func alloc(j *structs.Job, node string) *structs.Allocation {
	return &structs.Allocation{
		ID: node + "-v" + fmt.Sprint(j.Version), NodeID: node, JobID: j.ID, JobVersion: j.Version, Job: j, TaskGroup: "web",
		DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning,
	}
}

func (f *fixture) input(prog map[string]Progress) Input {
	return Input{Deployment: f.dep, Job: f.v2, Allocs: f.allocs, Nodes: f.nodes, Progress: prog, GrantTimeout: 10 * time.Minute}
}

func directiveNodes(r Result) []string {
	var out []string
	for _, d := range r.Directives {
		out = append(out, d.NodeID+":"+d.Directive.State)
	}
	return out
}

func TestDecide(t *testing.T) {
	pulling := func(at time.Time) Progress { return Progress{State: structs.PrefetchStatePulling, GrantedAt: at} }
	done := Progress{State: structs.PrefetchStateDone}
	failed := Progress{State: structs.PrefetchStateFailed}
	cases := []struct {
		name    string
		nodes   int
		cfg     map[string]any
		change  func(f *fixture)
		prog    map[string]Progress
		now     time.Time
		granted []string
		dirs    []string
		timeout []string
		wake    time.Time
	}{
		{name: "default parallel grants four of six in node order", nodes: 6,
			granted: []string{"node-00", "node-01", "node-02", "node-03"},
			dirs:    []string{"node-00:pulling", "node-01:pulling", "node-02:pulling", "node-03:pulling"},
			wake:    t0.Add(10 * time.Minute)},
		{name: "prefetch_parallel 2", nodes: 4, cfg: map[string]any{"prefetch_parallel": 2},
			granted: []string{"node-00", "node-01"}, dirs: []string{"node-00:pulling", "node-01:pulling"}, wake: t0.Add(10 * time.Minute)},
		{name: "prefetch_parallel as float64 from JSON", nodes: 3, cfg: map[string]any{"prefetch_parallel": float64(1)},
			granted: []string{"node-00"}, dirs: []string{"node-00:pulling"}, wake: t0.Add(10 * time.Minute)},
		{name: "prefetch_parallel 0 is off", nodes: 3, cfg: map[string]any{"prefetch_parallel": 0}},
		{name: "prefetch = false is off", nodes: 3, cfg: map[string]any{"prefetch": false}},
		{name: "a done node frees its slot and stays listed", nodes: 3, cfg: map[string]any{"prefetch_parallel": 1},
			prog:    map[string]Progress{"node-00": done},
			granted: []string{"node-01"}, dirs: []string{"node-00:done", "node-01:pulling"}, wake: t0.Add(10 * time.Minute)},
		{name: "a failed node frees its slot, is not listed and not granted again", nodes: 3, cfg: map[string]any{"prefetch_parallel": 1},
			prog:    map[string]Progress{"node-00": failed},
			granted: []string{"node-01"}, dirs: []string{"node-01:pulling"}, wake: t0.Add(10 * time.Minute)},
		{name: "the limit counts pulls in flight", nodes: 3, cfg: map[string]any{"prefetch_parallel": 1},
			prog: map[string]Progress{"node-02": pulling(t0.Add(-time.Minute))},
			dirs: []string{"node-02:pulling"}, wake: t0.Add(9 * time.Minute)},
		{name: "a grant without a report times out and frees its slot", nodes: 2, cfg: map[string]any{"prefetch_parallel": 1},
			prog:    map[string]Progress{"node-00": pulling(t0.Add(-10 * time.Minute))},
			timeout: []string{"node-00"}, granted: []string{"node-01"}, dirs: []string{"node-01:pulling"}, wake: t0.Add(10 * time.Minute)},
		{name: "paused keeps its pulls and grants none", nodes: 3,
			change: func(f *fixture) { f.dep.Status = structs.DeploymentStatusPaused },
			prog:   map[string]Progress{"node-00": pulling(t0), "node-01": done},
			dirs:   []string{"node-00:pulling", "node-01:done"}, wake: t0.Add(10 * time.Minute)},
		{name: "failed deployment lists nothing", nodes: 3,
			change: func(f *fixture) { f.dep.Status = structs.DeploymentStatusFailed },
			prog:   map[string]Progress{"node-00": pulling(t0), "node-01": done}},
		{name: "cancelled deployment lists nothing", nodes: 3,
			change: func(f *fixture) { f.dep.Status = structs.DeploymentStatusCancelled },
			prog:   map[string]Progress{"node-00": pulling(t0)}},
		{name: "nodes already on the new version get nothing", nodes: 3,
			change: func(f *fixture) {
				f.allocs[0].DesiredStatus = structs.AllocDesiredStatusStop
				f.allocs = append(f.allocs, alloc(f.v2, "node-00"))
			},
			granted: []string{"node-01", "node-02"}, dirs: []string{"node-01:pulling", "node-02:pulling"}, wake: t0.Add(10 * time.Minute)},
		{name: "a granted node whose wave arrived keeps its grant", nodes: 2,
			change:  func(f *fixture) { f.allocs = append(f.allocs, alloc(f.v2, "node-00")) },
			prog:    map[string]Progress{"node-00": pulling(t0)},
			granted: []string{"node-01"}, dirs: []string{"node-00:pulling", "node-01:pulling"}, wake: t0.Add(10 * time.Minute)},
		{name: "same image: nothing to pull", nodes: 3,
			change: func(f *fixture) { f.v2.TaskGroups[0].Tasks[0].Config["image"] = "web:v1" }},
		{name: "down, draining and ineligible nodes get nothing; a down node's record is dropped", nodes: 4,
			change: func(f *fixture) {
				f.nodes["node-00"].Status = structs.NodeStatusDown
				f.nodes["node-01"].Drain = true
				f.nodes["node-02"].SchedulingEligibility = structs.NodeSchedulingIneligible
			},
			prog:    map[string]Progress{"node-00": pulling(t0)},
			granted: []string{"node-03"}, dirs: []string{"node-03:pulling"}, wake: t0.Add(10 * time.Minute)},
		{name: "stopped and finished old allocations need nothing", nodes: 3,
			change: func(f *fixture) {
				f.allocs[0].DesiredStatus = structs.AllocDesiredStatusStop
				f.allocs[1].ClientStatus = structs.AllocClientStatusComplete
			},
			granted: []string{"node-02"}, dirs: []string{"node-02:pulling"}, wake: t0.Add(10 * time.Minute)},
		{name: "non-docker tasks are not prefetched", nodes: 2,
			change: func(f *fixture) { f.v2.TaskGroups[0].Tasks[0].Driver = "raw_exec" }},
		{name: "pinned image differs from the tag it was", nodes: 1,
			change: func(f *fixture) {
				f.v2.TaskGroups[0].Tasks[0].Config["image"] = "web:v1@sha256:" + fmt.Sprintf("%064d", 2)
			},
			granted: []string{"node-00"}, dirs: []string{"node-00:pulling"}, wake: t0.Add(10 * time.Minute)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(tc.nodes, tc.cfg)
			if tc.change != nil {
				tc.change(f)
			}
			res := Decide(f.input(tc.prog), t0)
			if !slices.Equal(res.Granted, tc.granted) {
				t.Errorf("granted = %v, want %v", res.Granted, tc.granted)
			}
			if got := directiveNodes(res); !slices.Equal(got, tc.dirs) {
				t.Errorf("directives = %v, want %v", got, tc.dirs)
			}
			if !slices.Equal(res.TimedOut, tc.timeout) {
				t.Errorf("timed out = %v, want %v", res.TimedOut, tc.timeout)
			}
			if !res.WakeAt.Equal(tc.wake) {
				t.Errorf("wakeAt = %v, want %v", res.WakeAt, tc.wake)
			}
		})
	}
}

func TestDecideDirectiveCarriesTheNewImage(t *testing.T) {
	f := newFixture(1, map[string]any{"auth": map[string]any{"username": "u"}})
	res := Decide(f.input(nil), t0)
	if len(res.Directives) != 1 {
		t.Fatalf("directives = %d, want 1", len(res.Directives))
	}
	d := res.Directives[0].Directive
	if d.DeploymentID != "dep" || d.JobID != "web" || d.JobVersion != 2 || len(d.Tasks) != 1 {
		t.Fatalf("directive = %+v", d)
	}
	task := d.Tasks[0]
	if task.Image != "web:v2" || task.Driver != "docker" || task.Task != "server" || task.Config["auth"] == nil {
		t.Fatalf("task = %+v, want web:v2 with the task's auth", task)
	}
}

func TestApplyReport(t *testing.T) {
	prog := map[string]Progress{"a": {State: structs.PrefetchStatePulling, GrantedAt: t0}, "b": {State: structs.PrefetchStateFailed}}
	got := ApplyReport(prog, "a", &structs.PrefetchReport{DeploymentID: "dep", State: structs.PrefetchStateDone})
	if got["a"].State != structs.PrefetchStateDone || prog["a"].State != structs.PrefetchStatePulling {
		t.Fatalf("a = %+v (input %+v): want done, input unchanged", got["a"], prog["a"])
	}
	got = ApplyReport(prog, "a", &structs.PrefetchReport{State: structs.PrefetchStateFailed, Error: "boom"})
	if got["a"].State != structs.PrefetchStateFailed || got["a"].Err != "boom" {
		t.Fatalf("a = %+v, want failed: boom", got["a"])
	}
	if got = ApplyReport(prog, "b", &structs.PrefetchReport{State: structs.PrefetchStateDone}); got["b"].State != structs.PrefetchStateFailed {
		t.Fatalf("b = %+v: a failed record must not turn done", got["b"])
	}
	if got = ApplyReport(prog, "c", &structs.PrefetchReport{State: structs.PrefetchStateDone}); got["c"].State != structs.PrefetchStateDone {
		t.Fatalf("c = %+v: a done report without a record is taken (new leader)", got["c"])
	}
	if got = ApplyReport(prog, "d", &structs.PrefetchReport{State: structs.PrefetchStateFailed}); len(got) != 2 {
		t.Fatalf("a failed report without a record must be ignored: %v", got)
	}
}

// TestDecideProperties steps random fleets through random reports, wave
// placements, node failures, status changes and time, checking the
// invariants of Decide at every step.
func TestDecideProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 12).Draw(rt, "nodes")
		par := rapid.IntRange(0, 5).Draw(rt, "parallel")
		f := newFixture(n, map[string]any{"prefetch_parallel": par})
		prog := map[string]Progress{}
		everGranted := map[string]int{}
		now := t0
		for step := 0; step < 20; step++ {
			switch rapid.IntRange(0, 6).Draw(rt, "action") {
			case 0: // a report
				id := nodeID(rapid.IntRange(0, n-1).Draw(rt, "node"))
				st := rapid.SampledFrom([]string{structs.PrefetchStateDone, structs.PrefetchStateFailed}).Draw(rt, "report")
				prog = ApplyReport(prog, id, &structs.PrefetchReport{DeploymentID: "dep", State: st})
			case 1: // a wave places the new version on a node
				id := nodeID(rapid.IntRange(0, n-1).Draw(rt, "wave"))
				f.allocs = append(f.allocs, alloc(f.v2, id))
			case 2: // time passes
				now = now.Add(time.Duration(rapid.IntRange(0, 700).Draw(rt, "secs")) * time.Second)
			case 3:
				f.dep.Status = rapid.SampledFrom([]string{structs.DeploymentStatusRunning, structs.DeploymentStatusPaused,
					structs.DeploymentStatusFailed, structs.DeploymentStatusCancelled}).Draw(rt, "status")
			case 4:
				id := nodeID(rapid.IntRange(0, n-1).Draw(rt, "flap"))
				f.nodes[id].Status = rapid.SampledFrom([]string{structs.NodeStatusReady, structs.NodeStatusDown}).Draw(rt, "nodeStatus")
			}
			before := prog
			in := f.input(prog)
			res := Decide(in, now)
			if Idle(in) && (len(res.Progress) > 0 || len(res.Directives) > 0 || len(res.Granted) > 0 ||
				len(res.TimedOut) > 0 || !res.WakeAt.IsZero()) {
				rt.Fatalf("Idle input decided %+v", res)
			}
			prog = res.Progress
			need := Needs(f.v2, f.allocs, f.nodes)
			pullingNow := 0
			for _, p := range prog {
				if p.State == structs.PrefetchStatePulling {
					pullingNow++
				}
			}
			active := f.dep.Status == structs.DeploymentStatusRunning || f.dep.Status == structs.DeploymentStatusPaused
			if !active && (len(res.Directives) > 0 || len(prog) > 0) {
				rt.Fatalf("%s deployment keeps %d directives, %d records", f.dep.Status, len(res.Directives), len(prog))
			}
			if pullingNow > par {
				rt.Fatalf("%d pulling after granting %v, limit %d", pullingNow, res.Granted, par)
			}
			if f.dep.Status == structs.DeploymentStatusRunning && pullingNow < par {
				for id := range need {
					if _, ok := prog[id]; !ok {
						rt.Fatalf("%s needs a pull and was not granted with %d of %d slots used", id, pullingNow, par)
					}
				}
			}
			if f.dep.Status != structs.DeploymentStatusRunning && len(res.Granted) > 0 {
				rt.Fatalf("%s deployment granted %v", f.dep.Status, res.Granted)
			}
			for _, id := range res.Granted {
				everGranted[id]++
				if len(need[id]) == 0 {
					rt.Fatalf("granted %s, which needs nothing", id)
				}
				if _, had := before[id]; had {
					rt.Fatalf("granted %s again", id)
				}
			}
			for _, d := range res.Directives {
				if st := prog[d.NodeID].State; st != d.Directive.State || (st != structs.PrefetchStatePulling && st != structs.PrefetchStateDone) {
					rt.Fatalf("directive for %s in state %q, record %q", d.NodeID, d.Directive.State, st)
				}
			}
			if !slices.IsSorted(res.Granted) {
				rt.Fatalf("grants not in node order: %v", res.Granted)
			}
		}
	})
}

// TestIdle: a deployment of a job without a prefetching Docker task, and
// without a record, needs nothing read; one with a record or a
// prefetching task does.
func TestIdle(t *testing.T) {
	f := newFixture(2, nil)
	mock := job(2, "", nil)
	for _, tg := range mock.TaskGroups {
		for _, task := range tg.Tasks {
			task.Driver, task.Config = "mock", map[string]any{"run_for": "1s"}
		}
	}
	off := job(2, "web:v2", map[string]any{"prefetch": false})
	rec := map[string]Progress{nodeID(0): {State: structs.PrefetchStateDone}}
	for _, c := range []struct {
		name string
		in   Input
		want bool
	}{
		{"docker job prefetching", Input{Deployment: f.dep, Job: f.v2}, false},
		{"mock job", Input{Deployment: f.dep, Job: mock}, true},
		{"prefetch off", Input{Deployment: f.dep, Job: off}, true},
		{"no job", Input{Deployment: f.dep}, true},
		{"mock job with a record", Input{Deployment: f.dep, Job: mock, Progress: rec}, false},
	} {
		if got := Idle(c.in); got != c.want {
			t.Errorf("%s: Idle = %v, want %v", c.name, got, c.want)
		}
	}
}
