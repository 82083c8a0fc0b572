package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParse_HostNetworks(t *testing.T) {
	c, err := Parse("agent.hcl", []byte(`
client {
  enabled = true
  host_network "public" {
    cidr           = "203.0.113.0/24"
    reserved_ports = "22,80"
  }
  host_network "private" { interface = "eth1" }
}
`))
	require.NoError(t, err)
	require.Equal(t, map[string]HostNetwork{
		"public":  {CIDR: "203.0.113.0/24", ReservedPorts: "22,80"},
		"private": {Interface: "eth1"},
	}, c.Client.HostNetworks)
	require.Empty(t, c.Ignored, "host_network is acted on, not ignored")

	_, err = Parse("agent.hcl", []byte(`client {
  host_network "a" { cidr = "10.0.0.0/8" }
  host_network "a" { cidr = "10.1.0.0/16" }
}`))
	require.ErrorContains(t, err, `Duplicate host_network "a" block`)
	_, err = Parse("agent.hcl", []byte("client {\n  host_network \"a\" {\n    cidr = \"10.0.0.0/8\"\n    mtu = 1500\n  }\n}"))
	require.ErrorContains(t, err, `An argument named "mtu" is not expected here`)
}

func TestMerge_HostNetworks(t *testing.T) {
	a := DefaultConfig()
	a.Client.HostNetworks = map[string]HostNetwork{"public": {CIDR: "10.0.0.0/8"}, "lan": {Interface: "eth1"}}
	b := DefaultConfig()
	b.Client.HostNetworks = map[string]HostNetwork{"public": {CIDR: "192.0.2.0/24"}}
	m := a.Merge(b)
	require.Equal(t, map[string]HostNetwork{"public": {CIDR: "192.0.2.0/24"}, "lan": {Interface: "eth1"}}, m.Client.HostNetworks)
	require.Equal(t, HostNetwork{CIDR: "10.0.0.0/8"}, a.Client.HostNetworks["public"], "merge leaves its inputs alone")
}

func TestValidate_HostNetworks(t *testing.T) {
	c := validServer()
	c.Client.HostNetworks = map[string]HostNetwork{
		"ok":       {CIDR: "10.0.0.0/8", ReservedPorts: "22"},
		"default":  {CIDR: "10.0.0.0/8"},
		"empty":    {},
		"badcidr":  {CIDR: "10.0.0.0/33"},
		"template": {Interface: `{{ GetPrivateInterfaces | include "network" "10.0.0.0/8" | attr "name" }}`}, // resolved by the client
		"ports":    {Interface: "eth1", ReservedPorts: "22,x"},
	}
	err := c.Validate()
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	require.Equal(t, []string{
		`client.host_network "badcidr".cidr: netip.ParsePrefix("10.0.0.0/33"): prefix length out of range`,
		`client.host_network "default": "default" is the node's own address and cannot be configured`,
		`client.host_network "empty": needs a cidr or an interface`,
		`client.host_network "ports".reserved_ports: invalid port "x" in "22,x"`,
	}, lines)
}
