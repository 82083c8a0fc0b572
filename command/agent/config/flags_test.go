package config

import (
	"bytes"
	"flag"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLoadFromArgs(t *testing.T) {
	dir := t.TempDir()
	base := writeFile(t, dir, "base.hcl", `
data_dir   = "/data"
datacenter = "dc-file"
region     = "r-file"
log_level  = "warn"
server {
  enabled          = true
  bootstrap_expect = 3
  retry_join       = ["file:4647"]
}
client {
  enabled    = true
  servers    = ["file:4646"]
  node_class = "file"
  meta { rack = "r1"
    zone = "z1" }
}`)
	over := writeFile(t, dir, "over.json", `{"datacenter": "dc-json", "client": {"node_pool": "pool-json"}}`)

	cases := []struct {
		name string
		args []string
		want func(c *Config)
	}{
		{"files only, in order", []string{"-config", base, "-config", over}, func(c *Config) {}},
		{"flags win over files", []string{
			"-config", base, "-config", over,
			"-data-dir", "/flag", "-bind", "10.0.0.1", "-bootstrap-expect", "5",
			"-retry-join", "a:4647", "-retry-join", "b:4647", "-servers", "x:4646, y:4646,",
			"-node", "n-flag", "-dc", "dc-flag", "-region", "r-flag", "-log-level", "trace",
			"-node-class", "c-flag", "-node-pool", "p-flag", "-meta", "rack=r9", "-meta", "new=a=b",
		}, func(c *Config) {
			c.DataDir, c.BindAddr, c.Name, c.Datacenter, c.Region, c.LogLevel = "/flag", "10.0.0.1", "n-flag", "dc-flag", "r-flag", "TRACE"
			c.Server.BootstrapExpect = 5
			c.Server.RetryJoin = []string{"a:4647", "b:4647"}
			c.Client.Servers = []string{"x:4646", "y:4646"}
			c.Client.NodeClass, c.Client.NodePool = "c-flag", "p-flag"
			c.Client.Meta = map[string]string{"rack": "r9", "zone": "z1", "new": "a=b"}
		}},
		{"boolean flag turns a file setting off", []string{"-config", base, "-config", over, "-server=false"}, func(c *Config) {
			c.Server.Enabled = false
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := DefaultConfig()
			want.DataDir, want.Datacenter, want.Region, want.LogLevel = "/data", "dc-json", "r-file", "WARN"
			want.Server = ServerConfig{Enabled: true, BootstrapExpect: 3, RetryJoin: []string{"file:4647"}, ImagePinning: ImagePinningOn}
			want.Client = ClientConfig{Enabled: true, Servers: []string{"file:4646"}, NodeClass: "file",
				NodePool: "pool-json", Meta: map[string]string{"rack": "r1", "zone": "z1"}}
			tc.want(want)

			var stderr bytes.Buffer
			got, err := LoadFromArgs(tc.args, &stderr)
			require.NoError(t, err, stderr.String())
			require.Equal(t, want, got)
		})
	}
}

func TestLoadFromArgs_Dev(t *testing.T) {
	var stderr bytes.Buffer
	got, err := LoadFromArgs([]string{"-dev"}, &stderr)
	require.NoError(t, err)
	require.Equal(t, DevConfig(), got)

	// Files and flags apply on top of the dev preset.
	p := writeFile(t, t.TempDir(), "dev.hcl", `ports { http = 8646 }
plugin "raw_exec" {
  config { no_cgroups = true }
}`)
	got, err = LoadFromArgs([]string{"-dev", "-config", p, "-bind", "0.0.0.0", "-client=false"}, &stderr)
	require.NoError(t, err)
	want := DevConfig()
	want.Ports.HTTP = 8646
	want.BindAddr = "0.0.0.0"
	want.Client.Enabled = false
	want.Plugins["raw_exec"] = PluginConfig{Config: map[string]any{"enabled": true, "no_cgroups": true}}
	require.Equal(t, want, got)
}

func TestLoadFromArgs_Errors(t *testing.T) {
	bad := writeFile(t, t.TempDir(), "bad.hcl", "server {\n  bogus = 1\n}\n")
	cases := []struct {
		name       string
		args       []string
		wantErr    string
		wantStderr string
	}{
		{"no mode", nil, "server.enabled, client.enabled: neither", ""},
		{"validation", []string{"-server", "-bootstrap-expect", "-2"}, "server.bootstrap_expect: must be 0 or more", ""},
		{"validation lists every problem", []string{"-client", "-log-level", "x"},
			"data_dir: must be set unless in -dev mode\nlog_level: unknown level \"X\"", ""},
		{"bad file", []string{"-dev", "-config", bad}, bad + ":2:3: Unsupported argument", ""},
		{"missing file", []string{"-dev", "-config", "/does/not/exist.hcl"}, "no such file", ""},
		{"bad meta", []string{"-dev", "-meta", "novalue"}, `-meta "novalue": want key=value`, ""},
		{"unknown flag", []string{"-bogus"}, "flag provided but not defined: -bogus", "Usage: drover agent"},
		{"positional argument", []string{"-dev", "extra"}, "unexpected arguments: extra", "Usage: drover agent"},
		{"bad int", []string{"-bootstrap-expect", "x"}, "invalid value", "-bootstrap-expect"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			_, err := LoadFromArgs(tc.args, &stderr)
			require.ErrorContains(t, err, tc.wantErr)
			require.Contains(t, stderr.String(), tc.wantStderr)
		})
	}
}

func TestLoadFromArgs_Help(t *testing.T) {
	var stderr bytes.Buffer
	_, err := LoadFromArgs([]string{"-h"}, &stderr)
	require.ErrorIs(t, err, flag.ErrHelp)
	for _, f := range []string{"-dev", "-config", "-data-dir", "-bind", "-server", "-client", "-bootstrap-expect",
		"-retry-join", "-servers", "-node", "-dc", "-region", "-log-level", "-node-class", "-node-pool", "-meta"} {
		require.Contains(t, stderr.String(), "  "+f)
	}
}
