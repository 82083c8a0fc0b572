package nomad

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/drover-project/drover/nomad/structs"
)

// BenchmarkRaftApplyPlan10k commits a plan of 10,000 new allocations
// through a real single-server raft (bolt log store, FSM, state store) as
// the plan queue does (commitPlan): encode, log append and fsync, FSM
// decode and state insert.
func BenchmarkRaftApplyPlan10k(b *testing.B) {
	srv, err := NewServer(Config{NodeName: "bench", DataDir: b.TempDir(), RPCAddr: "127.0.0.1:0", BootstrapExpect: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Shutdown()
	deadline := time.Now().Add(10 * time.Second)
	// Leadership set-up (the first signing key's RSA generation, about
	// 120 ms of CPU) would otherwise run beside the first plans.
	for {
		if key, _ := srv.State().ActiveRootKey(nil); key != nil {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("no leader with a signing key")
		}
		time.Sleep(10 * time.Millisecond)
	}
	job := &structs.Job{ID: "bench", Namespace: "default", Type: structs.JobTypeSystem, Priority: 50,
		TaskGroups: []*structs.TaskGroup{{Name: "web", Count: 1}}}
	b.ReportAllocs()
	b.ResetTimer()
	var cpu time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer() // building the request is not the plan path
		req := &structs.ApplyPlanResultsRequest{Job: job, EvalID: uuid.NewString(), UpdatedAt: time.Now().UnixNano()}
		// As the scheduler builds a group's placements: one metric and,
		// with no task network, one task-resources map for all of them.
		metric := &structs.AllocationMetric{}
		tasks := map[string]*structs.AllocatedTaskResources{
			"server": {Cpu: structs.AllocatedCpuResources{CpuShares: 100}, Memory: structs.AllocatedMemoryResources{MemoryMB: 64}},
		}
		for n := 0; n < 10_000; n++ {
			req.AllocsUpdated = append(req.AllocsUpdated, &structs.Allocation{
				ID: uuid.NewString(), Namespace: "default", JobID: "bench", TaskGroup: "web", EvalID: req.EvalID,
				Name: "bench.web[0]", NodeID: fmt.Sprintf("node-%05d", n), DesiredStatus: structs.AllocDesiredStatusRun,
				ClientStatus: structs.AllocClientStatusPending, Metrics: metric,
				AllocatedResources: &structs.AllocatedResources{Tasks: tasks},
			})
		}
		start := cpuTime()
		b.StartTimer()
		if _, err := srv.commitPlan(req); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - start
	}
	b.ReportMetric(float64(cpu)/float64(b.N)/1e6, "cpu-ms/op")
}

// cpuTime is the CPU time the process used so far, user and system, all
// threads (raft's, the FSM's and the garbage collector's included): on a
// shared machine it varies less than the wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
