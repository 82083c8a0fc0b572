package structs

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func fitNode() *Node {
	return &Node{
		NodeResources: NodeResources{
			Cpu:    NodeCpuResources{CpuShares: 1000},
			Memory: NodeMemoryResources{MemoryMB: 1024},
			Disk:   NodeDiskResources{DiskMB: 1000},
		},
		ReservedResources: NodeReservedResources{
			Cpu:      NodeReservedCpuResources{CpuShares: 100},
			Networks: NodeReservedNetworkResources{ReservedHostPorts: "22,9000-9001"},
		},
	}
}

func fitAlloc(cpu, mem int64, ports ...int) *Allocation {
	ar := &AllocatedResources{Tasks: map[string]*AllocatedTaskResources{
		"t": {Cpu: AllocatedCpuResources{CpuShares: cpu}, Memory: AllocatedMemoryResources{MemoryMB: mem}},
	}}
	for _, p := range ports {
		ar.Shared.Ports = append(ar.Shared.Ports, AllocatedPortMapping{Label: "p", Value: p})
	}
	return &Allocation{DesiredStatus: AllocDesiredStatusRun, ClientStatus: AllocClientStatusRunning, AllocatedResources: ar}
}

func TestAllocsFit(t *testing.T) {
	cases := []struct {
		name   string
		allocs []*Allocation
		fit    bool
		dim    string
	}{
		{"empty node fits", nil, true, ""},
		{"cpu exactly at capacity after reservation", []*Allocation{fitAlloc(900, 100)}, true, ""},
		{"cpu over capacity counts the reservation", []*Allocation{fitAlloc(500, 100), fitAlloc(401, 100)}, false, DimensionCPU},
		{"memory exhausted", []*Allocation{fitAlloc(10, 1000), fitAlloc(10, 100)}, false, DimensionMemory},
		{"static port collides with another alloc", []*Allocation{fitAlloc(10, 10, 8080), fitAlloc(10, 10, 8080)}, false, DimensionPorts},
		{"static port collides with a node reservation", []*Allocation{fitAlloc(10, 10, 9001)}, false, DimensionPorts},
		{"distinct ports fit", []*Allocation{fitAlloc(10, 10, 8080), fitAlloc(10, 10, 8081)}, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fit, dim := AllocsFit(fitNode(), tc.allocs)
			require.Equal(t, tc.fit, fit)
			require.Equal(t, tc.dim, dim)
		})
	}
}

func TestAllocsFitIgnoresTerminalAllocs(t *testing.T) {
	stopped := fitAlloc(900, 100, 8080)
	stopped.DesiredStatus = AllocDesiredStatusStop
	fit, _ := AllocsFit(fitNode(), []*Allocation{stopped, fitAlloc(900, 100, 8080)})
	require.True(t, fit)
}

func TestValidatePortSpec(t *testing.T) {
	require.NoError(t, ValidatePortSpec("22, 80,8000-8002"))
	require.NoError(t, ValidatePortSpec(""))
	require.Error(t, ValidatePortSpec("abc"))
	require.Error(t, ValidatePortSpec("90-80"))
	require.Error(t, ValidatePortSpec("70000"))
}

func TestEachPortOf(t *testing.T) {
	ports := func(spec string) []int {
		var out []int
		EachPortOf(spec, func(p int) { out = append(out, p) })
		return out
	}
	require.Equal(t, []int{22, 80, 8000, 8001, 8002}, ports("22, 80,8000-8002"))
	require.Empty(t, ports(""))
	require.Equal(t, []int{1}, ports("x,1,3-y,9-5"), "malformed parts are skipped")
}

func TestValidateNodeNetworks(t *testing.T) {
	addr := func(alias, address, reserved string) []*NodeNetworkResource {
		return []*NodeNetworkResource{{Mode: "host", Device: "eth1", Addresses: []NodeNetworkAddress{{Alias: alias, Address: address, ReservedPorts: reserved}}}}
	}
	require.NoError(t, ValidateNodeNetworks(nil))
	require.NoError(t, ValidateNodeNetworks(addr("public", "203.0.113.7", "22,80")))
	require.NoError(t, ValidateNodeNetworks(addr("v6", "fd00::7", "")))
	for _, tc := range []struct {
		nets []*NodeNetworkResource
		want string
	}{
		{addr("", "10.0.0.1", ""), `NodeResources.NodeNetworks[0].Addresses[0]: alias "" names no host network`},
		{addr("default", "10.0.0.1", ""), `alias "default" names no host network`},
		{addr("public", "10.0.0", ""), `NodeResources.NodeNetworks[0].Addresses[0]: address: ParseAddr("10.0.0"): IPv4 address too short`},
		{addr("public", "10.0.0.1", "99999"), `reserved ports: invalid port "99999"`},
		{append(addr("public", "10.0.0.1", ""), addr("public", "10.0.0.2", "")...), `NodeResources.NodeNetworks[1].Addresses[0]: host network "public" is given twice`},
		{[]*NodeNetworkResource{nil}, "NodeResources.NodeNetworks[0] is null"},
	} {
		err := ValidateNodeNetworks(tc.nets)
		require.ErrorIs(t, err, ErrBadRequest)
		require.ErrorContains(t, err, tc.want)
	}
}
