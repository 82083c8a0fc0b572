package client

import (
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// A host network's interface given as a go-sockaddr template is resolved
// against this host's interfaces (the loopback interface is on every host
// the tests run on); one that resolves to no interface is the client's
// error, naming the field.
func TestResolveHostNetworksTemplates(t *testing.T) {
	for _, tc := range []struct {
		name, iface, err string
	}{
		{name: "loopback by template", iface: `{{ GetAllInterfaces | include "flags" "loopback" | include "type" "IPv4" | attr "name" }}`},
		{name: "no such interface", iface: `{{ GetAllInterfaces | include "name" "^no-such-iface$" | attr "name" }}`,
			err: `client.host_network "lo".interface: go-sockaddr template "{{ GetAllInterfaces | include \"name\" \"^no-such-iface$\" | attr \"name\" }}" resolves to no interface`},
		{name: "does not parse", iface: `{{ GetAllInterfaces `, err: `client.host_network "lo".interface: go-sockaddr template: unable to parse template`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := map[string]*structs.ClientHostNetworkConfig{"lo": {Name: "lo", CIDR: "127.0.0.0/8", Interface: tc.iface}}
			nets, err := resolveHostNetworks(cfg, hclog.NewNullLogger())
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				require.Nil(t, nets)
				return
			}
			require.NoError(t, err)
			require.Len(t, nets, 1)
			require.Equal(t, []structs.NodeNetworkAddress{{Family: "ipv4", Alias: "lo", Address: "127.0.0.1"}}, nets[0].Addresses)
			require.Equal(t, tc.iface, cfg["lo"].Interface, "the configuration keeps the template")
		})
	}
}
