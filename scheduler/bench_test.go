package scheduler

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/nomad/structs"
)

// discardPlanner accepts every plan without applying it, so each benchmark
// iteration evaluates the same state.
type discardPlanner struct{ plan *structs.Plan }

func (p *discardPlanner) SubmitPlan(plan *structs.Plan) (*structs.PlanResult, State, error) {
	p.plan = plan
	return &structs.PlanResult{NodeUpdate: plan.NodeUpdate, NodeAllocation: plan.NodeAllocation,
		Deployment: plan.Deployment, DeploymentUpdates: plan.DeploymentUpdates}, nil, nil
}
func (p *discardPlanner) UpdateEval(*structs.Evaluation) error { return nil }
func (p *discardPlanner) CreateEval(*structs.Evaluation) error { return nil }

// benchState returns n ready nodes and a system job (with an update block
// of max_parallel mp, a constraint and a dynamic port) registered at
// version 0; with running, every node runs version 0 and the job is at
// version 1 (a destructive change).
func benchState(n, mp int, running bool) (*fakeState, *structs.Job) {
	s := newFakeState()
	for i := 0; i < n; i++ {
		s.upsertNode(testNode(fmt.Sprintf("node-%05d", i)))
	}
	job := withUpdate(testJob("web"))
	job.TaskGroups[0].Update.MaxParallel = mp
	job.Constraints = []*structs.Constraint{{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "linux"}}
	job.TaskGroups[0].Networks = []*structs.NetworkResource{{DynamicPorts: []structs.Port{{Label: "http"}}}}
	s.upsertJob(job)
	if !running {
		return s, job
	}
	for i := 0; i < n; i++ {
		s.upsertAlloc(testAlloc(fmt.Sprintf("alloc-%05d", i), job, fmt.Sprintf("node-%05d", i)))
	}
	v1 := nextVersion(job, destructiveChange)
	s.upsertJob(v1)
	return s, v1
}

func BenchmarkSystemEval(b *testing.B) {
	now := func() time.Time { return time.Unix(1_700_000_000, 0) }
	// destructive replaces every node in one wave (max_parallel = nodes);
	// wave gates all but max_parallel = 10 of them.
	for _, scenario := range []struct {
		name    string
		running bool
		mp      func(n int) int
		want    func(n int) int
	}{
		{"place", false, func(int) int { return 1 }, func(n int) int { return n }},
		{"destructive", true, func(n int) int { return n }, func(n int) int { return n }},
		{"wave", true, func(int) int { return 10 }, func(int) int { return 10 }},
	} {
		for _, n := range []int{1_000, 5_000, 10_000} {
			b.Run(fmt.Sprintf("%s/nodes=%d", scenario.name, n), func(b *testing.B) {
				state, job := benchState(n, scenario.mp(n), scenario.running)
				eval := &structs.Evaluation{ID: "eval", Namespace: job.Namespace, JobID: job.ID, Type: job.Type}
				planner := &discardPlanner{}
				b.ReportAllocs()
				b.ResetTimer()
				cpu := cpuTime()
				for i := 0; i < b.N; i++ {
					sched := NewSystemScheduler(hclog.NewNullLogger(), state, planner, now)
					if err := sched.Process(eval); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				reportCPU(b, cpu)
				if got := len(planner.plan.NodeAllocation); got != scenario.want(n) {
					b.Fatalf("plan places on %d nodes, want %d", got, scenario.want(n))
				}
			})
		}
	}
}

// cpuTime is the CPU time the process used so far, user and system, all
// threads (the garbage collector's included).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the process CPU time per operation since start: on a
// shared machine it varies less than the wall time.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N)/1e6, "cpu-ms/op")
}
