package scheduler

import (
	"cmp"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/drover-project/drover/nomad/structs"
)

// TestSplitTerminal: for any allocations, the live and the terminal ones,
// each sorted by ID, whatever the input's order; appending to a result
// never writes into the input's array, even where it has room (the
// reconciler cuts the lists from one slab, the next node's list after).
func TestSplitTerminal(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(0, 4).Draw(rt, "n")
		slab := make([]*structs.Allocation, n, n+2)
		allocs := slab[:0]
		for i := range n {
			a := &structs.Allocation{ID: fmt.Sprintf("a%d", rapid.IntRange(0, 9).Draw(rt, "id")*10+i),
				DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning}
			if rapid.Bool().Draw(rt, "terminal") {
				a.DesiredStatus = structs.AllocDesiredStatusStop
			}
			allocs = append(allocs, a)
		}
		input := slices.Clone(allocs)
		var wantLive, wantDone []*structs.Allocation
		sorted := slices.SortedFunc(slices.Values(allocs), func(a, b *structs.Allocation) int { return cmp.Compare(a.ID, b.ID) })
		for _, a := range sorted {
			if a.Terminal() {
				wantDone = append(wantDone, a)
			} else {
				wantLive = append(wantLive, a)
			}
		}
		live, done := splitTerminal(allocs)
		if !slices.Equal(live, wantLive) || !slices.Equal(done, wantDone) {
			rt.Fatalf("split %v: live %v done %v, want %v %v", ids(allocs), ids(live), ids(done), ids(wantLive), ids(wantDone))
		}
		_ = append(live, &structs.Allocation{ID: "x"})
		_ = append(done, &structs.Allocation{ID: "y"})
		if !slices.Equal(allocs, input) || slices.ContainsFunc(slab[:cap(slab)][n:], func(a *structs.Allocation) bool { return a != nil }) {
			rt.Fatalf("appending to a result wrote into the input's array: %v, was %v", ids(allocs), ids(input))
		}
	})
}

func ids(allocs []*structs.Allocation) []string {
	out := make([]string, len(allocs))
	for i, a := range allocs {
		out[i] = a.ID
	}
	return out
}
