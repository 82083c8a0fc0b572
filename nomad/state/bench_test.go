package state

import (
	"fmt"
	"testing"

	"github.com/drover-project/drover/nomad/structs"
)

// BenchmarkUpsertAllocs10k inserts 10,000 new allocations of one job in one
// UpsertAllocs call, the size of a system job's first plan on a large
// cluster.
func BenchmarkUpsertAllocs10k(b *testing.B) {
	job := testJob("web")
	allocs := make([]*structs.Allocation, 10_000)
	for i := range allocs {
		allocs[i] = testAlloc(job, fmt.Sprintf("node-%05d", i))
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		s := NewStateStore()
		if err := s.UpsertJob(1, nil, job); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := s.UpsertAllocs(2, allocs); err != nil {
			b.Fatal(err)
		}
	}
}
