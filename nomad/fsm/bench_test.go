package fsm

import (
	"fmt"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/nomad/structs"
)

// BenchmarkApplyPlan10k applies, through FSM.Apply (decode included), a
// plan placing 10,000 new allocations of one job.
func BenchmarkApplyPlan10k(b *testing.B) {
	job := testJob("web")
	req := &structs.ApplyPlanResultsRequest{Job: job, UpdatedAt: 1}
	for i := 0; i < 10_000; i++ {
		req.AllocsUpdated = append(req.AllocsUpdated, testAlloc(job, fmt.Sprintf("node-%05d", i)))
	}
	data := encode(b, structs.ApplyPlanResultsRequestType, req)
	register := encode(b, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job})
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		f := newFSM()
		if resp := f.Apply(&raft.Log{Index: 1, Data: register}); resp != nil {
			if err, ok := resp.(error); ok {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		if resp := f.Apply(&raft.Log{Index: 2, Data: data}); resp != nil {
			b.Fatal(resp)
		}
	}
}
