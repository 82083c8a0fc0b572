package scheduler

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// hostNetNode is a node at 192.168.1.5 with host networks "public"
// (203.0.113.7, reserving 80) and "private" (10.0.0.5).
func hostNetNode() *structs.Node {
	n := testNode("a")
	n.Attributes[structs.NodeAddressAttribute] = "192.168.1.5"
	n.NodeResources.NodeNetworks = []*structs.NodeNetworkResource{
		{Mode: "host", Device: "eth1", Addresses: []structs.NodeNetworkAddress{
			{Family: "ipv4", Alias: "public", Address: "203.0.113.7", ReservedPorts: "80"},
			{Family: "ipv4", Alias: "private", Address: "10.0.0.5"},
		}},
	}
	return n
}

type hostPortWant struct {
	value  int
	hostIP string
}

// TestAllocateResources_HostNetworks: ports are taken and mapped per
// address; a host network's reserved ports are taken on its address only,
// the node's on every address.
func TestAllocateResources_HostNetworks(t *testing.T) {
	port := func(label string, value int, hn string) structs.Port {
		return structs.Port{Label: label, Value: value, To: -1, HostNetwork: hn}
	}
	group := func(static, dynamic []structs.Port) *structs.TaskGroup {
		tg := testJob("web").TaskGroups[0]
		tg.Networks = []*structs.NetworkResource{{ReservedPorts: static, DynamicPorts: dynamic}}
		return tg
	}
	holding := func(hostIP string, ports ...int) *structs.Allocation {
		a := testAlloc("other", testJob("other"), "a")
		for _, p := range ports {
			a.AllocatedResources.Shared.Ports = append(a.AllocatedResources.Shared.Ports, structs.AllocatedPortMapping{Label: "x", Value: p, HostIP: hostIP})
		}
		return a
	}
	cases := []struct {
		name    string
		node    func(*structs.Node)
		others  []*structs.Allocation
		tg      *structs.TaskGroup
		want    map[string]hostPortWant
		wantIP  string // the group network's IP
		wantDim string
	}{
		{
			name:   "the same static port on two addresses",
			tg:     group([]structs.Port{port("a", 8080, ""), port("b", 8080, "private")}, nil),
			want:   map[string]hostPortWant{"a": {8080, ""}, "b": {8080, "10.0.0.5"}},
			wantIP: "10.0.0.5",
		},
		{
			name:    "the same static port twice on one address",
			tg:      group([]structs.Port{port("a", 8080, "private"), port("b", 8080, "private")}, nil),
			wantDim: structs.DimensionPorts,
		},
		{
			name:    "a host network's reserved port on its address",
			tg:      group([]structs.Port{port("a", 80, "public")}, nil),
			wantDim: structs.DimensionPorts,
		},
		{
			name:   "a host network's reserved port is free on the others",
			tg:     group([]structs.Port{port("a", 80, "private"), port("b", 80, "default")}, nil),
			want:   map[string]hostPortWant{"a": {80, "10.0.0.5"}, "b": {80, ""}},
			wantIP: "10.0.0.5",
		},
		{
			name:    "the node's reserved ports are taken on every address",
			node:    func(n *structs.Node) { n.ReservedResources.Networks.ReservedHostPorts = "22" },
			tg:      group([]structs.Port{port("a", 22, "private")}, nil),
			wantDim: structs.DimensionPorts,
		},
		{
			name:   "another allocation's port on another address",
			others: []*structs.Allocation{holding("10.0.0.5", 9000), holding("", 9001)},
			tg:     group([]structs.Port{port("a", 9000, "public"), port("b", 9001, "private")}, nil),
			want:   map[string]hostPortWant{"a": {9000, "203.0.113.7"}, "b": {9001, "10.0.0.5"}},
			wantIP: "203.0.113.7",
		},
		{
			name:    "another allocation's port on the same address",
			others:  []*structs.Allocation{holding("10.0.0.5", 9000)},
			tg:      group([]structs.Port{port("a", 9000, "private")}, nil),
			wantDim: structs.DimensionPorts,
		},
		{
			name:    "a default port held on the node's address by its value",
			others:  []*structs.Allocation{holding("192.168.1.5", 9000)},
			tg:      group([]structs.Port{port("a", 9000, "")}, nil),
			wantDim: structs.DimensionPorts,
		},
		{
			name:   "dynamic ports start over on each address",
			others: []*structs.Allocation{holding("", 20000)},
			tg:     group(nil, []structs.Port{port("a", 0, ""), port("b", 0, "private"), port("c", 0, "private")}),
			want:   map[string]hostPortWant{"a": {20001, ""}, "b": {20000, "10.0.0.5"}, "c": {20001, "10.0.0.5"}},
			wantIP: "10.0.0.5",
		},
		{
			name:    "a host network the node lacks",
			tg:      group([]structs.Port{port("a", 8080, "dmz")}, nil),
			wantDim: `missing host network "dmz" for port "a"`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node := hostNetNode()
			if tc.node != nil {
				tc.node(node)
			}
			ar, dim := allocateResources(node, tc.tg, tc.others, nil)
			if tc.wantDim != "" {
				require.Nil(t, ar)
				require.Equal(t, tc.wantDim, dim)
				return
			}
			require.Empty(t, dim)
			got := map[string]hostPortWant{}
			for _, p := range ar.Shared.Ports {
				got[p.Label] = hostPortWant{p.Value, p.HostIP}
			}
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.wantIP, ar.Shared.Networks[0].IP)
			// What the scheduler grants, the plan applier's fit check accepts.
			a := testAlloc("new", testJob("web"), "a")
			a.AllocatedResources = ar
			fit, fdim := structs.AllocsFit(node, append(append([]*structs.Allocation(nil), tc.others...), a))
			require.True(t, fit, fdim)
		})
	}
}

// TestAllocsFit_HostNetworks: the plan applier refuses two allocations
// holding one port on one address, and not on two addresses.
func TestAllocsFit_HostNetworks(t *testing.T) {
	node := hostNetNode()
	holding := func(hostIP string, p int) *structs.Allocation {
		a := testAlloc("x", testJob("x"), "a")
		a.AllocatedResources.Shared.Ports = []structs.AllocatedPortMapping{{Label: "x", Value: p, HostIP: hostIP}}
		return a
	}
	fit, _ := structs.AllocsFit(node, []*structs.Allocation{holding("10.0.0.5", 80), holding("", 80)})
	require.True(t, fit)
	fit, dim := structs.AllocsFit(node, []*structs.Allocation{holding("10.0.0.5", 81), holding("10.0.0.5", 81)})
	require.False(t, fit)
	require.Equal(t, structs.DimensionPorts, dim)
	fit, _ = structs.AllocsFit(node, []*structs.Allocation{holding("192.168.1.5", 81), holding("", 81)})
	require.False(t, fit, "the default address is the node's address")
	fit, _ = structs.AllocsFit(node, []*structs.Allocation{holding("203.0.113.7", 80)})
	require.False(t, fit, "public reserves 80")
}

// TestFeasible_HostNetworks: a group whose port names a host network is
// feasible only on nodes that have it, and the reason names it.
func TestFeasible_HostNetworks(t *testing.T) {
	job := testJob("web")
	tg := job.TaskGroups[0]
	tg.Networks = []*structs.NetworkResource{{DynamicPorts: []structs.Port{{Label: "http", HostNetwork: "private"}}}}
	feasible := NewFeasibleFunc(job)
	ok, why := feasible(hostNetNode(), tg)
	require.True(t, ok, why)
	ok, why = feasible(testNode("b"), tg)
	require.False(t, ok)
	require.Equal(t, `missing host network "private" for port "http"`, why)

	tg.Networks[0].DynamicPorts[0].HostNetwork = "default"
	tg.Tasks[0].Resources.Networks = []*structs.NetworkResource{{ReservedPorts: []structs.Port{{Label: "legacy", Value: 7000, HostNetwork: "dmz"}}}}
	ok, why = feasible(hostNetNode(), tg)
	require.False(t, ok)
	require.Equal(t, `missing host network "dmz" for port "legacy"`, why)
}
