package scheduler

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// A slice taken from a slab is capped: appending to it never writes into
// the slice taken after it.
func TestSlab_TakeIsCapped(t *testing.T) {
	s := slab[int]{chunk: 8}
	a, b := s.take(2), s.take(3)
	a[0], a[1] = 1, 2
	b[0] = 7
	a = append(a, 3)
	require.Equal(t, []int{1, 2, 3}, a)
	require.Equal(t, []int{7, 0, 0}, b, "the append did not write into b")
	require.Nil(t, s.take(0))
	c := s.take(5) // more than is left: a fresh chunk
	require.Len(t, c, 5)
}

// Placements allocated from one arena are independent: each node's ports
// are its own, and neither the job nor an earlier placement changes.
// Task resources are shared only when no task has a network.
func TestResourceArena_PlacementsIndependent(t *testing.T) {
	for _, taskNets := range []bool{false, true} {
		t.Run(fmt.Sprintf("task networks %v", taskNets), func(t *testing.T) {
			tg := portsGroup([]int{8443}, 1)
			if taskNets {
				tg.Tasks[0].Resources.Networks = []*structs.NetworkResource{{DynamicPorts: []structs.Port{{Label: "metrics"}}}}
			}
			arena := newResourceArena(tg, 3)
			var got []*structs.AllocatedResources
			for i := 0; i < 3; i++ {
				node := testNode(fmt.Sprintf("n%d", i), func(n *structs.Node) {
					n.NodeResources.MinDynamicPort = 20000 + 10*i
					n.NodeResources.Networks = []*structs.NetworkResource{{IP: fmt.Sprintf("10.0.0.%d", i)}}
				})
				ar, dim := allocateResources(node, tg, nil, arena)
				require.Empty(t, dim)
				got = append(got, ar)
			}
			for i, ar := range got {
				require.Equal(t, 20000+10*i, ar.Shared.Networks[0].DynamicPorts[0].Value)
				require.Equal(t, fmt.Sprintf("10.0.0.%d", i), ar.Shared.Networks[0].IP)
				require.Equal(t, []structs.AllocatedPortMapping{
					{Label: "sa", Value: 8443, To: 8443, HostIP: fmt.Sprintf("10.0.0.%d", i)},
					{Label: "da", Value: 20000 + 10*i, To: 8080, HostIP: fmt.Sprintf("10.0.0.%d", i)},
				}, ar.Shared.Ports)
				tr := ar.Tasks[tg.Tasks[0].Name]
				require.Equal(t, int64(tg.Tasks[0].Resources.CPU), tr.Cpu.CpuShares)
				if taskNets {
					require.Equal(t, 20000+10*i+1, tr.Networks[0].DynamicPorts[0].Value)
				} else {
					require.Empty(t, tr.Networks)
				}
			}
			shared := fmt.Sprintf("%p", got[0].Tasks) == fmt.Sprintf("%p", got[2].Tasks)
			require.Equal(t, !taskNets, shared, "task resources shared only without task networks")
			require.Zero(t, tg.Networks[0].DynamicPorts[0].Value, "the job is not modified")
		})
	}
}
