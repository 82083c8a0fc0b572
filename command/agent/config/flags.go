package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/drover-project/drover/helper/sockaddrtmpl"
)

// IntroTokenEnv is the environment variable holding the client
// introduction token, as in Nomad.
const IntroTokenEnv = "NOMAD_CLIENT_INTRO_TOKEN"

// LoadFromArgs builds the agent configuration from `drover agent` flags, as
// Nomad does: start from DevConfig with -dev (else DefaultConfig), merge
// each -config file or directory in the order given, apply the flags that
// were set (they win, and boolean flags may also turn a setting off), then
// Validate. log_level is upper-cased.
//
// Flags: -dev, -config PATH (repeatable), -data-dir, -bind, -server,
// -client, -bootstrap-expect N, -retry-join ADDR (repeatable), -servers
// A,B, -node NAME, -dc, -region, -log-level, -node-class, -node-pool,
// -meta KEY=VALUE (repeatable), -client-intro-token TOKEN. The environment
// variable NOMAD_CLIENT_INTRO_TOKEN sets the client introduction token
// between the files and the flags.
//
// Usage and flag errors are written to stderr. For -h or -help the returned
// error is flag.ErrHelp.
func LoadFromArgs(args []string, stderr io.Writer) (*Config, error) {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: drover agent [options]")
		fmt.Fprintln(fs.Output())
		fs.PrintDefaults()
	}

	var (
		dev                                   bool
		configs, retryJoin, meta              listFlag
		dataDir, bind, servers, node, dc      string
		region, logLevel, nodeClass, nodePool string
		introToken                            string
		server, client                        bool
		bootstrapExpect                       int
	)
	fs.BoolVar(&dev, "dev", false, "Run one server and one client in this process, on loopback, with a temporary data dir.")
	fs.Var(&configs, "config", "Configuration `file or directory` (*.hcl, *.json); repeatable, later ones win.")
	fs.StringVar(&dataDir, "data-dir", "", "Directory for raft data and client state (`path`).")
	fs.StringVar(&bind, "bind", "", "IP `address` the HTTP and RPC listeners bind to.")
	fs.BoolVar(&server, "server", false, "Run a server.")
	fs.BoolVar(&client, "client", false, "Run a client.")
	fs.IntVar(&bootstrapExpect, "bootstrap-expect", 0, "Number of servers to wait for before bootstrapping.")
	fs.Var(&retryJoin, "retry-join", "Another server's RPC `host:port` to join; repeatable.")
	fs.StringVar(&servers, "servers", "", "Comma-separated servers' HTTP `addresses` for a client.")
	fs.StringVar(&node, "node", "", "Node `name` (default: hostname).")
	fs.StringVar(&dc, "dc", "", "Datacenter (default: dc1).")
	fs.StringVar(&region, "region", "", "Region (default: global).")
	fs.StringVar(&logLevel, "log-level", "", "Log `level`: TRACE, DEBUG, INFO, WARN or ERROR.")
	fs.StringVar(&nodeClass, "node-class", "", "Node `class` of the client.")
	fs.StringVar(&nodePool, "node-pool", "", "Node `pool` of the client (default: default).")
	fs.Var(&meta, "meta", "Client metadata `key=value`; repeatable.")
	fs.StringVar(&introToken, "client-intro-token", "", "Client introduction `token` the node presents when it first registers (overrides NOMAD_CLIENT_INTRO_TOKEN and client.intro_token).")

	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return nil, fmt.Errorf("agent: unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}

	cfg := DefaultConfig()
	if dev {
		cfg = DevConfig()
	}
	for _, path := range configs {
		fileCfg, err := ParseFile(path)
		if err != nil {
			return nil, fmt.Errorf("loading -config %s:\n%w", path, err)
		}
		cfg = cfg.Merge(fileCfg)
	}

	if tok := os.Getenv(IntroTokenEnv); tok != "" {
		cfg.Client.IntroToken = tok
	}
	var errs []error
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "data-dir":
			cfg.DataDir = dataDir
		case "bind":
			cfg.BindAddr = bind
		case "server":
			cfg.Server.Enabled = server
		case "client":
			cfg.Client.Enabled = client
		case "bootstrap-expect":
			cfg.Server.BootstrapExpect = bootstrapExpect
		case "retry-join":
			cfg.Server.RetryJoin = append([]string(nil), retryJoin...)
		case "servers":
			cfg.Client.Servers = splitList(servers)
		case "node":
			cfg.Name = node
		case "dc":
			cfg.Datacenter = dc
		case "region":
			cfg.Region = region
		case "log-level":
			cfg.LogLevel = logLevel
		case "node-class":
			cfg.Client.NodeClass = nodeClass
		case "node-pool":
			cfg.Client.NodePool = nodePool
		case "client-intro-token":
			cfg.Client.IntroToken = introToken
		case "meta":
			for _, kv := range meta {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					errs = append(errs, fmt.Errorf("-meta %q: want key=value", kv))
					continue
				}
				if cfg.Client.Meta == nil {
					cfg.Client.Meta = map[string]string{}
				}
				cfg.Client.Meta[k] = v
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	cfg.LogLevel = strings.ToUpper(cfg.LogLevel)
	if cfg.HasAddrTemplate() {
		addrs, err := sockaddrtmpl.HostAddrs()
		if err == nil {
			err = cfg.ResolveAddrTemplates(addrs)
		}
		if err != nil {
			return nil, fmt.Errorf("invalid agent configuration:\n%w", err)
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid agent configuration:\n%w", err)
	}
	return cfg, nil
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
