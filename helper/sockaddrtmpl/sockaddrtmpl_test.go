package sockaddrtmpl

import (
	"testing"

	sockaddr "github.com/hashicorp/go-sockaddr"
	"github.com/stretchr/testify/require"
)

func TestAddressAndInterface(t *testing.T) {
	// eth0 has 192.0.2.10 and 10.0.0.5, eth1 has 10.1.0.7, in that order.
	addrs, err := Addrs("eth0=192.0.2.10/24", "eth0=10.0.0.5/16", "eth1=10.1.0.7/16")
	require.NoError(t, err)
	for _, tc := range []struct {
		name    string
		resolve func(string, sockaddr.IfAddrs) (string, error)
		in      string
		want    string
		err     string
	}{
		{name: "plain name", resolve: Interface, in: "eth9", want: "eth9"},
		{name: "one interface", resolve: Interface, in: `{{ . | include "network" "10.1.0.0/16" | attr "name" }}`, want: "eth1"},
		{name: "several addresses of one interface", resolve: Interface, in: `{{ . | include "name" "eth0" | join "name" " " }}`, want: "eth0"},
		{name: "no interface", resolve: Interface, in: `{{ . | include "network" "172.16.0.0/12" | attr "name" }}`,
			err: `go-sockaddr template "{{ . | include \"network\" \"172.16.0.0/12\" | attr \"name\" }}" resolves to no interface`},
		{name: "two interfaces", resolve: Interface, in: `{{ . | include "network" "10.0.0.0/8" | join "name" " " }}`,
			err: `resolves to 2 interfaces (eth0, eth1): it must resolve to one`},
		{name: "does not parse", resolve: Interface, in: `{{ . | attr "name" `, err: "go-sockaddr template: unable to parse template"},
		{name: "unknown function", resolve: Interface, in: `{{ . | NoSuchFunc }}`, err: "go-sockaddr template: unable to parse template"},
		{name: "does not execute", resolve: Interface, in: `{{ . | attr "nosuchattr" }}`, err: "go-sockaddr template: unable to execute"},
		{name: "plain address", resolve: Address, in: "10.0.0.1", want: "10.0.0.1"},
		{name: "one address", resolve: Address, in: `{{ . | include "name" "eth1" | attr "address" }}`, want: "10.1.0.7"},
		{name: "address and port", resolve: Address, in: `{{ . | include "name" "eth1" | attr "address" }}:4647`, want: "10.1.0.7:4647"},
		{name: "first of a sorted list", resolve: Address, in: `{{ . | include "network" "10.0.0.0/8" | sort "address" | attr "address" }}`, want: "10.0.0.5"},
		{name: "no address", resolve: Address, in: `{{ . | include "name" "eth7" | attr "address" }}`, err: "resolves to no address"},
		{name: "two addresses", resolve: Address, in: `{{ . | include "name" "eth0" | join "address" " " }}`,
			err: `resolves to 2 addresses (192.0.2.10, 10.0.0.5): it must resolve to one`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.resolve(tc.in, addrs)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestAddrs(t *testing.T) {
	_, err := Addrs("eth0")
	require.EqualError(t, err, `"eth0": want interface=cidr`)
	_, err = Addrs("eth0=nope")
	require.ErrorContains(t, err, `"eth0=nope": `)
	addrs, err := Addrs("eth1=10.1.0.7/16")
	require.NoError(t, err)
	require.Len(t, addrs, 1)
	require.Equal(t, "eth1", addrs[0].Name)
}

func TestIsTemplate(t *testing.T) {
	require.True(t, IsTemplate(`{{ GetPrivateIP }}`))
	require.False(t, IsTemplate("eth0"))
}
