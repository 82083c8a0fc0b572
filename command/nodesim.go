package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/nodesim"
)

const nodesimHelp = `
Usage: drover nodesim [options]

  Runs simulated client nodes against the servers, in one process: each
  registers with its own node ID and secret, heartbeats at the TTL the
  servers hand out, long-polls its allocations and runs mock-driver tasks
  as their config says, reporting task states and deployment health. It
  runs until interrupted and does not deregister its nodes: the servers
  mark them down when their heartbeats stop.

Options:

  -address=<addr,...>    Servers' HTTP addresses (default NOMAD_ADDR or
                         http://127.0.0.1:4646)
  -nodes=<n>             Number of simulated nodes (default 100)
  -datacenter=<dc>       Datacenter of the nodes (default dc1)
  -node-pool=<pool>      Node pool of the nodes (default default)
  -node-class=<class>    Node class of the nodes
  -name-prefix=<p>       Node names are <p><i> (default sim-)
  -attr=<k=v>            A node attribute (repeatable)
  -meta=<k=v>            A node meta entry (repeatable)
  -heartbeat-jitter=<f>  Fraction of half the TTL taken off heartbeat
                         delays at random (default 0.2)
  -update-interval=<d>   Coalescing of a node's status updates (default 200ms)
  -stats-interval=<d>    Print counters this often (default 10s; 0: never)
  -log-level=<level>     Log level (default warn)
`

// kvFlag collects repeated k=v flags.
type kvFlag map[string]string

func (f kvFlag) String() string { return "" }

func (f kvFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q: must be key=value", s)
	}
	f[k] = v
	return nil
}

func runNodesim(m *Meta, args []string) int {
	cfg, statsEvery, code, ok := parseNodesim(m, args)
	if !ok {
		return code
	}
	sim, err := nodesim.New(cfg)
	if err != nil {
		m.errorf("Error: %v", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	raiseFDLimit()
	fmt.Fprintf(m.Stdout, "==> Simulating %d nodes against %s\n", cfg.Nodes, strings.Join(cfg.Servers, ","))
	if statsEvery > 0 {
		go printNodesimStats(ctx, m.Stdout, sim, statsEvery)
	}
	if err := sim.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		m.errorf("Error: %v", err)
		return 1
	}
	fmt.Fprintln(m.Stdout, "==> Stopped; the nodes will go down when their heartbeats time out")
	return 0
}

func parseNodesim(m *Meta, args []string) (cfg nodesim.Config, statsEvery time.Duration, code int, ok bool) {
	fs := flag.NewFlagSet("nodesim", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	attrs, meta := kvFlag{}, kvFlag{}
	addr := os.Getenv("NOMAD_ADDR")
	if addr == "" {
		addr = "http://127.0.0.1:4646"
	}
	var level string
	fs.StringVar(&addr, "address", addr, "")
	fs.IntVar(&cfg.Nodes, "nodes", 100, "")
	fs.StringVar(&cfg.Datacenter, "datacenter", "dc1", "")
	fs.StringVar(&cfg.NodePool, "node-pool", "default", "")
	fs.StringVar(&cfg.NodeClass, "node-class", "", "")
	fs.StringVar(&cfg.NamePrefix, "name-prefix", "sim-", "")
	fs.Var(attrs, "attr", "")
	fs.Var(meta, "meta", "")
	fs.Float64Var(&cfg.HeartbeatJitter, "heartbeat-jitter", 0.2, "")
	fs.DurationVar(&cfg.UpdateInterval, "update-interval", 200*time.Millisecond, "")
	fs.DurationVar(&statsEvery, "stats-interval", 10*time.Second, "")
	fs.StringVar(&level, "log-level", "warn", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(m.Stdout, strings.TrimSpace(nodesimHelp))
			return cfg, 0, 0, false
		}
		m.errorf("Error parsing flags: %v", err)
		fmt.Fprintln(m.Stderr, strings.TrimSpace(nodesimHelp))
		return cfg, 0, 1, false
	}
	if cfg.Nodes < 1 {
		m.errorf("Error: -nodes must be at least 1")
		return cfg, 0, 1, false
	}
	if cfg.HeartbeatJitter < 0 || cfg.HeartbeatJitter > 1 {
		m.errorf("Error: -heartbeat-jitter must be between 0 and 1")
		return cfg, 0, 1, false
	}
	for _, a := range strings.Split(addr, ",") {
		if a = strings.TrimSpace(a); a != "" {
			cfg.Servers = append(cfg.Servers, a)
		}
	}
	cfg.Attributes, cfg.Meta = attrs, meta
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: "nodesim", Level: hclog.LevelFromString(level), Output: m.Stderr})
	return cfg, statsEvery, 0, true
}

func printNodesimStats(ctx context.Context, w io.Writer, sim *nodesim.Sim, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st := sim.Stats()
		fmt.Fprintf(w, "    registered=%d heartbeats=%d (p50 %v, p99 %v) heartbeat_errors=%d missed=%d updates=%d update_errors=%d running=%d\n",
			st.Registered, st.Heartbeats, st.HeartbeatP50.Round(time.Microsecond), st.HeartbeatP99.Round(time.Microsecond),
			st.HeartbeatErrors, st.Missed, st.Updates, st.UpdateErrors, st.Running)
	}
}

// raiseFDLimit lifts the open-file limit to its hard maximum: every node's
// pending long poll holds a connection.
func raiseFDLimit() {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err == nil && r.Cur < r.Max {
		r.Cur = r.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r)
	}
}
