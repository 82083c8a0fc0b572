package config

import (
	"errors"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDefaultAndDevConfig(t *testing.T) {
	d := DefaultConfig()
	require.NotEmpty(t, d.Name)
	require.Equal(t, "0.0.0.0", d.BindAddr)
	require.Equal(t, "dc1", d.Datacenter)
	require.Equal(t, "global", d.Region)
	require.Equal(t, "INFO", d.LogLevel)
	require.Equal(t, Ports{HTTP: 4646, RPC: 4647}, d.Ports)
	require.Equal(t, "default", d.Client.NodePool)
	require.False(t, d.DevMode)
	require.False(t, d.Server.Enabled)
	require.False(t, d.Client.Enabled)
	require.Empty(t, d.Plugins)

	dev := DevConfig()
	require.True(t, dev.DevMode)
	require.Equal(t, "127.0.0.1", dev.BindAddr)
	require.Empty(t, dev.DataDir)
	require.Equal(t, "INFO", dev.LogLevel)
	require.True(t, dev.Server.Enabled)
	require.Equal(t, 1, dev.Server.BootstrapExpect)
	require.True(t, dev.Client.Enabled)
	require.Equal(t, map[string]PluginConfig{
		"raw_exec": {Config: map[string]any{"enabled": true}},
		"mock":     {Config: map[string]any{"enabled": true}},
	}, dev.Plugins)
	require.NoError(t, dev.Validate())
}

func TestMerge(t *testing.T) {
	cases := []struct {
		name      string
		base, top string
		want      func(c *Config)
	}{
		{"top scalars win", `name = "a"
data_dir = "/a"
bind_addr = "10.0.0.1"
datacenter = "dc-a"
region = "ra"
log_level = "DEBUG"
ports { http = 1000 }
advertise { http = "h" }`, `name = "b"
region = "rb"
ports { rpc = 2000 }
advertise { rpc = "r" }`, func(c *Config) {
			c.Name, c.DataDir, c.BindAddr, c.Datacenter, c.Region, c.LogLevel = "b", "/a", "10.0.0.1", "dc-a", "rb", "DEBUG"
			c.Ports = Ports{HTTP: 1000, RPC: 2000}
			c.Advertise = Advertise{HTTP: "h", RPC: "r"}
		}},
		{"server: bools only turn on, lists replace", `server {
  enabled = true
  bootstrap_expect = 3
  retry_join = ["a:1", "b:1"]
}`, `server {
  enabled = false
  retry_join = ["c:1"]
}`, func(c *Config) {
			c.Server = ServerConfig{Enabled: true, BootstrapExpect: 3, RetryJoin: []string{"c:1"}}
		}},
		{"client: maps merge by key", `client {
  enabled = true
  servers = ["a:4646"]
  node_class = "x"
  meta { a = "1"
    b = "1" }
  options { "o.a" = "1" }
}`, `client {
  servers = ["b:4646", "c:4646"]
  node_pool = "p"
  meta { b = "2"
    c = "2" }
}`, func(c *Config) {
			c.Client = ClientConfig{Enabled: true, Servers: []string{"b:4646", "c:4646"}, NodeClass: "x", NodePool: "p",
				Meta:    map[string]string{"a": "1", "b": "2", "c": "2"},
				Options: map[string]string{"o.a": "1"}}
		}},
		{"plugins merge by name and config key", `plugin "a" {
  config {
    x = 1
    y = 1
  }
}
plugin "b" {
  config { z = 1 }
}`, `plugin "a" {
  config { y = 2 }
}
plugin "c" {}`, func(c *Config) {
			c.Plugins = map[string]PluginConfig{
				"a": {Config: map[string]any{"x": 1, "y": 2}},
				"b": {Config: map[string]any{"z": 1}},
				"c": {},
			}
		}},
		{"empty top changes nothing", `name = "a"`, ``, func(c *Config) { c.Name = "a" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base, err := Parse("base.hcl", []byte(tc.base))
			require.NoError(t, err)
			top, err := Parse("top.hcl", []byte(tc.top))
			require.NoError(t, err)
			want := &Config{}
			tc.want(want)
			require.Equal(t, want, base.Merge(top))
		})
	}
}

func TestMerge_DoesNotAlias(t *testing.T) {
	a := DevConfig()
	a.Client.Meta = map[string]string{"k": "a"}
	a.Server.RetryJoin = []string{"x:1"}
	b := &Config{
		Client:  ClientConfig{Meta: map[string]string{"k": "b"}},
		Plugins: map[string]PluginConfig{"raw_exec": {Config: map[string]any{"nested": map[string]any{"v": 1}}}},
	}
	m := a.Merge(b)
	m.Client.Meta["k"] = "changed"
	m.Server.RetryJoin[0] = "changed"
	m.Plugins["raw_exec"].Config["nested"].(map[string]any)["v"] = 2
	m.Plugins["mock"].Config["enabled"] = false

	require.Equal(t, "a", a.Client.Meta["k"])
	require.Equal(t, "b", b.Client.Meta["k"])
	require.Equal(t, "x:1", a.Server.RetryJoin[0])
	require.Equal(t, 1, b.Plugins["raw_exec"].Config["nested"].(map[string]any)["v"])
	require.Equal(t, true, a.Plugins["mock"].Config["enabled"])
	require.Equal(t, true, m.Plugins["raw_exec"].Config["enabled"])

	require.Equal(t, a, a.Merge(nil))
	require.Nil(t, (*Config)(nil).Copy())
	require.Equal(t, &Config{Name: "x"}, (*Config)(nil).Merge(&Config{Name: "x"}))
}

func fakeInterfaces(t *testing.T, cidrs ...string) {
	t.Helper()
	old := interfaceAddrs
	t.Cleanup(func() { interfaceAddrs = old })
	interfaceAddrs = func() ([]net.Addr, error) {
		if cidrs == nil {
			return nil, errors.New("no interfaces")
		}
		var out []net.Addr
		for _, c := range cidrs {
			ip, n, err := net.ParseCIDR(c)
			require.NoError(t, err)
			n.IP = ip
			out = append(out, n)
		}
		return out, nil
	}
}

func TestAddrs(t *testing.T) {
	cases := []struct {
		name       string
		ifaces     []string
		bind       string
		adv        Advertise
		http, rpc  string // listen
		aHTTP, aRP string // advertise
	}{
		{"specific bind", []string{"10.1.1.1/8"}, "192.168.1.5", Advertise{},
			"192.168.1.5:4646", "192.168.1.5:4647", "192.168.1.5:4646", "192.168.1.5:4647"},
		{"any: private IPv4 preferred", []string{"127.0.0.1/8", "::1/128", "169.254.1.1/16", "8.8.8.8/32", "fe80::1/64", "10.0.0.7/24"}, "0.0.0.0", Advertise{},
			"0.0.0.0:4646", "0.0.0.0:4647", "10.0.0.7:4646", "10.0.0.7:4647"},
		{"any: public IPv4 when no private", []string{"127.0.0.1/8", "8.8.8.8/32", "9.9.9.9/32"}, "0.0.0.0", Advertise{},
			"0.0.0.0:4646", "0.0.0.0:4647", "8.8.8.8:4646", "8.8.8.8:4647"},
		{"any: loopback fallback", []string{"127.0.0.1/8", "::1/128"}, "0.0.0.0", Advertise{},
			"0.0.0.0:4646", "0.0.0.0:4647", "127.0.0.1:4646", "127.0.0.1:4647"},
		{"any: interface error", nil, "::", Advertise{},
			"[::]:4646", "[::]:4647", "127.0.0.1:4646", "127.0.0.1:4647"},
		{"explicit advertise", []string{"10.0.0.7/24"}, "0.0.0.0", Advertise{HTTP: "h.example", RPC: "[fd00::1]:9000"},
			"0.0.0.0:4646", "0.0.0.0:4647", "h.example:4646", "[fd00::1]:9000"},
		{"IPv6 bind and bare advertise", nil, "fd00::2", Advertise{RPC: "fd00::3"},
			"[fd00::2]:4646", "[fd00::2]:4647", "[fd00::2]:4646", "[fd00::3]:4647"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fakeInterfaces(t, tc.ifaces...)
			c := DefaultConfig()
			c.BindAddr = tc.bind
			c.Advertise = tc.adv
			require.Equal(t, tc.http, c.HTTPAddr())
			require.Equal(t, tc.rpc, c.RPCAddr())
			require.Equal(t, tc.aHTTP, c.AdvertiseHTTPAddr())
			require.Equal(t, tc.aRP, c.AdvertiseRPCAddr())
		})
	}
}
