package scheduler

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// newMetricBase counts runs of one datacenter once: interleaved, repeated
// and skipped datacenters, nodes not ready and nodes of another pool must
// still be counted node by node.
func TestNewMetricBaseCountsPerDatacenter(t *testing.T) {
	job := testJob("web")
	job.Datacenters = []string{"dc1", "dc2"}
	in := func(dc string) nodeOpt { return func(n *structs.Node) { n.Datacenter = dc } }
	pool := func(n *structs.Node) { n.NodePool = "gpu" }
	nodes := []*structs.Node{
		testNode("a", in("dc1")), testNode("b", in("dc1")),
		testNode("c", in("dc3")), // outside the job's datacenters
		testNode("d", in("dc2")),
		testNode("e", in("dc1"), ineligible), // in the pool, not ready
		testNode("f", in("dc1")),
		testNode("g", in("dc2"), pool), // another pool
		testNode("h", in("dc2")), testNode("i", in("dc3")),
	}
	m := newMetricBase(job, nodes)
	require.Equal(t, map[string]int{"dc1": 3, "dc2": 2}, m.available)
	require.Equal(t, 8, m.inPool)
	require.Equal(t, map[string]int{}, newMetricBase(job, nil).available)
}
