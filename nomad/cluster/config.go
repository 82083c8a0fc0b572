package cluster

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/nomad/cluster/wan"
)

const (
	// DefaultRPCPort is appended to RetryJoin entries that carry no port.
	DefaultRPCPort = 4647

	// DefaultRetryInterval is the mean pause between two join attempts.
	DefaultRetryInterval = time.Second

	// DefaultGossipInterval is the pause between two rounds of membership
	// exchanges with the other servers of every region.
	DefaultGossipInterval = time.Second

	// DefaultRegion is the region of a Config that names none.
	DefaultRegion = "global"

	// DefaultSnapshotThreshold and DefaultSnapshotInterval are raft's own
	// defaults, spelled out so that operators see them in one place.
	DefaultSnapshotThreshold = 8192
	DefaultSnapshotInterval  = 120 * time.Second

	// snapshotRetain is how many file snapshots are kept.
	snapshotRetain = 2

	// Base raft timings, multiplied by Config.RaftMultiplier.
	baseHeartbeatTimeout   = time.Second
	baseElectionTimeout    = time.Second
	baseLeaderLeaseTimeout = 500 * time.Millisecond
	baseCommitTimeout      = 50 * time.Millisecond
)

// Config configures a Cluster. NodeID, DataDir, FSM and one of BindAddr or
// Listener are required.
type Config struct {
	// NodeID is the raft ServerID: the agent name, unique per server.
	NodeID string

	// Region is this server's region ("" means DefaultRegion). A join to a
	// server of another region federates the two regions (each learns the
	// other's servers) without touching either raft configuration.
	Region string

	// Datacenter and Build describe this server to the other servers.
	Datacenter string
	Build      string

	// GossipInterval is the pause between two rounds of membership
	// exchanges. Zero means DefaultGossipInterval.
	GossipInterval time.Duration

	// WAN tunes the membership table: failed exchanges before a server is
	// failed, how long failed servers are kept (zero: the defaults).
	WAN wan.Config

	// BindAddr is the rpc listen address (host:port, port 0 allowed).
	// Ignored when Listener is set.
	BindAddr string

	// Listener, when non-nil, is an already bound rpc listener. The Cluster
	// takes ownership and closes it on Shutdown. Useful when peers must know
	// each other's ports before any of them starts (tests).
	Listener net.Listener

	// AdvertiseAddr is the rpc address peers use to reach this server and
	// the raft ServerAddress. "" means the bound address; a port of 0 is
	// replaced by the bound port. It must not be an unspecified IP.
	AdvertiseAddr string

	// DataDir holds raft state under <DataDir>/raft. Required; dev mode
	// passes a temporary directory.
	DataDir string

	// BootstrapExpect is the number of servers to wait for before
	// bootstrapping: 0 never bootstraps (join only), 1 bootstraps alone.
	BootstrapExpect int

	// RetryJoin lists peers' rpc addresses (host[:port]).
	RetryJoin []string

	// RetryInterval is the mean pause between join attempts (jittered
	// ±25%). Zero means DefaultRetryInterval.
	RetryInterval time.Duration

	// FSM is the replicated state machine.
	FSM raft.FSM

	// Handler serves server-to-server HTTP that is not handled by this
	// package (forwarded requests). Normally the full API handler.
	Handler http.Handler

	// Logger defaults to hclog.Default().
	Logger hclog.Logger

	// RaftMultiplier scales raft's timeouts (heartbeat 1s, election 1s,
	// leader lease 500ms, commit 50ms). Zero means 1. Tests use < 1.
	RaftMultiplier float64

	// TLS, when set, puts mutual TLS on every rpc connection, inbound and
	// outbound (raft, forwarding, join). Nil means plaintext.
	TLS *TLS

	// SnapshotThreshold and SnapshotInterval default to raft's defaults.
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
}

func (c *Config) validate() error {
	var errs []error
	if c.NodeID == "" {
		errs = append(errs, errors.New("NodeID is required"))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("DataDir is required"))
	}
	if c.FSM == nil {
		errs = append(errs, errors.New("FSM is required"))
	}
	if c.Listener == nil && c.BindAddr == "" {
		errs = append(errs, errors.New("BindAddr or Listener is required"))
	}
	if c.BootstrapExpect < 0 {
		errs = append(errs, fmt.Errorf("BootstrapExpect must be >= 0, got %d", c.BootstrapExpect))
	}
	if c.RaftMultiplier < 0 {
		errs = append(errs, fmt.Errorf("RaftMultiplier must be >= 0, got %v", c.RaftMultiplier))
	}
	if c.TLS != nil && (c.TLS.Server == nil || c.TLS.Client == nil) {
		errs = append(errs, errors.New("TLS needs both a Server and a Client config"))
	}
	if c.GossipInterval < 0 {
		errs = append(errs, fmt.Errorf("GossipInterval must be >= 0, got %s", c.GossipInterval))
	}
	if c.RetryInterval < 0 {
		errs = append(errs, fmt.Errorf("RetryInterval must be >= 0, got %s", c.RetryInterval))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cluster: invalid config: %w", err)
	}
	return nil
}

// tlsClient is the outbound TLS config, nil without TLS.
func (c *Config) tlsClient() *tls.Config {
	if c.TLS == nil {
		return nil
	}
	return c.TLS.Client
}

func (c *Config) region() string {
	if c.Region == "" {
		return DefaultRegion
	}
	return c.Region
}

func (c *Config) gossipInterval() time.Duration {
	if c.GossipInterval == 0 {
		return DefaultGossipInterval
	}
	return c.GossipInterval
}

func (c *Config) retryInterval() time.Duration {
	if c.RetryInterval == 0 {
		return DefaultRetryInterval
	}
	return c.RetryInterval
}

// raftConfig builds and validates the raft configuration.
func (c *Config) raftConfig(logger hclog.Logger, notify chan<- bool) (*raft.Config, error) {
	m := c.RaftMultiplier
	if m == 0 {
		m = 1
	}
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) * m) }

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(c.NodeID)
	rc.HeartbeatTimeout = scale(baseHeartbeatTimeout)
	rc.ElectionTimeout = scale(baseElectionTimeout)
	rc.LeaderLeaseTimeout = scale(baseLeaderLeaseTimeout)
	rc.CommitTimeout = scale(baseCommitTimeout)
	rc.SnapshotThreshold = DefaultSnapshotThreshold
	if c.SnapshotThreshold > 0 {
		rc.SnapshotThreshold = c.SnapshotThreshold
	}
	rc.SnapshotInterval = DefaultSnapshotInterval
	if c.SnapshotInterval > 0 {
		rc.SnapshotInterval = c.SnapshotInterval
	}
	rc.NotifyCh = notify
	rc.Logger = logger.Named("raft")
	if err := raft.ValidateConfig(rc); err != nil {
		return nil, fmt.Errorf("cluster: raft config: %w", err)
	}
	return rc, nil
}

// advertiseAddr resolves the address peers use for this server.
func advertiseAddr(bound net.Addr, advertise string) (string, error) {
	if advertise == "" {
		advertise = bound.String()
	}
	host, port, err := net.SplitHostPort(advertise)
	if err != nil {
		return "", fmt.Errorf("cluster: advertise address %q: %w", advertise, err)
	}
	if port == "" || port == "0" {
		tcp, ok := bound.(*net.TCPAddr)
		if !ok {
			return "", fmt.Errorf("cluster: cannot derive port of bound address %s", bound)
		}
		port = strconv.Itoa(tcp.Port)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return "", fmt.Errorf("cluster: advertise address %q is not reachable by peers; set AdvertiseAddr", advertise)
	}
	return net.JoinHostPort(host, port), nil
}

// normalizeJoinAddr adds DefaultRPCPort to a RetryJoin entry without a port.
func normalizeJoinAddr(addr string) string {
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return addr
	}
	host := strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]")
	return net.JoinHostPort(host, strconv.Itoa(DefaultRPCPort))
}
