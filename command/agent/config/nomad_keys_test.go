package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The configuration the nomad/api test harness writes: JSON, in a file with
// no extension, with Nomad keys Drover does not act on.
const harnessJSON = `{"name":"node-1","data_dir":"/tmp/d","region":"global","disable_update_check":true,
"log_level":"ERROR","consul":{"address":"127.0.0.1:8500","token":"x"},
"advertise":{"http":"127.0.0.1","rpc":"127.0.0.1","serf":"127.0.0.1"},
"ports":{"http":20000,"rpc":20001,"serf":20002},
"server":{"enabled":true,"bootstrap_expect":1,"raft_protocol":3},
"client":{"enabled":true,"options":{"test.tighten_network_timeouts":"true"}},
"vault":{"enabled":false},"acl":{"enabled":false},"telemetry":{"prometheus_metrics":true}}`

func TestParseFile_JSONByContent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nomad123")
	require.NoError(t, os.WriteFile(path, []byte("\n  "+harnessJSON), 0o600))
	c, err := ParseFile(path)
	require.NoError(t, err)
	require.Equal(t, "node-1", c.Name)
	require.Equal(t, Ports{HTTP: 20000, RPC: 20001, Serf: 20002}, c.Ports)
	require.True(t, c.Server.Enabled)
	require.Equal(t, 1, c.Server.BootstrapExpect)
	require.Equal(t, map[string]string{"test.tighten_network_timeouts": "true"}, c.Client.Options)
	require.False(t, c.ACL.Enabled)
	require.Equal(t, []string{
		"consul", "disable_update_check", "telemetry", "vault",
		"advertise.serf", "server.raft_protocol",
	}, c.Ignored)
}

func TestParse_ACLBlock(t *testing.T) {
	c, err := Parse("agent.hcl", []byte("acl {\n  enabled = true\n  token_ttl = \"30s\"\n}\n"))
	require.NoError(t, err)
	require.True(t, c.ACL.Enabled)
	require.Equal(t, []string{"acl.token_ttl"}, c.Ignored)
	require.True(t, DefaultConfig().Merge(c).ACL.Enabled, "merged onto the defaults")

	c, err = Parse("agent.hcl", []byte("acl {\n  enabled = true\n  token_min_expiration_ttl = \"1s\"\n  token_max_expiration_ttl = \"48h\"\n}\n"))
	require.NoError(t, err)
	require.Equal(t, time.Second, c.ACL.TokenMinExpirationTTL)
	require.Equal(t, 48*time.Hour, c.ACL.TokenMaxExpirationTTL)
	require.Empty(t, c.Ignored, "the token lifetime bounds are acted on")
	_, err = Parse("agent.hcl", []byte("acl {\n  token_min_expiration_ttl = \"soon\"\n}\n"))
	require.Error(t, err)

	_, err = Parse("agent.hcl", []byte("acl {\n  enabled = \"maybe\"\n}\n"))
	require.ErrorContains(t, err, `Invalid value for "enabled"`)
	_, err = Parse("agent.hcl", []byte("acl {\n  enable = true\n}\n"))
	require.ErrorContains(t, err, `Unsupported argument`)
}

func TestParse_NomadOnlyKeysHCL(t *testing.T) {
	src := `
leave_on_terminate = true
ports { serf = 4648 }
tls {
  http = true
  tls_prefer_server_cipher_suites = true
}
keyring "awskms" { active = true }
server {
  enabled = true
  num_schedulers = 2
  default_scheduler_config { scheduler_algorithm = "spread" }
  server_join { retry_max = 3 }
}
client {
  enabled = true
  gc_interval = "1m"
  host_volume "data" { path = "/srv" }
  chroot_env { "/bin" = "/bin" }
}
`
	c, err := Parse("agent.hcl", []byte(src))
	require.NoError(t, err)
	require.Equal(t, []string{
		"keyring", "leave_on_terminate", "tls.tls_prefer_server_cipher_suites",
		"server.default_scheduler_config", "server.num_schedulers",
		"server.server_join.retry_max",
		"client.gc_interval",
	}, c.Ignored)
	require.Equal(t, map[string]HostVolume{"data": {Path: "/srv"}}, c.Client.HostVolumes, "client.host_volume is acted on (the node's host volumes)")
	require.Equal(t, map[string]string{"/bin": "/bin"}, c.Client.ChrootEnv, "client.chroot_env is acted on (the exec driver's chroot)")
}

func TestParse_NonNomadKeysStayErrors(t *testing.T) {
	cases := map[string]string{
		"root attr":       `dsiable_update_check = true`,
		"root block":      `vualt { enabled = true }`,
		"server attr":     `server { raft_protocl = 3 }`,
		"ports attr":      `ports { serff = 1 }`,
		"json root attr":  `{"dsiable_update_check": true}`,
		"json client key": `{"client": {"optoins": {}}}`,
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("x", []byte(src))
			require.Error(t, err)
			msg := err.Error()
			require.True(t, strings.Contains(msg, "Unsupported argument") ||
				strings.Contains(msg, "Unsupported block type") ||
				strings.Contains(msg, "Extraneous JSON object property"), msg)
		})
	}
}

func TestMerge_IgnoredOnceEach(t *testing.T) {
	a := &Config{Ignored: []string{"vault", "acl"}}
	b := &Config{Ignored: []string{"acl", "tls"}}
	require.Equal(t, []string{"vault", "acl", "tls"}, a.Merge(b).Ignored)
}

func TestLoadFromArgs_DevWithHarnessConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "nomad")
	require.NoError(t, os.WriteFile(path, []byte(harnessJSON), 0o600))
	extra := filepath.Join(dir, "extra.hcl")
	require.NoError(t, os.WriteFile(extra, []byte(`name = "node-2"`), 0o600))
	c, err := LoadFromArgs([]string{"-config", path, "-config", extra, "-dev"}, &strings.Builder{})
	require.NoError(t, err)
	require.True(t, c.DevMode)
	require.Equal(t, "node-2", c.Name, "later -config files win")
	require.Equal(t, 20000, c.Ports.HTTP)
	require.True(t, c.Client.Enabled)
	require.Contains(t, c.Ignored, "vault")
}

// A key Drover acts on is never reported as ignored, even where it is also
// listed among Nomad's keys.
func TestParse_ActedOnKeysAreNotIgnored(t *testing.T) {
	c, err := Parse("agent.hcl", []byte(`enable_debug = true
server {
  enabled                   = true
  eval_gc_threshold         = "2h"
  max_heartbeats_per_second = 100
  raft_multiplier           = 2
}
`))
	require.NoError(t, err)
	require.True(t, c.EnableDebug)
	require.Equal(t, 2*time.Hour, c.Server.EvalGCThreshold)
	require.Equal(t, 100.0, c.Server.MaxHeartbeatsPerSecond)
	require.Equal(t, []string{"server.raft_multiplier"}, c.Ignored, "only the key Drover does not act on")
}
