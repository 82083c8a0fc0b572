package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// validServer is a valid non-dev server+client configuration.
func validServer() *Config {
	c := DefaultConfig()
	c.DataDir = "/var/lib/drover"
	c.Server.Enabled = true
	c.Server.BootstrapExpect = 3
	c.Server.RetryJoin = []string{"10.0.0.2:4647", "srv3", "[fd00::1]:4647", "fd00::2"}
	c.Client.Enabled = true
	return c
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(c *Config)
		want   []string // one substring per expected error; nil means valid
	}{
		{"valid", func(c *Config) {}, nil},
		{"valid client only", func(c *Config) {
			c.Server = ServerConfig{}
			c.Client.Servers = []string{"10.0.0.1:4646", "srv"}
		}, nil},
		{"image pinning off", func(c *Config) { c.Server.ImagePinning = "off" }, nil},
		{"image pinning unknown", func(c *Config) { c.Server.ImagePinning = "maybe" },
			[]string{`server.image_pinning: must be "on" or "off", got "maybe"`}},
		{"lower-case log level", func(c *Config) { c.LogLevel = "debug" }, nil},
		{"nothing enabled", func(c *Config) { c.Server.Enabled, c.Client.Enabled = false, false },
			[]string{"server.enabled, client.enabled: neither server nor client is enabled"}},
		{"negative bootstrap_expect", func(c *Config) { c.Server.BootstrapExpect = -1 },
			[]string{"server.bootstrap_expect: must be 0 or more, got -1"}},
		{"dev bootstrap_expect", func(c *Config) { c.DevMode, c.Server.BootstrapExpect = true, 3 },
			[]string{"server.bootstrap_expect: must be at most 1 in -dev mode"}},
		{"http port out of range", func(c *Config) { c.Ports.HTTP = 70000 },
			[]string{"ports.http: port 70000 is out of range (1-65535)"}},
		{"rpc port zero", func(c *Config) { c.Ports.RPC = 0 },
			[]string{"ports.rpc: port 0 is out of range"}},
		{"same ports", func(c *Config) { c.Ports.RPC = c.Ports.HTTP },
			[]string{"ports.rpc: must differ from ports.http (both are 4646)"}},
		{"server without data_dir", func(c *Config) { c.DataDir = "" },
			[]string{"data_dir: must be set unless in -dev mode"}},
		{"dev without data_dir", func(c *Config) { c.DataDir, c.DevMode, c.Server.BootstrapExpect = "", true, 1 }, nil},
		{"client without servers", func(c *Config) { c.Server.Enabled = false },
			[]string{"client.servers: a client needs at least one server address"}},
		{"unknown log level", func(c *Config) { c.LogLevel = "LOUD" },
			[]string{`log_level: unknown level "LOUD"; use one of TRACE, DEBUG, INFO, WARN, ERROR`}},
		{"bad bind", func(c *Config) { c.BindAddr = "{{ GetPrivateIP }}" },
			[]string{`bind_addr: "{{ GetPrivateIP }}" is not an IP address`}},
		{"empty names", func(c *Config) { c.Name, c.Datacenter, c.Region = "", "", "" },
			[]string{"name: must not be empty", "datacenter: must not be empty", "region: must not be empty"}},
		{"bad retry_join", func(c *Config) { c.Server.RetryJoin = []string{"a:99999", "", "http://x:1", "b:", ":4647"} },
			[]string{
				`server.server_join.retry_join[0]: "a:99999": port "99999" is out of range`,
				"server.server_join.retry_join[1]: must not be empty",
				`server.server_join.retry_join[2]: "http://x:1": give host or host:port, without a scheme`,
				`server.server_join.retry_join[3]: "b:": missing port`,
				`server.server_join.retry_join[4]: ":4647" has no host`,
			}},
		{"bad client server", func(c *Config) { c.Client.Servers = []string{"x:y"} },
			[]string{`client.servers[0]: "x:y": port "y" is out of range`}},
		{"bad advertise", func(c *Config) { c.Advertise.RPC = "h:0" },
			[]string{`advertise.rpc: "h:0": port "0" is out of range`}},
		{"node pool all", func(c *Config) { c.Client.NodePool = "all" },
			[]string{`client.node_pool: "all" is reserved`}},
		{"node pool empty", func(c *Config) { c.Client.NodePool = "" },
			[]string{"client.node_pool: must not be empty"}},
		{"plugin enabled not bool", func(c *Config) {
			c.Plugins["raw_exec"] = PluginConfig{Config: map[string]any{"enabled": "yes"}}
		}, []string{"plugin.raw_exec.config.enabled: must be a bool, got string"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := validServer()
			tc.mutate(c)
			err := c.Validate()
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			lines := strings.Split(err.Error(), "\n")
			require.Len(t, lines, len(tc.want), err.Error())
			for i, w := range tc.want {
				require.Contains(t, lines[i], w)
			}
		})
	}
}
