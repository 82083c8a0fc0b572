package scheduler

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// eachNode visits nodes in order of ID and then the missing nodes
// allocations name in order of ID, each once, whether the nodes come sorted
// (the state store's order) or not, and a duplicate node ID keeps its last
// node.
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
	want := []visit{{"b", b}, {"d", d2}, {"a", nil}, {"c", nil}, {"e", nil}}
	for name, nodes := range map[string][]*structs.Node{
		"sorted":    {b, d2},
		"unsorted":  {d2, b},
		"duplicate": {b, d, d2},
	} {
		t.Run(name, func(t *testing.T) {
			r := newSystemReconciler(SystemReconcileInput{Job: job, Nodes: nodes, Allocs: allocs})
			var got []visit
			r.eachNode(func(id string, node *structs.Node, class nodeClass) int {
				got = append(got, visit{id, node})
				require.Equal(t, node == nil, class == nodeGone, "class of %s", id)
				return 0
			})
			require.Len(t, got, len(want))
			for i := range want {
				require.Equal(t, want[i].id, got[i].id)
				require.Same(t, want[i].node, got[i].node, "node %s", want[i].id)
			}
		})
	}
}

// A group's placements are sized for the ready nodes in the job's scope
// without its allocation, not for every node: a job of one datacenter in a
// large cluster does not reserve room for the whole cluster.
func TestReconcilePlaceSizedForCandidates(t *testing.T) {
	job := testJob("web")
	var nodes []*structs.Node
	for i := 0; i < 100; i++ {
		n := testNode(fmt.Sprintf("n%03d", i))
		if i%10 != 0 {
			n.Datacenter = "dc2"
		}
		nodes = append(nodes, n)
	}
	allocs := []*structs.Allocation{testAlloc("1", job, "n000")}
	res := ReconcileSystem(SystemReconcileInput{Job: job, Nodes: nodes, Allocs: allocs})
	g := res.Groups[0]
	require.Len(t, g.Place, 9)
	require.Equal(t, 10, cap(g.Place))
}
