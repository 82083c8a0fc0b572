package nomad

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/drover-project/drover/nomad/structs"
)

// BenchmarkRaftApplyPlan10k commits a plan of 10,000 new allocations
// through a real single-server raft (bolt log store, FSM, state store):
// encode, log append and fsync, FSM decode and state insert.
func BenchmarkRaftApplyPlan10k(b *testing.B) {
	srv, err := NewServer(Config{NodeName: "bench", DataDir: b.TempDir(), RPCAddr: "127.0.0.1:0", BootstrapExpect: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Shutdown()
	deadline := time.Now().Add(10 * time.Second)
	for !srv.IsLeader() {
		if time.Now().After(deadline) {
			b.Fatal("no leader")
		}
		time.Sleep(10 * time.Millisecond)
	}
	job := &structs.Job{ID: "bench", Namespace: "default", Type: structs.JobTypeSystem, Priority: 50,
		TaskGroups: []*structs.TaskGroup{{Name: "web", Count: 1}}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := &structs.ApplyPlanResultsRequest{Job: job, EvalID: uuid.NewString(), UpdatedAt: time.Now().UnixNano()}
		for n := 0; n < 10_000; n++ {
			req.AllocsUpdated = append(req.AllocsUpdated, &structs.Allocation{
				ID: uuid.NewString(), Namespace: "default", JobID: "bench", TaskGroup: "web",
				Name: "bench.web[0]", NodeID: fmt.Sprintf("node-%05d", n), DesiredStatus: structs.AllocDesiredStatusRun,
				ClientStatus: structs.AllocClientStatusPending, Metrics: &structs.AllocationMetric{},
				AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
					"server": {Cpu: structs.AllocatedCpuResources{CpuShares: 100}, Memory: structs.AllocatedMemoryResources{MemoryMB: 64}},
				}},
			})
		}
		if _, _, err := srv.raftApply(structs.ApplyPlanResultsRequestType, req); err != nil {
			b.Fatal(err)
		}
	}
}
