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

// BenchmarkClientUpdates5kOf10k applies one batch of 5,000 client updates
// (pending to running, with task states and a healthy deployment status)
// to a job of 10,000 allocations in one deployment: what a fleet's
// coalesced status reports cost the FSM.
func BenchmarkClientUpdates5kOf10k(b *testing.B) {
	job := testJob("web")
	dep := &structs.Deployment{ID: "d1", Namespace: job.Namespace, JobID: job.ID, Status: structs.DeploymentStatusRunning,
		TaskGroups: map[string]*structs.DeploymentState{job.TaskGroups[0].Name: {DesiredTotal: 10_000}}}
	allocs := make([]*structs.Allocation, 10_000)
	for i := range allocs {
		allocs[i] = testAlloc(job, fmt.Sprintf("node-%05d", i))
		allocs[i].DeploymentID = dep.ID
	}
	healthy := true
	updates := make([]*structs.Allocation, 5_000)
	for i := range updates {
		updates[i] = &structs.Allocation{ID: allocs[i].ID, ClientStatus: structs.AllocClientStatusRunning,
			TaskStates:       map[string]*structs.TaskState{"server": {State: "running", Events: []*structs.TaskEvent{{Type: "Started"}}}},
			DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: &healthy}}
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		s := NewStateStore()
		if err := s.UpsertJob(1, nil, job); err != nil {
			b.Fatal(err)
		}
		if err := s.UpsertDeployment(2, dep); err != nil {
			b.Fatal(err)
		}
		if err := s.UpsertAllocs(3, allocs); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := s.UpdateAllocsFromClient(4, updates, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpsertAllocs10kInto100k is BenchmarkUpsertAllocs10k into a table
// that already holds 100,000 allocations (ten earlier versions of the job):
// the cost of a write should follow its size, not the table's.
func BenchmarkUpsertAllocs10kInto100k(b *testing.B) {
	job := testJob("web")
	s := NewStateStore()
	if err := s.UpsertJob(1, nil, job); err != nil {
		b.Fatal(err)
	}
	index := uint64(2)
	batch := func() []*structs.Allocation {
		allocs := make([]*structs.Allocation, 10_000)
		for i := range allocs {
			allocs[i] = testAlloc(job, fmt.Sprintf("node-%05d", i))
		}
		return allocs
	}
	for range 10 {
		if err := s.UpsertAllocs(index, batch()); err != nil {
			b.Fatal(err)
		}
		index++
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		allocs := batch()
		b.StartTimer()
		if err := s.UpsertAllocs(index, allocs); err != nil {
			b.Fatal(err)
		}
		index++
	}
}

// BenchmarkHealthVerdictOf6k is one client update carrying one health
// verdict, in a deployment of a job with 6,000 allocations (two versions
// on 3,000 nodes, as during a rollout): its cost should follow the update,
// not the job's allocations.
func BenchmarkHealthVerdictOf6k(b *testing.B) {
	job := testJob("web")
	dep := &structs.Deployment{ID: "d1", Namespace: job.Namespace, JobID: job.ID, Status: structs.DeploymentStatusRunning,
		TaskGroups: map[string]*structs.DeploymentState{job.TaskGroups[0].Name: {DesiredTotal: 3_000}}}
	allocs := make([]*structs.Allocation, 6_000)
	for i := range allocs {
		allocs[i] = testAlloc(job, fmt.Sprintf("node-%05d", i%3_000))
		if i >= 3_000 {
			allocs[i].DeploymentID = dep.ID
		}
	}
	s := NewStateStore()
	if err := s.UpsertJob(1, nil, job); err != nil {
		b.Fatal(err)
	}
	if err := s.UpsertDeployment(2, dep); err != nil {
		b.Fatal(err)
	}
	if err := s.UpsertAllocs(3, allocs); err != nil {
		b.Fatal(err)
	}
	index := uint64(4)
	b.ReportAllocs()
	for b.Loop() {
		healthy := index%2 == 0
		u := &structs.Allocation{ID: allocs[3_000+int(index)%3_000].ID, ClientStatus: structs.AllocClientStatusRunning,
			DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: &healthy}}
		if err := s.UpdateAllocsFromClient(index, []*structs.Allocation{u}, int64(index)); err != nil {
			b.Fatal(err)
		}
		index++
	}
}
