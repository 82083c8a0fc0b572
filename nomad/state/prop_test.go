package state

import (
	"fmt"
	"testing"

	"github.com/google/uuid"
	"pgregory.net/rapid"

	"github.com/drover-project/drover/nomad/structs"
)

// TestProp_AllocWritesLoseNothing drives random sequences of allocation
// writes (server upserts, client updates, desired-status changes, plan
// results with replacements) and checks after every step that no
// allocation is lost, create indexes never change, and every index only
// grows.
func TestProp_AllocWritesLoseNothing(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := NewStateStore()
		jobs := []*structs.Job{testJob("web"), testJob("api")}
		index := uint64(1)
		for _, j := range jobs {
			if err := s.UpsertJob(index, nil, j); err != nil {
				rt.Fatalf("upsert job: %v", err)
			}
			index++
		}
		created := map[string]uint64{} // alloc ID → CreateIndex
		var ids []string
		nodes := []string{"n1", "n2", "n3"}
		statuses := []string{
			structs.AllocClientStatusPending, structs.AllocClientStatusRunning,
			structs.AllocClientStatusComplete, structs.AllocClientStatusFailed,
			structs.AllocClientStatusLost,
		}
		newAlloc := func() *structs.Allocation {
			a := testAlloc(jobs[rapid.IntRange(0, 1).Draw(rt, "job")], rapid.SampledFrom(nodes).Draw(rt, "node"))
			a.ID = uuid.NewString()
			return a
		}
		pick := func() string { return rapid.SampledFrom(ids).Draw(rt, "alloc") }
		lastTables := map[string]uint64{}

		steps := rapid.IntRange(1, 30).Draw(rt, "steps")
		for i := 0; i < steps; i++ {
			op := "insert"
			if len(ids) > 0 {
				op = rapid.SampledFrom([]string{"insert", "server", "client", "stop", "plan"}).Draw(rt, "op")
			}
			var err error
			var added []string
			switch op {
			case "insert":
				n := rapid.IntRange(1, 4).Draw(rt, "n")
				var as []*structs.Allocation
				for k := 0; k < n; k++ {
					a := newAlloc()
					as = append(as, a)
					added = append(added, a.ID)
				}
				err = s.UpsertAllocs(index, as)
			case "server":
				a := mustAllocR(rt, s, pick()).Copy()
				a.Job = nil
				a.DesiredDescription = fmt.Sprint("update ", index)
				err = s.UpsertAllocs(index, []*structs.Allocation{a})
			case "client":
				u := &structs.Allocation{ID: pick(), ClientStatus: rapid.SampledFrom(statuses).Draw(rt, "status")}
				unknown := &structs.Allocation{ID: uuid.NewString(), ClientStatus: structs.AllocClientStatusRunning}
				err = s.UpdateAllocsFromClient(index, []*structs.Allocation{u, unknown}, int64(index))
			case "stop":
				err = s.UpdateAllocsDesiredStatus(index, []string{pick()}, structs.AllocDesiredStatusStop, "stopped")
			case "plan":
				old := mustAllocR(rt, s, pick())
				stop := old.Copy()
				stop.DesiredStatus = structs.AllocDesiredStatusStop
				repl := newAlloc()
				repl.PreviousAllocation = old.ID
				added = append(added, repl.ID)
				err = s.UpsertPlanResults(index, &structs.ApplyPlanResultsRequest{
					AllocsUpdated: []*structs.Allocation{repl},
					AllocsStopped: []*structs.Allocation{stop},
					UpdatedAt:     int64(index),
				})
			}
			if err != nil {
				rt.Fatalf("step %d %s: %v", i, op, err)
			}
			for _, id := range added {
				created[id] = index
				ids = append(ids, id)
			}
			checkAllocInvariants(rt, s, created, index, lastTables)
			checkJobCounts(rapidT{rt}, s)
			index++
		}
	})
}

// mustAllocR returns stored alloc id or fails rt.
func mustAllocR(rt *rapid.T, s *StateStore, id string) *structs.Allocation {
	a, err := s.AllocByID(nil, id)
	if err != nil || a == nil {
		rt.Fatalf("alloc %s lost: %v", id, err)
	}
	return a
}

// checkAllocInvariants checks the store after a write at index.
func checkAllocInvariants(rt *rapid.T, s *StateStore, created map[string]uint64, index uint64, lastTables map[string]uint64) {
	all, err := s.Allocs(nil)
	if err != nil {
		rt.Fatalf("list allocs: %v", err)
	}
	if len(all) != len(created) {
		rt.Fatalf("have %d allocs, inserted %d", len(all), len(created))
	}
	for _, a := range all {
		want, ok := created[a.ID]
		switch {
		case !ok:
			rt.Fatalf("alloc %s appeared from nowhere", a.ID)
		case a.CreateIndex != want:
			rt.Fatalf("alloc %s CreateIndex %d, want %d", a.ID, a.CreateIndex, want)
		case a.ModifyIndex < a.CreateIndex || a.ModifyIndex > index:
			rt.Fatalf("alloc %s ModifyIndex %d outside [%d, %d]", a.ID, a.ModifyIndex, a.CreateIndex, index)
		case a.Job == nil:
			rt.Fatalf("alloc %s lost its job", a.ID)
		}
	}
	if got := s.LatestIndex(); got != index {
		rt.Fatalf("LatestIndex %d after a write at %d", got, index)
	}
	entries, err := s.Indexes()
	if err != nil {
		rt.Fatalf("indexes: %v", err)
	}
	for _, e := range entries {
		if e.Value < lastTables[e.Key] {
			rt.Fatalf("index of %s went back from %d to %d", e.Key, lastTables[e.Key], e.Value)
		}
		lastTables[e.Key] = e.Value
	}
}
