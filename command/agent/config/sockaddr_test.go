package config

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/helper/sockaddrtmpl"
)

func TestResolveAddrTemplates(t *testing.T) {
	addrs, err := sockaddrtmpl.Addrs("eth0=192.0.2.10/24", "eth0=10.0.0.5/16", "eth1=10.1.0.7/16")
	require.NoError(t, err)
	eth1 := `{{ . | include "name" "eth1" | attr "address" }}`
	for _, tc := range []struct {
		name           string
		bind, http, rc string
		want           [3]string
		err            string
	}{
		{name: "no templates", bind: "0.0.0.0", http: "10.0.0.1", rc: "10.0.0.1:4647", want: [3]string{"0.0.0.0", "10.0.0.1", "10.0.0.1:4647"}},
		{name: "each a template", bind: eth1, http: eth1, rc: eth1 + ":5647", want: [3]string{"10.1.0.7", "10.1.0.7", "10.1.0.7:5647"}},
		{name: "bind resolves to nothing", bind: `{{ . | include "name" "eth9" | attr "address" }}`, http: eth1,
			err: `bind_addr: go-sockaddr template "{{ . | include \"name\" \"eth9\" | attr \"address\" }}" resolves to no address`},
		{name: "advertise resolves to two", bind: "0.0.0.0", rc: `{{ . | include "name" "eth0" | join "address" " " }}`,
			err: `advertise.rpc: go-sockaddr template "{{ . | include \"name\" \"eth0\" | join \"address\" \" \" }}" resolves to 2 addresses (192.0.2.10, 10.0.0.5): it must resolve to one`},
		{name: "does not parse", bind: "0.0.0.0", http: `{{ GetPrivateIP`, err: `advertise.http: go-sockaddr template: unable to parse template`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.BindAddr, c.Advertise.HTTP, c.Advertise.RPC = tc.bind, tc.http, tc.rc
			err := c.ResolveAddrTemplates(addrs)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				require.Equal(t, [3]string{tc.bind, tc.http, tc.rc}, [3]string{c.BindAddr, c.Advertise.HTTP, c.Advertise.RPC}, "left as it was")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, [3]string{c.BindAddr, c.Advertise.HTTP, c.Advertise.RPC})
			require.False(t, c.HasAddrTemplate())
		})
	}
}

// An agent loads bind_addr and advertise templates against this host's
// interfaces; the loopback interface is on every host the tests run on.
func TestLoadFromArgs_AddrTemplates(t *testing.T) {
	lo := `{{ GetAllInterfaces | include "flags" "loopback" | include "type" "IPv4" | attr "address" }}`
	p := writeFile(t, t.TempDir(), "agent.hcl", `bind_addr = "`+escapeHCL(lo)+`"
advertise { rpc = "`+escapeHCL(lo)+`:5647" }`)
	var stderr bytes.Buffer
	got, err := LoadFromArgs([]string{"-dev", "-config", p}, &stderr)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", got.BindAddr)
	require.Equal(t, "127.0.0.1:5647", got.Advertise.RPC)

	_, err = LoadFromArgs([]string{"-dev", "-bind", `{{ GetAllInterfaces | include "name" "no-such-iface" | attr "address" }}`}, &stderr)
	require.ErrorContains(t, err, "invalid agent configuration:\nbind_addr: go-sockaddr template")
	require.ErrorContains(t, err, "resolves to no address")
}

func escapeHCL(s string) string {
	var b bytes.Buffer
	for _, r := range s {
		if r == '"' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
