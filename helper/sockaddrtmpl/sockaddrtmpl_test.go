package sockaddrtmpl

import (
	"net"
	"testing"

	sockaddr "github.com/hashicorp/go-sockaddr"
	"github.com/stretchr/testify/require"
)

// fixture is a host with eth0 (192.0.2.10 and 10.0.0.5) and eth1
// (10.1.0.7), in that order.
func fixture(t *testing.T) sockaddr.IfAddrs {
	t.Helper()
	var out sockaddr.IfAddrs
	for _, a := range []struct{ iface, cidr string }{
		{"eth0", "192.0.2.10/24"}, {"eth0", "10.0.0.5/16"}, {"eth1", "10.1.0.7/16"},
	} {
		ip, err := sockaddr.NewIPAddr(a.cidr)
		require.NoError(t, err)
		out = append(out, sockaddr.IfAddr{SockAddr: ip, Interface: net.Interface{Name: a.iface, Flags: net.FlagUp}})
	}
	return out
}

func TestInterface(t *testing.T) {
	for _, tc := range []struct {
		name, in, want, err string
	}{
		{name: "plain name", in: "eth9", want: "eth9"},
		{name: "one interface", in: `{{ . | include "network" "10.1.0.0/16" | attr "name" }}`, want: "eth1"},
		{name: "several addresses of one interface", in: `{{ . | include "name" "eth0" | join "name" " " }}`, want: "eth0"},
		{name: "nothing", in: `{{ . | include "network" "172.16.0.0/12" | attr "name" }}`,
			err: `go-sockaddr template "{{ . | include \"network\" \"172.16.0.0/12\" | attr \"name\" }}" resolves to no interface`},
		{name: "two interfaces", in: `{{ . | include "network" "10.0.0.0/8" | join "name" " " }}`,
			err: `resolves to 2 interfaces (eth0, eth1): it must resolve to one`},
		{name: "does not parse", in: `{{ . | attr "name" `, err: "go-sockaddr template: unable to parse template"},
		{name: "unknown function", in: `{{ . | NoSuchFunc }}`, err: "go-sockaddr template: unable to parse template"},
		{name: "does not execute", in: `{{ . | attr "nosuchattr" }}`, err: "go-sockaddr template: unable to execute"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Interface(tc.in, fixture(t))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestAddress(t *testing.T) {
	for _, tc := range []struct {
		name, in, want, err string
	}{
		{name: "plain address", in: "10.0.0.1", want: "10.0.0.1"},
		{name: "one address", in: `{{ . | include "name" "eth1" | attr "address" }}`, want: "10.1.0.7"},
		{name: "address and port", in: `{{ . | include "name" "eth1" | attr "address" }}:4647`, want: "10.1.0.7:4647"},
		{name: "first of a sorted list", in: `{{ . | include "network" "10.0.0.0/8" | sort "address" | attr "address" }}`, want: "10.0.0.5"},
		{name: "nothing", in: `{{ . | include "name" "eth7" | attr "address" }}`, err: "resolves to no address"},
		{name: "two addresses", in: `{{ . | include "name" "eth0" | join "address" " " }}`,
			err: `resolves to 2 addresses (192.0.2.10, 10.0.0.5): it must resolve to one`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Address(tc.in, fixture(t))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestIsTemplate(t *testing.T) {
	require.True(t, IsTemplate(`{{ GetPrivateIP }}`))
	require.False(t, IsTemplate("eth0"))
}
