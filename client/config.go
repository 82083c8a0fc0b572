package client

import (
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/drover-project/drover/client/network"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/client/allocrunner/taskenv"
	"github.com/drover-project/drover/client/allocrunner/taskrunner/getter"
	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/nomad/structs"
)

// Config configures a client agent. New copies it; the caller may reuse it.
type Config struct {
	NodeName   string // default: the hostname
	Datacenter string // default: "dc1"
	Region     string // default: "global"
	NodeClass  string
	NodePool   string // default: "default"

	Meta map[string]string
	// Options are client options: "reserved.cpu" (MHz) and
	// "reserved.memory" (MB) reserve resources for the host; "env.denylist"
	// (comma-separated names) replaces taskenv.DefaultEnvDenylist.
	Options map[string]string
	// HostEnv is what raw_exec and exec tasks inherit of the client's
	// environment; nil means the agent's own (os.Environ) less the
	// env.denylist of Options, as Nomad does.
	HostEnv map[string]string
	// Artifact is the artifact {} block: limits and timeouts of the
	// tasks' artifact downloads; nil means Nomad's defaults.
	Artifact *getter.Config

	// DataDir holds the client's state: <DataDir>/client/state.db (bbolt)
	// and the allocation directories under <DataDir>/alloc. Required.
	DataDir string
	// Servers are the servers' HTTP addresses ("host:port"), tried in
	// order, rotating on failure. Required.
	Servers []string
	// TLS, when set, makes the calls to Servers over HTTPS with this
	// config (it presents the client's certificate and verifies the
	// servers'); nil means plain HTTP.
	TLS *tls.Config
	// HTTPAddr is this client agent's advertised HTTP address ("host:port");
	// servers proxy /v1/client/* here.
	HTTPAddr string
	// MinDynamicPort and MaxDynamicPort bound the host ports the scheduler
	// assigns on this node; zero means the scheduler's defaults.
	MinDynamicPort, MaxDynamicPort int
	// Network is the bridge networking of allocations in network mode
	// "bridge" (CNI plugins, bridge name and subnet).
	Network NetworkConfig
	// Plugins are the plugin "NAME" { config {...} } blocks, by driver name.
	Plugins map[string]map[string]any
	// HostVolumes are the host_volume "name" { path, read_only } blocks:
	// the node offers them (Node.HostVolumes) to groups' volume blocks.
	// Each path must exist when the client starts.
	HostVolumes map[string]*structs.ClientHostVolumeConfig
	// HostVolumesDir (host_volumes_dir) is where the mkdir plugin creates
	// dynamic host volumes; default <DataDir>/host_volumes, as in Nomad.
	HostVolumesDir string
	// HostNetworks are the host_network "name" blocks: the client resolves
	// each to an address of this host when it starts (Node.HostNetworks,
	// NodeResources.NodeNetworks).
	HostNetworks map[string]*structs.ClientHostNetworkConfig
	// ACLEnabled makes the client's own /v1/client/* endpoints check the
	// caller's token (resolved by a server, see acl.go), as the agent's
	// acl { enabled = true } asks.
	ACLEnabled bool
	// StopAllocsOnShutdown makes Shutdown stop every allocation's tasks
	// (kill_signal, then SIGKILL after kill_timeout; shutdown delays are
	// skipped) and destroy them in their drivers before it returns, instead
	// of leaving them running for the next client process to reattach. The
	// dev agent sets it: its state dies with it, so nothing could ever
	// reattach or stop tasks it left. See stopAllocsForExit.
	StopAllocsOnShutdown bool
	// IntroToken is the client introduction token presented with the
	// node's registrations (the server checks it on the first one, as its
	// client_introduction enforcement says); "" presents none.
	IntroToken string
	// PeerTransport and PeerScheme are how this client reaches another
	// node's client agent (fetching a previous allocation's ephemeral data,
	// ephemeral_disk migrate): with TLS the agent's node transport and
	// "https"; nil and "" mean http.DefaultTransport over plain HTTP.
	PeerTransport http.RoundTripper
	PeerScheme    string
	// TemplateFunctionDenylist and TemplateDisableFileSandbox are the
	// client's template block (function_denylist, disable_file_sandbox):
	// nil is Nomad's default denylist, ["plugin", "writeToFile"].
	TemplateFunctionDenylist   []string
	TemplateDisableFileSandbox bool

	Logger hclog.Logger     // default: a null logger
	Now    func() time.Time // default: time.Now

	// timing overrides the loops' intervals (tests); zero fields are the
	// defaults.
	timing timing
	// procRoot is where /proc and /etc are read from; "" is "/" (tests).
	procRoot string
	// catalog replaces the built-in driver catalog (tests); Plugins are
	// not applied to it.
	catalog drivers.Catalog
}

// timing holds the client loops' intervals.
type timing struct {
	// flushInterval is the least time between two alloc status flushes.
	flushInterval time.Duration
	// driverInterval is how often drivers are fingerprinted again.
	driverInterval time.Duration
	// allocWait is the wait of the blocking alloc query.
	allocWait time.Duration
	// retry is the first delay after a failed server call; it doubles up
	// to maxRetry.
	retry, maxRetry time.Duration
	// defaultTTL is the heartbeat TTL assumed when the server sends none.
	defaultTTL time.Duration
	// behindPatience is how long the servers may answer the node's alloc
	// query with an older view than the one applied before the client
	// takes it (see behindVerdict).
	behindPatience time.Duration
	// logPoll is how often a followed log file is checked for new data,
	// and logHeartbeat how long a framed stream may stay silent.
	logPoll, logHeartbeat time.Duration
	// exitGrace is added to the longest kill_timeout to bound the stop of
	// the allocations on exit (StopAllocsOnShutdown).
	exitGrace time.Duration
	// migratePoll is how often a replacement asks the previous node for
	// its allocation's data while that allocation still runs, and
	// migrateGiveUp how long the previous node may stay unreachable before
	// the replacement starts without the data; migrateIdle how long it may
	// send nothing while it answers.
	migratePoll, migrateGiveUp, migrateIdle time.Duration
}

func (t timing) withDefaults() timing {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&t.flushInterval, 200*time.Millisecond)
	def(&t.driverInterval, 30*time.Second)
	def(&t.allocWait, 300*time.Second)
	def(&t.retry, 250*time.Millisecond)
	def(&t.maxRetry, 10*time.Second)
	def(&t.defaultTTL, 10*time.Second)
	def(&t.behindPatience, 30*time.Second)
	def(&t.logPoll, 250*time.Millisecond)
	def(&t.logHeartbeat, 10*time.Second)
	def(&t.exitGrace, exitStopGrace)
	def(&t.migratePoll, time.Second)
	def(&t.migrateGiveUp, 2*time.Minute)
	def(&t.migrateIdle, defaultMigrateIdle)
	return t
}

// Client option names.
const (
	OptionReservedCPU    = "reserved.cpu"
	OptionReservedMemory = "reserved.memory"
)

// StateDir returns <DataDir>/client, which holds state.db.
func (c *Config) StateDir() string { return filepath.Join(c.DataDir, "client") }

// AllocDir returns <DataDir>/alloc, the root of the allocation directories.
func (c *Config) AllocDir() string { return filepath.Join(c.DataDir, "alloc") }

// DefaultMeta is the static node metadata every client starts from; the
// configured meta (client.meta) is applied over it, and dynamic metadata
// can unset its keys. Each key states what this client really does, for
// job constraints (${meta.<key>}):
//
//   - drover.prefetch = "true": a replacement allocation on this node gets
//     its image prepared before the allocation it replaces stops (prefetch
//     before kill);
//   - drover.network_modes = "host": the group network modes this client
//     runs (tasks share the host's network); "host,bridge" on a client
//     that can give allocations a namespace of their own (see normalize).
//
// They are metadata only: overriding one changes what jobs see, not what
// the client does.
func DefaultMeta() map[string]string {
	return map[string]string{
		"drover.prefetch":      "true",
		"drover.network_modes": "host",
	}
}

// normalize returns a copy of c with defaults filled in, or the list of
// problems. Meta becomes DefaultMeta with c.Meta applied over it.
func (c *Config) normalize() (*Config, error) {
	if c == nil {
		return nil, errors.New("client: config is required")
	}
	n := *c
	n.Meta = DefaultMeta()
	n.Meta["drover.network_modes"] = networkModesMeta(&n)
	maps.Copy(n.Meta, c.Meta)
	n.Options = maps.Clone(c.Options)
	n.Servers = append([]string(nil), c.Servers...)
	var errs []error
	var err error
	if err := (network.BridgeConfig{Name: n.Network.BridgeName, Subnet: n.Network.BridgeSubnet}).WithDefaults().Validate(); err != nil {
		errs = append(errs, err)
	}
	if n.DataDir == "" {
		errs = append(errs, errors.New("data_dir is required"))
	} else if abs, err := filepath.Abs(n.DataDir); err == nil {
		n.DataDir = abs
	}
	if len(n.Servers) == 0 {
		errs = append(errs, errors.New("servers must list at least one server address"))
	}
	if _, err := reservedResources(n.Options); err != nil {
		errs = append(errs, err)
	}
	n.HostVolumes, err = normalizeHostVolumes(c.HostVolumes)
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("client: invalid config: %w", err)
	}
	if n.NodeName == "" {
		n.NodeName, _ = os.Hostname()
	}
	if n.HostVolumesDir == "" {
		n.HostVolumesDir = filepath.Join(n.DataDir, "host_volumes")
	} else if abs, err := filepath.Abs(n.HostVolumesDir); err == nil {
		n.HostVolumesDir = abs
	}
	if n.Datacenter == "" {
		n.Datacenter = "dc1"
	}
	if n.Region == "" {
		n.Region = "global"
	}
	if n.NodePool == "" {
		n.NodePool = "default"
	}
	if n.Logger == nil {
		n.Logger = hclog.NewNullLogger()
	}
	if n.HostEnv == nil {
		n.HostEnv = taskenv.HostEnv(os.Environ(), taskenv.EnvDenylist(n.Options))
	} else {
		n.HostEnv = maps.Clone(n.HostEnv)
	}
	if n.Artifact != nil {
		a := *n.Artifact
		n.Artifact = &a
	}
	if n.Now == nil {
		n.Now = time.Now
	}
	n.timing = c.timing.withDefaults()
	return &n, nil
}

// reservedResources parses the reserved.* options.
func reservedResources(opts map[string]string) (structs.NodeReservedResources, error) {
	var r structs.NodeReservedResources
	var errs []error
	parse := func(key string, dst *int64) {
		v, ok := opts[key]
		if !ok {
			return
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("option %q must be a non-negative integer, got %q", key, v))
			return
		}
		*dst = n
	}
	parse(OptionReservedCPU, &r.Cpu.CpuShares)
	parse(OptionReservedMemory, &r.Memory.MemoryMB)
	return r, errors.Join(errs...)
}

// finalFlushTimeout bounds the last status flush of Shutdown.
const finalFlushTimeout = 2 * time.Second
