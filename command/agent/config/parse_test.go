package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParse_Fields(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want *Config
	}{
		{"empty", ``, &Config{}},
		{"name", `name = "node-1"`, &Config{Name: "node-1"}},
		{"data_dir", `data_dir = "/var/lib/drover"`, &Config{DataDir: "/var/lib/drover"}},
		{"bind_addr", `bind_addr = "10.0.0.1"`, &Config{BindAddr: "10.0.0.1"}},
		{"datacenter", `datacenter = "eu-1"`, &Config{Datacenter: "eu-1"}},
		{"region", `region = "europe"`, &Config{Region: "europe"}},
		{"log_level", `log_level = "debug"`, &Config{LogLevel: "debug"}},
		{"ports", "ports {\n  http = 5646\n  rpc = 5647\n}", &Config{Ports: Ports{HTTP: 5646, RPC: 5647}}},
		{"ports as strings", `ports { http = "5646" }`, &Config{Ports: Ports{HTTP: 5646}}},
		{"advertise", `advertise {
  http = "10.0.0.5"
  rpc  = "10.0.0.5:7000"
}`, &Config{Advertise: Advertise{HTTP: "10.0.0.5", RPC: "10.0.0.5:7000"}}},
		{"server", `server {
  enabled          = true
  bootstrap_expect = 3
  server_join {
    retry_join = ["10.0.0.6:4647", "10.0.0.7:4647"]
  }
}`, &Config{Server: ServerConfig{Enabled: true, BootstrapExpect: 3,
			RetryJoin: []string{"10.0.0.6:4647", "10.0.0.7:4647"}}}},
		{"server retry_join shorthand", `server {
  retry_join = ["a:4647"]
  server_join { retry_join = ["b:4647"] }
}`, &Config{Server: ServerConfig{RetryJoin: []string{"a:4647", "b:4647"}}}},
		{"client", `client {
  enabled    = true
  servers    = ["127.0.0.1:4646"]
  node_class = "edge"
  node_pool  = "gpu"
}`, &Config{Client: ClientConfig{Enabled: true, Servers: []string{"127.0.0.1:4646"},
			NodeClass: "edge", NodePool: "gpu"}}},
		{"client meta and options as blocks with quoted keys", `client {
  meta {
    rack = "r1"
    "zone.name" = "z1"
    slots = 4
  }
  options {
    "driver.raw_exec.enable" = "1"
  }
}`, &Config{Client: ClientConfig{
			Meta:    map[string]string{"rack": "r1", "zone.name": "z1", "slots": "4"},
			Options: map[string]string{"driver.raw_exec.enable": "1"},
		}}},
		{"client meta and options as attributes", `client {
  meta = { rack = "r1" }
  options = {
    "driver.raw_exec.enable" = "1"
  }
}`, &Config{Client: ClientConfig{
			Meta:    map[string]string{"rack": "r1"},
			Options: map[string]string{"driver.raw_exec.enable": "1"},
		}}},
		{"one-line client block", `client { meta { "a.b" = "c" } }`,
			&Config{Client: ClientConfig{Meta: map[string]string{"a.b": "c"}}}},
		{"plugins", `plugin "raw_exec" {
  config {
    enabled = true
  }
}
plugin "docker" {
  config {
    allow_privileged = false
    gc { image_delay = "3m" }
    volumes { enabled = true }
    extra_labels = ["job_name"]
    pull_timeout = 1.5
    auth "r1" { helper = "ecr" }
    auth "r2" { helper = "gcr" }
    mount { target = "/a" }
    mount { target = "/b" }
  }
}
plugin "mock" {}`, &Config{Plugins: map[string]PluginConfig{
			"raw_exec": {Config: map[string]any{"enabled": true}},
			"docker": {Config: map[string]any{
				"allow_privileged": false,
				"gc":               map[string]any{"image_delay": "3m"},
				"volumes":          map[string]any{"enabled": true},
				"extra_labels":     []any{"job_name"},
				"pull_timeout":     1.5,
				"auth": map[string]any{
					"r1": map[string]any{"helper": "ecr"},
					"r2": map[string]any{"helper": "gcr"},
				},
				"mount": []any{map[string]any{"target": "/a"}, map[string]any{"target": "/b"}},
			}},
			"mock": {},
		}}},
		{"a meta block outside client is left alone", `plugin "x" {
  config {
    meta { a = 1 }
  }
}`, &Config{Plugins: map[string]PluginConfig{"x": {Config: map[string]any{"meta": map[string]any{"a": 1}}}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse("agent.hcl", []byte(tc.src))
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestParse_JSON(t *testing.T) {
	src := `{
  "name": "n1",
  "data_dir": "/data",
  "bind_addr": "10.0.0.1",
  "datacenter": "dc2",
  "region": "r",
  "log_level": "WARN",
  "ports": {"http": 1, "rpc": 2},
  "advertise": {"rpc": "10.0.0.9"},
  "server": {"enabled": true, "bootstrap_expect": 3, "server_join": {"retry_join": ["a:4647"]}},
  "client": {
    "enabled": true,
    "servers": ["s:4646"],
    "node_class": "c",
    "node_pool": "p",
    "meta": {"rack": "r1"},
    "options": [{"driver.raw_exec.enable": "1"}, {"x": "y"}]
  },
  "plugin": {
    "raw_exec": {"config": {"enabled": true}},
    "docker": [{"config": [{"gc": {"image": true}, "labels": ["a"]}]}]
  }
}`
	got, err := Parse("agent.json", []byte(src))
	require.NoError(t, err)
	require.Equal(t, &Config{
		Name: "n1", DataDir: "/data", BindAddr: "10.0.0.1", Datacenter: "dc2", Region: "r", LogLevel: "WARN",
		Ports:     Ports{HTTP: 1, RPC: 2},
		Advertise: Advertise{RPC: "10.0.0.9"},
		Server:    ServerConfig{Enabled: true, BootstrapExpect: 3, RetryJoin: []string{"a:4647"}},
		Client: ClientConfig{Enabled: true, Servers: []string{"s:4646"}, NodeClass: "c", NodePool: "p",
			Meta:    map[string]string{"rack": "r1"},
			Options: map[string]string{"driver.raw_exec.enable": "1", "x": "y"}},
		Plugins: map[string]PluginConfig{
			"raw_exec": {Config: map[string]any{"enabled": true}},
			"docker":   {Config: map[string]any{"gc": map[string]any{"image": true}, "labels": []any{"a"}}},
		},
	}, got)
}

func TestParse_Errors(t *testing.T) {
	cases := []struct {
		name, path, src string
		want            []string // substrings of the error
	}{
		{"unknown top-level argument", "agent.hcl", "name = \"a\"\n\n  bogus = 1\n",
			[]string{`agent.hcl:3:3: Unsupported argument`, `"bogus"`}},
		{"unknown block", "agent.hcl", "acll {\n}\n",
			[]string{`agent.hcl:1:1: Unsupported block type`, `"acll"`}},
		{"unknown server argument", "a.hcl", "server {\n  enabled = true\n  encrpyt = \"x\"\n}\n",
			[]string{`a.hcl:3:3: Unsupported argument`, `"encrpyt"`}},
		{"unknown server_join argument", "a.hcl", "server {\n  server_join {\n    retry_maxx = 3\n  }\n}\n",
			[]string{`a.hcl:3:5: Unsupported argument`, `"retry_maxx"`}},
		{"unknown port", "a.hcl", "ports {\n  serff = 4648\n}\n",
			[]string{`a.hcl:2:3: Unsupported argument`, `"serff"`}},
		{"unknown plugin argument", "a.hcl", "plugin \"x\" {\n  args = []\n}\n",
			[]string{`a.hcl:2:3: Unsupported argument`, `"args"`}},
		{"column after a rewritten block on the same line", "a.hcl",
			`client { options { "a" = var.x } }`,
			[]string{`a.hcl:1:26: Variables not allowed`}},
		{"bad meta value position", "a.hcl", "client {\n  meta { a = [1] }\n}\n",
			[]string{`a.hcl:2:8: Invalid value for "meta"`}},
		{"unknown JSON field", "agent.json", "{\n  \"name\": \"a\",\n  \"nmae\": \"b\"\n}",
			[]string{`agent.json:3:3: Extraneous JSON object property`, `"nmae"`}},
		{"wrong type", "a.hcl", "server {\n  bootstrap_expect = \"three\"\n}\n",
			[]string{`a.hcl:2:22: Invalid value for "bootstrap_expect"`, "a number is required"}},
		{"fractional int", "a.hcl", "ports { http = 1.5 }",
			[]string{`a.hcl:1:16: Invalid value for "http"`}},
		{"null", "a.hcl", "name = null",
			[]string{`a.hcl:1:8: Invalid value for "name": must not be null`}},
		{"variables not allowed", "a.hcl", "name = var.x",
			[]string{`a.hcl:1:8: Variables not allowed`}},
		{"duplicate server block", "a.hcl", "server {}\nserver {}\n",
			[]string{`a.hcl:2:1: Duplicate server block`, "a.hcl:1:1"}},
		{"duplicate plugin", "a.hcl", "plugin \"a\" {}\nplugin \"a\" {}\n",
			[]string{`a.hcl:2:1: Duplicate plugin a block`}},
		{"duplicate plugin config", "a.hcl", "plugin \"a\" {\n  config {}\n  config {}\n}\n",
			[]string{`a.hcl:3:3: Duplicate config block`}},
		{"plugin config argument and block", "a.hcl", "plugin \"a\" {\n  config {\n    gc = 1\n    gc {}\n  }\n}\n",
			[]string{`a.hcl:4:5: "gc" is both an argument and a block`}},
		{"syntax error", "a.hcl", "name = \n", []string{`a.hcl:1:`}},
		{"several errors, all reported", "a.hcl", "a = 1\nb = 2\n",
			[]string{`a.hcl:1:1: Unsupported argument`, `a.hcl:2:1: Unsupported argument`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.path, []byte(tc.src))
			require.Error(t, err)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

func writeFile(t *testing.T, dir, name, src string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(src), 0o600))
	return p
}

func TestParseFile(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "agent.hcl", `name = "a"`)
	got, err := ParseFile(p)
	require.NoError(t, err)
	require.Equal(t, &Config{Name: "a"}, got)

	_, err = ParseFile(filepath.Join(dir, "missing.hcl"))
	require.ErrorIs(t, err, os.ErrNotExist)

	bad := writeFile(t, t.TempDir(), "bad.hcl", "nope = 1")
	_, err = ParseFile(bad)
	require.ErrorContains(t, err, bad+":1:1: Unsupported argument")
}

func TestParseFile_Directory(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "10-base.hcl", `
name = "base"
region = "r1"
client {
  enabled = true
  meta { a = "1" }
}`)
	writeFile(t, dir, "20-override.json", `{"name": "override", "client": {"meta": {"b": "2"}}}`)
	writeFile(t, dir, "30-last.hcl", `datacenter = "dc9"`)
	writeFile(t, dir, "README.md", `not = config`)
	writeFile(t, dir, ".hidden.hcl", `broken {`)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub.hcl"), 0o700))

	got, err := ParseFile(dir)
	require.NoError(t, err)
	require.Equal(t, &Config{
		Name: "override", Region: "r1", Datacenter: "dc9",
		Client: ClientConfig{Enabled: true, Meta: map[string]string{"a": "1", "b": "2"}},
	}, got)

	writeFile(t, dir, "40-bad.hcl", `bogus = true`)
	_, err = ParseFile(dir)
	require.ErrorContains(t, err, "40-bad.hcl:1:1: Unsupported argument")
}

func TestRewriteClientMapBlocks_LeavesOtherSourceAlone(t *testing.T) {
	src := []byte("client {\n  meta \"x\" {}\n  servers = [\"a\"]\n}\nmeta {}\nclient { options = { a = \"${x}\" } }\n")
	got, shift := rewriteClientMapBlocks(src, "a.hcl")
	require.Equal(t, string(src), string(got))
	require.Empty(t, shift)
}

func TestParseHeartbeatSettings(t *testing.T) {
	c, err := Parse("hb.hcl", []byte("server {\n  min_heartbeat_ttl = \"2s\"\n  heartbeat_grace = \"500ms\"\n}\n"))
	require.NoError(t, err)
	require.Equal(t, 2*time.Second, c.Server.MinHeartbeatTTL)
	require.Equal(t, 500*time.Millisecond, c.Server.HeartbeatGrace)
	merged := DefaultConfig().Merge(c)
	require.Equal(t, 2*time.Second, merged.Server.MinHeartbeatTTL)

	_, err = Parse("hb.hcl", []byte("server {\n  heartbeat_grace = \"soon\"\n}\n"))
	require.ErrorContains(t, err, "hb.hcl:2")
	require.ErrorContains(t, err, "heartbeat_grace")
}

func TestParseDynamicPortRange(t *testing.T) {
	c, err := Parse("ports.hcl", []byte("client {\n  enabled = true\n  min_dynamic_port = 21000\n  max_dynamic_port = 21099\n}\n"))
	require.NoError(t, err)
	require.Equal(t, 21000, c.Client.MinDynamicPort)
	require.Equal(t, 21099, c.Client.MaxDynamicPort)

	bad := DevConfig().Merge(&Config{Client: ClientConfig{MinDynamicPort: 30000, MaxDynamicPort: 20000}})
	require.ErrorContains(t, bad.Validate(), "client.max_dynamic_port")
}

func TestParseRegistrySettings(t *testing.T) {
	c, err := Parse("reg.hcl", []byte(`server {
  registry_auth_config    = "/etc/drover/docker.json"
  insecure_registries     = ["registry.lan:5000"]
  registry_request_budget = 30
  image_pinning           = "off"
}
`))
	require.NoError(t, err)
	require.Equal(t, "on", DefaultConfig().Server.ImagePinning, "pinning is on by default")
	merged := DefaultConfig().Merge(c)
	require.Equal(t, "off", merged.Server.ImagePinning)
	require.Equal(t, "/etc/drover/docker.json", merged.Server.RegistryAuthConfig)
	require.Equal(t, []string{"registry.lan:5000"}, merged.Server.InsecureRegistries)
	require.Equal(t, 30, merged.Server.RegistryRequestBudget)

	_, err = Parse("reg.hcl", []byte("server {\n  registry_request_budget = \"many\"\n}\n"))
	require.ErrorContains(t, err, "registry_request_budget")
}

func TestParseClientTemplate(t *testing.T) {
	c, err := Parse("t.hcl", []byte(`client {
  enabled = true
  template {
    function_denylist    = ["plugin", "sockaddr"]
    disable_file_sandbox = true
    max_stale            = "10s"
    wait {
      min = "1s"
      max = "2s"
    }
  }
}
`))
	require.NoError(t, err)
	require.Equal(t, []string{"plugin", "sockaddr"}, c.Client.Template.FunctionDenylist)
	require.True(t, c.Client.Template.DisableFileSandbox)
	require.Equal(t, []string{"client.template.max_stale", "client.template.wait"}, c.Ignored)
	merged := DefaultConfig().Merge(c)
	require.Equal(t, c.Client.Template, merged.Client.Template)

	// An empty denylist allows every function: it is kept, not defaulted.
	c, err = Parse("t.hcl", []byte("client {\n  template {\n    function_denylist = []\n  }\n}\n"))
	require.NoError(t, err)
	require.NotNil(t, c.Client.Template.FunctionDenylist)
	require.Empty(t, c.Client.Template.FunctionDenylist)
	require.False(t, c.Client.Template.DisableFileSandbox)

	// None: nil, the client's default (["plugin", "writeToFile"]).
	c, err = Parse("t.hcl", []byte("client {\n  enabled = true\n}\n"))
	require.NoError(t, err)
	require.Nil(t, DefaultConfig().Merge(c).Client.Template.FunctionDenylist)

	_, err = Parse("t.hcl", []byte("client {\n  template {\n    disable_sandbox = true\n  }\n}\n"))
	require.ErrorContains(t, err, "t.hcl:3")
	_, err = Parse("t.hcl", []byte("client {\n  template {}\n  template {}\n}\n"))
	require.ErrorContains(t, err, "Duplicate client.template block")
}

func TestParseClientTemplate_JSON(t *testing.T) {
	c, err := Parse("t.json", []byte(`{"client":{"enabled":true,"template":{"function_denylist":["plugin"],"disable_file_sandbox":true}}}`))
	require.NoError(t, err)
	require.Equal(t, ClientTemplateConfig{FunctionDenylist: []string{"plugin"}, DisableFileSandbox: true}, c.Client.Template)
}

func TestParseGateSettings(t *testing.T) {
	c, err := Parse("gates.hcl", []byte(`data_dir = "/var/lib/drover"
server {
  enabled             = true
  prometheus_address  = "http://prometheus.lan:9090"
  gate_webhook_secret = "s3cret"
}
`))
	require.NoError(t, err)
	merged := DefaultConfig().Merge(c)
	require.Equal(t, "http://prometheus.lan:9090", merged.Server.PrometheusAddress)
	require.Equal(t, "s3cret", merged.Server.GateWebhookSecret)
	require.NoError(t, merged.Validate())

	merged.Server.PrometheusAddress = "prometheus.lan:9090"
	require.ErrorContains(t, merged.Validate(), `server.prometheus_address: "prometheus.lan:9090" is not an http:// or https:// URL`)
}
