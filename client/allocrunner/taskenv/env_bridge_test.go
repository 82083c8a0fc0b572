package taskenv

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// TestBuildBridgePorts: in bridge mode a port has its host side
// (NOMAD_IP/HOST_PORT/ADDR, on the host's address) and its side in the
// allocation's namespace (NOMAD_ALLOC_*), as in Nomad; in the host's
// network there is no NOMAD_ALLOC_*.
func TestBuildBridgePorts(t *testing.T) {
	alloc := &structs.Allocation{
		ID: "a1", TaskGroup: "g", Job: &structs.Job{ID: "j", TaskGroups: []*structs.TaskGroup{{Name: "g"}}},
		AllocatedResources: &structs.AllocatedResources{Shared: structs.AllocatedSharedResources{Ports: []structs.AllocatedPortMapping{
			{Label: "http", Value: 25000, To: 8080, HostIP: "192.168.1.5"},
			{Label: "raw", Value: 25001},
			{Label: "same", Value: 25002, To: -1},
		}}},
	}
	ns := &structs.AllocNetworkStatus{InterfaceName: "eth0", Address: "172.26.64.7"}
	cases := []struct {
		name string
		net  *structs.AllocNetworkStatus
		want map[string]string // "" means unset
	}{
		{name: "bridge", net: ns, want: map[string]string{
			"NOMAD_IP_http": "192.168.1.5", "NOMAD_PORT_http": "8080", "NOMAD_HOST_PORT_http": "25000",
			"NOMAD_ADDR_http": "192.168.1.5:25000", "NOMAD_HOST_ADDR_http": "192.168.1.5:25000",
			"NOMAD_ALLOC_INTERFACE_http": "eth0", "NOMAD_ALLOC_IP_http": "172.26.64.7",
			"NOMAD_ALLOC_PORT_http": "8080", "NOMAD_ALLOC_ADDR_http": "172.26.64.7:8080",
			"NOMAD_ALLOC_PORT_raw": "25001", "NOMAD_ALLOC_ADDR_raw": "172.26.64.7:25001", "NOMAD_IP_raw": "10.1.1.1",
			"NOMAD_ALLOC_PORT_same": "25002", "NOMAD_PORT_same": "25002",
		}},
		{name: "host network", want: map[string]string{
			"NOMAD_PORT_http": "8080", "NOMAD_HOST_PORT_http": "25000",
			"NOMAD_ALLOC_IP_http": "", "NOMAD_ALLOC_PORT_http": "", "NOMAD_ALLOC_ADDR_raw": "", "NOMAD_ALLOC_INTERFACE_http": "",
		}},
		{name: "namespace without an address yet", net: &structs.AllocNetworkStatus{InterfaceName: "eth0"}, want: map[string]string{
			"NOMAD_ALLOC_IP_http": "", "NOMAD_PORT_http": "8080",
		}},
	}
	node := &structs.Node{Attributes: map[string]string{NodeIPAttribute: "10.1.1.1"}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := Build(Input{Alloc: alloc, Node: node, AllocNetwork: tc.net}).Map()
			for k, v := range tc.want {
				got, ok := env[k]
				if v == "" {
					require.False(t, ok, "%s is set to %q", k, got)
					continue
				}
				require.Equal(t, v, got, k)
			}
		})
	}
}
