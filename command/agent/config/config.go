package config

import (
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Default values of the agent configuration.
const (
	DefaultBindAddr   = "0.0.0.0"
	DevBindAddr       = "127.0.0.1"
	DefaultDatacenter = "dc1"
	DefaultRegion     = "global"
	DefaultLogLevel   = "INFO"
	DefaultNodePool   = "default"
	DefaultHTTPPort   = 4646
	DefaultRPCPort    = 4647
)

// Config is the configuration of one agent (server, client, or both).
//
// A zero field means "not set": Merge only copies set fields, so a Config
// returned by Parse holds exactly what its file says, and DefaultConfig or
// DevConfig supply the rest.
type Config struct {
	// Name is the node (and server) name. Default: os.Hostname().
	Name string
	// DataDir holds raft data and the client's local state. Required
	// unless DevMode, in which case the caller creates a temporary one.
	DataDir string
	// BindAddr is the IP address the HTTP and RPC listeners bind to.
	BindAddr   string
	Datacenter string
	Region     string
	// LogLevel is one of TRACE, DEBUG, INFO, WARN, ERROR.
	LogLevel string
	// DevMode is set by -dev: one server and one client in one process.
	DevMode bool
	// EnableDebug serves Go's profiler at /debug/pprof/ (enable_debug).
	EnableDebug bool

	Ports     Ports
	Advertise Advertise
	Server    ServerConfig
	Client    ClientConfig
	// TLS is the `tls` block.
	TLS TLSConfig
	ACL ACLConfig
	// Plugins holds the `plugin "NAME" { config { ... } }` blocks by name.
	Plugins map[string]PluginConfig

	// Now replaces the wall clock of the agent's server (tests); nil means
	// time.Now. No file sets it.
	Now func() time.Time

	// Ignored lists the keys of Nomad's agent configuration that the files
	// set and Drover does not act on, as dotted paths ("vault",
	// "server.raft_protocol"), each once, in the order found. The agent
	// logs a warning naming each.
	Ignored []string
}

// Ports are the TCP ports the agent listens on.
type Ports struct {
	// HTTP serves the Nomad-compatible API and the internal client API.
	HTTP int
	// RPC carries raft and server-to-server request forwarding.
	RPC int
	// Serf, when set, is a second port on which a server answers the
	// discovery and join requests of other servers (Drover has no gossip
	// layer; `agent join` may name a server by this port, as with Nomad).
	// 0 means no such listener.
	Serf int
}

// Advertise overrides the addresses other agents dial to reach this one.
// Each value is "host" (the port comes from Ports) or "host:port".
type Advertise struct {
	HTTP string
	RPC  string
}

// ACLConfig is the `acl` block.
type ACLConfig struct {
	// Enabled turns on ACL enforcement on servers: every request needs a
	// token whose policies allow it.
	Enabled bool
	// TokenMinExpirationTTL and TokenMaxExpirationTTL bound the lifetime
	// a token may be given (token_min_expiration_ttl,
	// token_max_expiration_ttl); zero means Nomad's defaults (1m, 24h).
	TokenMinExpirationTTL, TokenMaxExpirationTTL time.Duration
}

// ServerConfig is the `server` block.
type ServerConfig struct {
	Enabled bool
	// BootstrapExpect is the number of servers to wait for before
	// bootstrapping raft; 0 means join an existing cluster.
	BootstrapExpect int
	// RetryJoin lists other servers' RPC addresses ("host:port").
	RetryJoin []string
	// MinHeartbeatTTL is the shortest heartbeat TTL given to clients; a
	// client that misses its TTL (plus HeartbeatGrace) is marked down.
	// Zero means the default (10s).
	MinHeartbeatTTL time.Duration
	// HeartbeatGrace is added to every TTL the server enforces. Zero means
	// the default (10s).
	HeartbeatGrace time.Duration
	// RegistryAuthConfig (registry_auth_config) is the path of a Docker
	// config.json whose "auths" the server uses to resolve image tags of
	// tasks without an auth block (digest pinning and auto-update).
	RegistryAuthConfig string
	// InsecureRegistries (insecure_registries) lists registries ("host" or
	// "host:port") the server talks plain HTTP to, beyond loopback ones.
	InsecureRegistries []string
	// RegistryRequestBudget (registry_request_budget) is the most manifest
	// checks the image watcher sends one registry per minute; zero means
	// the default (60).
	RegistryRequestBudget int
	// ImagePinning (image_pinning) is "on" (the default: Docker tags are
	// resolved to a digest at registration and plan) or "off" (never: for
	// clusters whose servers cannot reach any registry; images run by tag,
	// as Nomad runs them, and auto_update is refused).
	ImagePinning string
	// MaxHeartbeatsPerSecond bounds the heartbeats all clients send
	// together: the TTL grows with the node count. Zero means 50.
	MaxHeartbeatsPerSecond float64
	// The ages after which the garbage collector removes terminal
	// evaluations (with their allocations), stopped jobs, terminal
	// deployments and down nodes. Zero means Nomad's defaults (1h, 4h,
	// 1h, 24h).
	EvalGCThreshold, JobGCThreshold, DeploymentGCThreshold, NodeGCThreshold time.Duration
	// ClientIntroduction is the client_introduction block.
	ClientIntroduction ClientIntroductionConfig
	// PrometheusAddress (prometheus_address) is the base URL of the
	// Prometheus the deployment watcher asks for drover.analysis_query
	// metric gates ("http://prometheus:9090"); "" refuses such jobs.
	PrometheusAddress string
	// GateWebhookSecret (gate_webhook_secret) signs the calls of
	// drover.gate_webhook gates (HMAC-SHA256 in X-Drover-Signature); ""
	// refuses such jobs.
	GateWebhookSecret string
}

// ClientIntroductionConfig is the server's client_introduction block: what
// a node's first registration without a valid client introduction token
// gets, and the lifetimes of the tokens the server signs.
type ClientIntroductionConfig struct {
	// Enforcement is "none", "warn" or "strict"; "" means "warn".
	Enforcement string
	// DefaultIdentityTTL (default_identity_ttl) is the lifetime of a token
	// whose request sets none; MaxRequestIdentityTTL
	// (max_request_identity_ttl) the longest a request may ask for. Zero
	// means 5m and 30m.
	DefaultIdentityTTL, MaxRequestIdentityTTL time.Duration
}

// Client introduction enforcement levels.
var IntroductionEnforcements = []string{"none", "warn", "strict"}

// ClientConfig is the `client` block.
type ClientConfig struct {
	Enabled bool
	// Servers lists the servers' HTTP addresses ("host:port").
	Servers []string
	// MinDynamicPort and MaxDynamicPort bound the host ports the scheduler
	// assigns to dynamic ports on this node; zero means 20000 and 32000.
	// Agents sharing one host (or one Docker engine) need disjoint ranges.
	MinDynamicPort, MaxDynamicPort int
	NodeClass                      string
	NodePool                       string
	Meta                           map[string]string
	Options                        map[string]string
	// CNIPath (cni_path) lists the directories of the CNI plugins,
	// colon-separated; "" means /opt/cni/bin, then /usr/lib/cni.
	CNIPath string
	// CNIConfigDir (cni_config_dir) holds the configurations of the
	// cni/<name> networks; "" means /opt/cni/config.
	CNIConfigDir string
	// BridgeNetworkName, BridgeNetworkSubnet and BridgeNetworkHairpinMode
	// (bridge_network_*) are the bridge of allocations in network mode
	// "bridge"; "" means "nomad" and 172.26.64.0/20, as in Nomad.
	BridgeNetworkName, BridgeNetworkSubnet string
	BridgeNetworkHairpinMode               bool
	// ChrootEnv (chroot_env) maps host paths to paths in the root of exec
	// tasks, as in Nomad; it is the exec driver's chroot_env unless the
	// plugin "exec" block sets one.
	ChrootEnv map[string]string
	// IntroToken (intro_token) is the client introduction token the node
	// presents when it first registers; NOMAD_CLIENT_INTRO_TOKEN and
	// -client-intro-token override it.
	IntroToken string
	// HostVolumes are the host_volume "name" blocks, by name.
	HostVolumes map[string]HostVolume
	// HostVolumesDir (host_volumes_dir) is where dynamic host volumes are
	// created; "" is <data_dir>/host_volumes.
	HostVolumesDir string
	// HostNetworks are the host_network "name" blocks, by name
	// (host_networks.go).
	HostNetworks map[string]HostNetwork

	// Artifact is the `artifact` block (artifact.go); nil when absent.
	Artifact *ArtifactConfig

	// Template is the client's template block: how it renders the tasks'
	// template blocks.
	Template ClientTemplateConfig
}

// ClientTemplateConfig is the client's `template` block, as in Nomad.
type ClientTemplateConfig struct {
	// FunctionDenylist (function_denylist) are template functions a task's
	// template may not call; nil is Nomad's default, ["plugin",
	// "writeToFile"], and an empty list allows every function.
	FunctionDenylist []string
	// DisableFileSandbox (disable_file_sandbox) lets templates read files
	// (source, the file function) outside the allocation directory.
	DisableFileSandbox bool
}

// PluginConfig is one `plugin "NAME"` block.
//
// Config is the opaque `config` body: attributes become Go values (bool,
// string, int, float64, []any, map[string]any, or nil); a nested block
// becomes a map[string]any, a repeated block type a []any of such maps, and
// block labels add one map level per label.
type PluginConfig struct {
	Config map[string]any
}

// DefaultConfig returns the defaults of a non-dev agent. Neither server nor
// client is enabled; the configuration files or flags say which.
func DefaultConfig() *Config {
	return &Config{
		Name:       defaultName(),
		BindAddr:   DefaultBindAddr,
		Datacenter: DefaultDatacenter,
		Region:     DefaultRegion,
		LogLevel:   DefaultLogLevel,
		Ports:      Ports{HTTP: DefaultHTTPPort, RPC: DefaultRPCPort},
		Server:     ServerConfig{ImagePinning: ImagePinningOn},
		Client:     ClientConfig{NodePool: DefaultNodePool},
		Plugins:    map[string]PluginConfig{},
	}
}

// The values of server.image_pinning.
const (
	ImagePinningOn  = "on"
	ImagePinningOff = "off"
)

// DevConfig returns the -dev preset: one server (bootstrap_expect 1) and one
// client in one process, bound to loopback, with the raw_exec and mock
// drivers enabled. DataDir is empty: the caller creates a temporary one.
func DevConfig() *Config {
	c := DefaultConfig()
	c.DevMode = true
	c.BindAddr = DevBindAddr
	c.Server.Enabled = true
	c.Server.BootstrapExpect = 1
	c.Client.Enabled = true
	c.Plugins["raw_exec"] = PluginConfig{Config: map[string]any{"enabled": true}}
	c.Plugins["mock"] = PluginConfig{Config: map[string]any{"enabled": true}}
	return c
}

func defaultName() string {
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "drover"
}

// Copy returns a deep copy of c.
func (c *Config) Copy() *Config {
	if c == nil {
		return nil
	}
	out := *c
	out.Server.RetryJoin = slices.Clone(c.Server.RetryJoin)
	out.Server.InsecureRegistries = slices.Clone(c.Server.InsecureRegistries)
	out.Client.Servers = slices.Clone(c.Client.Servers)
	out.Client.Meta = maps.Clone(c.Client.Meta)
	out.Client.Options = maps.Clone(c.Client.Options)
	out.Client.ChrootEnv = maps.Clone(c.Client.ChrootEnv)
	out.Client.Artifact = c.Client.Artifact.copy()
	out.Client.HostVolumes = maps.Clone(c.Client.HostVolumes)
	out.Client.HostNetworks = maps.Clone(c.Client.HostNetworks)
	out.Ignored = slices.Clone(c.Ignored)
	if c.Plugins != nil {
		out.Plugins = make(map[string]PluginConfig, len(c.Plugins))
		for name, p := range c.Plugins {
			out.Plugins[name] = PluginConfig{Config: copyAnyMap(p.Config)}
		}
	}
	return &out
}

// Merge returns a new Config: c overlaid with the fields o sets. Neither c
// nor o is modified. Scalars and lists set in o replace c's (a bool can
// only be turned on, as in Nomad); Meta and Options merge key by key;
// plugins merge by name, and within a plugin the config keys merge with o's
// winning.
func (c *Config) Merge(o *Config) *Config {
	out := c.Copy()
	if out == nil {
		out = &Config{}
	}
	if o == nil {
		return out
	}
	setString(&out.Name, o.Name)
	setString(&out.DataDir, o.DataDir)
	setString(&out.BindAddr, o.BindAddr)
	setString(&out.Datacenter, o.Datacenter)
	setString(&out.Region, o.Region)
	setString(&out.LogLevel, o.LogLevel)
	out.DevMode = out.DevMode || o.DevMode

	setInt(&out.Ports.HTTP, o.Ports.HTTP)
	setInt(&out.Ports.RPC, o.Ports.RPC)
	setInt(&out.Ports.Serf, o.Ports.Serf)
	setString(&out.Advertise.HTTP, o.Advertise.HTTP)
	setString(&out.Advertise.RPC, o.Advertise.RPC)

	out.ACL.Enabled = out.ACL.Enabled || o.ACL.Enabled
	if o.ACL.TokenMinExpirationTTL != 0 {
		out.ACL.TokenMinExpirationTTL = o.ACL.TokenMinExpirationTTL
	}
	if o.ACL.TokenMaxExpirationTTL != 0 {
		out.ACL.TokenMaxExpirationTTL = o.ACL.TokenMaxExpirationTTL
	}
	out.Server.Enabled = out.Server.Enabled || o.Server.Enabled
	setInt(&out.Server.BootstrapExpect, o.Server.BootstrapExpect)
	if len(o.Server.RetryJoin) > 0 {
		out.Server.RetryJoin = slices.Clone(o.Server.RetryJoin)
	}
	if o.Server.MinHeartbeatTTL > 0 {
		out.Server.MinHeartbeatTTL = o.Server.MinHeartbeatTTL
	}
	if o.Server.HeartbeatGrace > 0 {
		out.Server.HeartbeatGrace = o.Server.HeartbeatGrace
	}
	setString(&out.Server.RegistryAuthConfig, o.Server.RegistryAuthConfig)
	setString(&out.Server.PrometheusAddress, o.Server.PrometheusAddress)
	setString(&out.Server.GateWebhookSecret, o.Server.GateWebhookSecret)
	if len(o.Server.InsecureRegistries) > 0 {
		out.Server.InsecureRegistries = slices.Clone(o.Server.InsecureRegistries)
	}
	setInt(&out.Server.RegistryRequestBudget, o.Server.RegistryRequestBudget)
	setString(&out.Server.ClientIntroduction.Enforcement, o.Server.ClientIntroduction.Enforcement)
	if o.Server.ClientIntroduction.DefaultIdentityTTL != 0 {
		out.Server.ClientIntroduction.DefaultIdentityTTL = o.Server.ClientIntroduction.DefaultIdentityTTL
	}
	if o.Server.ClientIntroduction.MaxRequestIdentityTTL != 0 {
		out.Server.ClientIntroduction.MaxRequestIdentityTTL = o.Server.ClientIntroduction.MaxRequestIdentityTTL
	}
	setString(&out.Server.ImagePinning, o.Server.ImagePinning)
	mergeScaleConfig(&out.Server, &o.Server)
	out.EnableDebug = out.EnableDebug || o.EnableDebug

	mergeTLS(&out.TLS, o.TLS)

	out.Client.Enabled = out.Client.Enabled || o.Client.Enabled
	if len(o.Client.Servers) > 0 {
		out.Client.Servers = slices.Clone(o.Client.Servers)
	}
	setInt(&out.Client.MinDynamicPort, o.Client.MinDynamicPort)
	setInt(&out.Client.MaxDynamicPort, o.Client.MaxDynamicPort)
	setString(&out.Client.NodeClass, o.Client.NodeClass)
	setString(&out.Client.NodePool, o.Client.NodePool)
	setString(&out.Client.IntroToken, o.Client.IntroToken)
	setString(&out.Client.HostVolumesDir, o.Client.HostVolumesDir)
	setString(&out.Client.CNIPath, o.Client.CNIPath)
	setString(&out.Client.CNIConfigDir, o.Client.CNIConfigDir)
	setString(&out.Client.BridgeNetworkName, o.Client.BridgeNetworkName)
	setString(&out.Client.BridgeNetworkSubnet, o.Client.BridgeNetworkSubnet)
	out.Client.BridgeNetworkHairpinMode = out.Client.BridgeNetworkHairpinMode || o.Client.BridgeNetworkHairpinMode
	if len(o.Client.ChrootEnv) > 0 {
		out.Client.ChrootEnv = maps.Clone(o.Client.ChrootEnv) // a chroot is replaced whole
	}
	if o.Client.Template.FunctionDenylist != nil {
		out.Client.Template.FunctionDenylist = slices.Clone(o.Client.Template.FunctionDenylist)
	}
	out.Client.Template.DisableFileSandbox = out.Client.Template.DisableFileSandbox || o.Client.Template.DisableFileSandbox
	out.Client.Artifact = mergeArtifact(out.Client.Artifact, o.Client.Artifact)
	out.Client.Meta = mergeStringMap(out.Client.Meta, o.Client.Meta)
	out.Client.HostVolumes = mergeHostVolumes(out.Client.HostVolumes, o.Client.HostVolumes)
	out.Client.HostNetworks = mergeHostNetworks(out.Client.HostNetworks, o.Client.HostNetworks)
	out.Client.Options = mergeStringMap(out.Client.Options, o.Client.Options)

	for _, k := range o.Ignored {
		if !slices.Contains(out.Ignored, k) {
			out.Ignored = append(out.Ignored, k)
		}
	}
	for name, p := range o.Plugins {
		if out.Plugins == nil {
			out.Plugins = map[string]PluginConfig{}
		}
		merged := copyAnyMap(out.Plugins[name].Config)
		if merged == nil && p.Config != nil {
			merged = map[string]any{}
		}
		maps.Copy(merged, copyAnyMap(p.Config))
		out.Plugins[name] = PluginConfig{Config: merged}
	}
	return out
}

func setString(dst *string, v string) {
	if v != "" {
		*dst = v
	}
}

func setInt(dst *int, v int) {
	if v != 0 {
		*dst = v
	}
}

func mergeStringMap(a, b map[string]string) map[string]string {
	if len(b) == 0 {
		return a
	}
	if a == nil {
		a = make(map[string]string, len(b))
	}
	maps.Copy(a, b)
	return a
}

func copyAnyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = copyAny(v)
	}
	return out
}

func copyAny(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return copyAnyMap(t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = copyAny(e)
		}
		return out
	default:
		return v
	}
}

// HTTPAddr is the "host:port" the HTTP listener binds to.
func (c *Config) HTTPAddr() string {
	return net.JoinHostPort(c.BindAddr, strconv.Itoa(c.Ports.HTTP))
}

// RPCAddr is the "host:port" the RPC listener binds to.
func (c *Config) RPCAddr() string {
	return net.JoinHostPort(c.BindAddr, strconv.Itoa(c.Ports.RPC))
}

// AdvertiseHTTPAddr is the "host:port" other agents and clients should dial
// for HTTP. See advertiseAddr for how the host is chosen.
func (c *Config) AdvertiseHTTPAddr() string {
	return c.advertiseAddr(c.Advertise.HTTP, c.Ports.HTTP)
}

// AdvertiseRPCAddr is the "host:port" other servers should dial for raft
// and forwarding. See advertiseAddr for how the host is chosen.
func (c *Config) AdvertiseRPCAddr() string {
	return c.advertiseAddr(c.Advertise.RPC, c.Ports.RPC)
}

// advertiseAddr returns the explicit advertise address when set (adding
// port when it has none); else BindAddr when it is a specific address; else,
// for an unspecified bind address (0.0.0.0 or ::), the host's first private
// IPv4 address, then its first other global unicast IPv4 address, then
// 127.0.0.1.
func (c *Config) advertiseAddr(explicit string, port int) string {
	if explicit != "" {
		if _, _, err := net.SplitHostPort(explicit); err == nil {
			return explicit
		}
		return net.JoinHostPort(strings.Trim(explicit, "[]"), strconv.Itoa(port))
	}
	host := c.BindAddr
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = hostIPv4()
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// interfaceAddrs is replaced in tests.
var interfaceAddrs = net.InterfaceAddrs

func hostIPv4() string {
	addrs, err := interfaceAddrs()
	if err != nil {
		return "127.0.0.1"
	}
	var public string
	for _, a := range addrs {
		var ip net.IP
		switch v := a.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		ip4 := ip.To4()
		if ip4 == nil || !ip4.IsGlobalUnicast() {
			continue // also skips loopback and link-local
		}
		if ip4.IsPrivate() {
			return ip4.String()
		}
		if public == "" {
			public = ip4.String()
		}
	}
	if public != "" {
		return public
	}
	return "127.0.0.1"
}
