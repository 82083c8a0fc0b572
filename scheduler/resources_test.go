package scheduler

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// portsGroup returns a group with one group network of the given static and
// dynamic ports ("http", "admin", ... labels are generated).
func portsGroup(static []int, dynamic int) *structs.TaskGroup {
	tg := testJob("web").TaskGroups[0]
	nw := &structs.NetworkResource{}
	for i, p := range static {
		nw.ReservedPorts = append(nw.ReservedPorts, structs.Port{Label: "s" + string(rune('a'+i)), Value: p, To: -1})
	}
	for i := 0; i < dynamic; i++ {
		nw.DynamicPorts = append(nw.DynamicPorts, structs.Port{Label: "d" + string(rune('a'+i)), To: 8080})
	}
	tg.Networks = []*structs.NetworkResource{nw}
	return tg
}

func mappings(ar *structs.AllocatedResources) map[string]int {
	out := map[string]int{}
	for _, p := range ar.Shared.Ports {
		out[p.Label] = p.Value
	}
	return out
}

func TestAllocateResources_Ports(t *testing.T) {
	withRange := func(lo, hi int) nodeOpt {
		return func(n *structs.Node) { n.NodeResources.MinDynamicPort, n.NodeResources.MaxDynamicPort = lo, hi }
	}
	reserving := func(spec string) nodeOpt {
		return func(n *structs.Node) { n.ReservedResources.Networks.ReservedHostPorts = spec }
	}
	other := func(ports ...int) *structs.Allocation {
		a := testAlloc("other", testJob("other"), "a")
		for _, p := range ports {
			a.AllocatedResources.Shared.Ports = append(a.AllocatedResources.Shared.Ports, structs.AllocatedPortMapping{Label: "x", Value: p})
		}
		return a
	}
	cases := []struct {
		name    string
		node    *structs.Node
		others  []*structs.Allocation
		tg      *structs.TaskGroup
		want    map[string]int
		wantDim string
	}{
		{
			name: "lowest free ports of the default range",
			node: testNode("a"),
			tg:   portsGroup(nil, 2),
			want: map[string]int{"da": 20000, "db": 20001},
		},
		{
			name: "node range",
			node: testNode("a", withRange(30000, 30010)),
			tg:   portsGroup(nil, 1),
			want: map[string]int{"da": 30000},
		},
		{
			name: "reserved host ports and other allocations' ports are skipped",
			node: testNode("a", reserving("20000-20002,20004")),
			tg:   portsGroup(nil, 2),
			others: []*structs.Allocation{other(20003, 20005),
				withDesiredStop(other(20006))}, // a stopped allocation frees its port
			want: map[string]int{"da": 20006, "db": 20007},
		},
		{
			name: "a dynamic port never takes the group's static port",
			node: testNode("a", withRange(20000, 20002)),
			tg:   portsGroup([]int{20000}, 2),
			want: map[string]int{"sa": 20000, "da": 20001, "db": 20002},
		},
		{
			name:    "dynamic range exhausted",
			node:    testNode("a", withRange(20000, 20001), reserving("20000")),
			tg:      portsGroup(nil, 2),
			wantDim: DimensionDynamicPorts,
		},
		{
			name:    "static port held by another allocation",
			node:    testNode("a"),
			tg:      portsGroup([]int{8080}, 0),
			others:  []*structs.Allocation{other(8080)},
			wantDim: structs.DimensionPorts,
		},
		{
			name:    "static port reserved by the node",
			node:    testNode("a", reserving("22,8080")),
			tg:      portsGroup([]int{8080}, 0),
			wantDim: structs.DimensionPorts,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ar, dim := allocateResources(tc.node, tc.tg, tc.others, nil)
			require.Equal(t, tc.wantDim, dim)
			if tc.wantDim != "" {
				require.Nil(t, ar)
				return
			}
			require.Equal(t, tc.want, mappings(ar))
			for _, p := range tc.tg.Networks[0].DynamicPorts {
				require.Zero(t, p.Value, "the job is not modified")
			}
		})
	}
}

func TestAllocateResources_Mapping(t *testing.T) {
	node := testNode("a", func(n *structs.Node) {
		n.NodeResources.Networks = []*structs.NetworkResource{{IP: "10.0.0.5"}}
	})
	tg := portsGroup([]int{8443}, 1)
	tg.Tasks[0].Resources = &structs.Resources{CPU: 250, MemoryMB: 128, MemoryMaxMB: 256,
		Networks: []*structs.NetworkResource{{DynamicPorts: []structs.Port{{Label: "metrics"}}}}}
	ar, dim := allocateResources(node, tg, nil, nil)
	require.Empty(t, dim)
	require.Equal(t, []structs.AllocatedPortMapping{
		{Label: "sa", Value: 8443, To: 8443, HostIP: "10.0.0.5"}, // To -1 maps to the host port
		{Label: "da", Value: 20000, To: 8080, HostIP: "10.0.0.5"},
	}, ar.Shared.Ports)
	require.Equal(t, int64(300), ar.Shared.DiskMB)
	tr := ar.Tasks["server"]
	require.Equal(t, int64(250), tr.Cpu.CpuShares)
	require.Equal(t, int64(128), tr.Memory.MemoryMB)
	require.Equal(t, int64(256), tr.Memory.MemoryMaxMB)
	require.Equal(t, 20001, tr.Networks[0].DynamicPorts[0].Value, "task ports come after group ports")
	require.Equal(t, "10.0.0.5", tr.Networks[0].IP)
	require.Zero(t, tg.Tasks[0].Resources.Networks[0].DynamicPorts[0].Value, "the job is not modified")
}
