package scheduler

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// eachNode visits nodes and the missing nodes allocations name in order of
// ID, each once, whether the nodes come sorted (the state store's order) or
// not, and a duplicate node ID keeps its last node.
func TestEachNodeOrder(t *testing.T) {
	job := testJob("web")
	allocs := []*structs.Allocation{
		testAlloc("1", job, "e"), testAlloc("2", job, "a"), testAlloc("3", job, "c"),
		testAlloc("4", job, "a"), testAlloc("5", job, "d"),
	}
	b, d, d2 := testNode("b"), testNode("d"), testNode("d")
	type visit struct {
		id   string
		node *structs.Node
	}
	want := []visit{{"a", nil}, {"b", b}, {"c", nil}, {"d", d2}, {"e", nil}}
	for name, nodes := range map[string][]*structs.Node{
		"sorted":    {b, d2},
		"unsorted":  {d2, b},
		"duplicate": {b, d, d2},
	} {
		t.Run(name, func(t *testing.T) {
			r := newReconciler(ReconcileInput{Job: job, Nodes: nodes, Allocs: allocs})
			var got []visit
			r.eachNode(func(id string, node *structs.Node) { got = append(got, visit{id, node}) })
			require.Len(t, got, len(want))
			for i := range want {
				require.Equal(t, want[i].id, got[i].id)
				require.Same(t, want[i].node, got[i].node, "node %s", want[i].id)
			}
		})
	}
}
