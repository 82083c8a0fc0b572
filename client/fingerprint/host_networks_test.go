package fingerprint

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/helper/sockaddrtmpl"
	"github.com/drover-project/drover/nomad/structs"
)

func TestHostNetworks(t *testing.T) {
	ifaces := []Interface{
		{Name: "lo", Addrs: []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}},
		{Name: "eth0", Addrs: []netip.Addr{netip.MustParseAddr("192.168.1.5"), netip.MustParseAddr("10.1.2.3")}},
		{Name: "eth1", Addrs: []netip.Addr{netip.MustParseAddr("10.9.0.7"), netip.MustParseAddr("fd00::7")}},
		{Name: "down"},
	}
	cfg := map[string]*structs.ClientHostNetworkConfig{
		"private":  {Name: "private", CIDR: "10.0.0.0/8", ReservedPorts: "22"},
		"eth1":     {Name: "eth1", Interface: "eth1"},
		"eth1-v6":  {Name: "eth1-v6", Interface: "eth1", CIDR: "fd00::/8"},
		"nowhere":  {Name: "nowhere", CIDR: "172.16.0.0/12"},
		"noiface":  {Name: "noiface", Interface: "eth9"},
		"noaddr":   {Name: "noaddr", Interface: "down"},
		"outside":  {Name: "outside", Interface: "eth0", CIDR: "10.9.0.0/16"},
		"loopback": {Name: "loopback", CIDR: "127.0.0.0/8"},
	}
	nets, unresolved := HostNetworks(cfg, ifaces)
	require.Equal(t, []*structs.NodeNetworkResource{
		{Mode: "host", Device: "lo", Addresses: []structs.NodeNetworkAddress{
			{Family: "ipv4", Alias: "loopback", Address: "127.0.0.1"},
		}},
		{Mode: "host", Device: "eth0", Addresses: []structs.NodeNetworkAddress{
			// the first address of any interface inside the cidr
			{Family: "ipv4", Alias: "private", Address: "10.1.2.3", ReservedPorts: "22"},
		}},
		{Mode: "host", Device: "eth1", Addresses: []structs.NodeNetworkAddress{
			{Family: "ipv4", Alias: "eth1", Address: "10.9.0.7"},
			{Family: "ipv6", Alias: "eth1-v6", Address: "fd00::7"},
		}},
	}, nets)
	require.Equal(t, map[string]string{
		"nowhere": "no interface has an address in 172.16.0.0/12",
		"noiface": `no interface "eth9"`,
		"noaddr":  `interface "down" has no address`,
		"outside": `interface "eth0" has no address in 10.9.0.0/16`,
	}, unresolved)
}

func TestResolveInterfaceTemplates(t *testing.T) {
	addrs, err := sockaddrtmpl.Addrs("eth0=192.168.1.5/24", "eth0=10.1.2.3/16", "eth1=10.9.0.7/16")
	require.NoError(t, err)
	for _, tc := range []struct {
		name, iface, want, err string
	}{
		{name: "plain name", iface: "eth7", want: "eth7"},
		{name: "empty", iface: "", want: ""},
		{name: "template", iface: `{{ . | include "network" "10.9.0.0/16" | attr "name" }}`, want: "eth1"},
		{name: "nothing", iface: `{{ . | include "network" "172.16.0.0/12" | attr "name" }}`,
			err: `client.host_network "n".interface: go-sockaddr template "{{ . | include \"network\" \"172.16.0.0/12\" | attr \"name\" }}" resolves to no interface`},
		{name: "two", iface: `{{ . | include "network" "10.0.0.0/8" | join "name" " " }}`,
			err: `client.host_network "n".interface: go-sockaddr template "{{ . | include \"network\" \"10.0.0.0/8\" | join \"name\" \" \" }}" resolves to 2 interfaces (eth0, eth1): it must resolve to one`},
		{name: "does not parse", iface: `{{ . | attr "name"`, err: `client.host_network "n".interface: go-sockaddr template: unable to parse template`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := map[string]*structs.ClientHostNetworkConfig{"n": {Name: "n", CIDR: "10.0.0.0/8", Interface: tc.iface}}
			got, err := ResolveInterfaceTemplates(cfg, addrs)
			require.Equal(t, tc.iface, cfg["n"].Interface, "the configuration is left alone")
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				require.Nil(t, got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, map[string]*structs.ClientHostNetworkConfig{"n": {Name: "n", CIDR: "10.0.0.0/8", Interface: tc.want}}, got)
			require.Equal(t, sockaddrtmpl.IsTemplate(tc.iface), HasInterfaceTemplate(cfg))
		})
	}
}
