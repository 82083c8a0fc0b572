package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/drover-project/drover/nomad/cluster/wan"
)

// ErrNotLeader is returned by Apply and Barrier on a server that is not the
// raft leader.
var ErrNotLeader = errors.New("cluster: not the leader")

const (
	raftDirName     = "raft"
	raftDBName      = "raft.db"
	logCacheSize    = 512
	transportPool   = 3
	transportIOWait = 10 * time.Second
)

// Cluster is one server's membership in the raft cluster.
type Cluster struct {
	cfg       Config
	logger    hclog.Logger
	advertise string
	started   time.Time

	ln     net.Listener
	mux    *mux
	srv    *http.Server
	client *http.Client
	trans  *raft.NetworkTransport
	store  *raftboltdb.BoltStore
	raft   *raft.Raft
	wan    *wan.Table // every server of every region this server knows
	// wanSaved is what the gossip loop last wrote to wanPeersFile.
	wanSaved *[]string

	notifyCh  chan bool
	leaderOut chan bool

	// leaderWait is how long ForwardToLeader waits for a leader.
	leaderWait time.Duration

	ctx          context.Context
	cancel       context.CancelFunc
	wg           sync.WaitGroup
	shutdownOnce sync.Once
	shutdownErr  error
}

// New opens the raft state under cfg.DataDir, starts the rpc listener and
// raft, and starts bootstrapping or joining as configured.
func New(cfg Config) (*Cluster, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.Default()
	}
	logger = logger.Named("cluster")

	var closers []func()
	fail := func(err error) (*Cluster, error) {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
		return nil, err
	}

	ln := cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", cfg.BindAddr); err != nil {
			return nil, fmt.Errorf("cluster: listen on %s: %w", cfg.BindAddr, err)
		}
	}
	closers = append(closers, func() { _ = ln.Close() })
	adv, err := advertiseAddr(ln.Addr(), cfg.AdvertiseAddr)
	if err != nil {
		return fail(err)
	}

	dir := filepath.Join(cfg.DataDir, raftDirName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fail(fmt.Errorf("cluster: create raft dir: %w", err))
	}
	store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, raftDBName)})
	if err != nil {
		return fail(fmt.Errorf("cluster: open raft store: %w", err))
	}
	closers = append(closers, func() { _ = store.Close() })
	logs, err := raft.NewLogCache(logCacheSize, store)
	if err != nil {
		return fail(fmt.Errorf("cluster: raft log cache: %w", err))
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, snapshotRetain, logger.Named("snapshot"))
	if err != nil {
		return fail(fmt.Errorf("cluster: raft snapshot store: %w", err))
	}

	c := &Cluster{
		cfg:        cfg,
		logger:     logger,
		advertise:  adv,
		started:    time.Now(),
		ln:         ln,
		client:     newPeerClient(&dialer{tls: cfg.tlsClient()}),
		store:      store,
		notifyCh:   make(chan bool, 8),
		leaderOut:  make(chan bool),
		leaderWait: 5 * time.Second,
	}
	c.wan = c.newTable(c.started)
	c.ctx, c.cancel = context.WithCancel(context.Background())
	closers = append(closers, c.cancel)

	rc, err := cfg.raftConfig(logger, c.notifyCh)
	if err != nil {
		return fail(err)
	}
	hasState, err := raft.HasExistingState(logs, store, snaps)
	if err != nil {
		return fail(fmt.Errorf("cluster: inspect raft state: %w", err))
	}

	c.mux = newMux(ln, advertised(adv), cfg.TLS, logger.Named("mux"))
	c.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  &streamLayer{chanListener: c.mux.raft, dialer: &dialer{tls: cfg.tlsClient()}},
		MaxPool: transportPool,
		Timeout: transportIOWait,
		Logger:  logger.Named("transport"),
	})
	closers = append(closers, func() { _ = c.trans.Close() })

	c.raft, err = raft.NewRaft(rc, cfg.FSM, logs, store, snaps, c.trans)
	if err != nil {
		return fail(fmt.Errorf("cluster: start raft: %w", err))
	}

	c.srv = &http.Server{
		Handler:           c.peerHandler(cfg.Handler),
		ReadHeaderTimeout: handshakeTimeout,
		ErrorLog:          logger.Named("peer-http").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	c.mux.start()
	c.wg.Add(3)
	go c.serveHTTP()
	go c.runLeaderNotify()
	go c.runWAN()

	logger.Info("cluster started", "node_id", cfg.NodeID, "region", cfg.region(), "rpc_addr", ln.Addr().String(),
		"advertise", adv, "bootstrap_expect", cfg.BootstrapExpect, "existing_state", hasState,
		"tls", cfg.TLS != nil)
	if err := c.startFormation(hasState); err != nil {
		_ = c.Shutdown()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) serveHTTP() {
	defer c.wg.Done()
	if err := c.srv.Serve(c.mux.http); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
		c.logger.Error("peer http server stopped", "error", err)
	}
}

// startFormation bootstraps or starts the background join loop.
func (c *Cluster) startFormation(hasState bool) error {
	switch {
	case hasState:
		c.logger.Info("existing raft state found, skipping bootstrap")
		return nil
	case c.cfg.BootstrapExpect == 1:
		err := c.raft.BootstrapCluster(raft.Configuration{Servers: []raft.Server{c.selfServer()}}).Error()
		if err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			return fmt.Errorf("cluster: bootstrap: %w", err)
		}
		c.logger.Info("bootstrapped single-server cluster")
		return nil
	case c.cfg.BootstrapExpect == 0 && len(c.cfg.RetryJoin) == 0:
		c.logger.Warn("bootstrap_expect is 0 and retry_join is empty; waiting to be added to a cluster")
		return nil
	}
	c.wg.Add(1)
	go c.runJoin()
	return nil
}

func (c *Cluster) selfServer() raft.Server {
	return raft.Server{
		Suffrage: raft.Voter,
		ID:       raft.ServerID(c.cfg.NodeID),
		Address:  raft.ServerAddress(c.advertise),
	}
}

// runLeaderNotify drains raft's NotifyCh (raft blocks on it) and queues each
// transition, in order, for the LeaderCh consumer. LeaderCh is closed on
// Shutdown.
func (c *Cluster) runLeaderNotify() {
	defer c.wg.Done()
	defer close(c.leaderOut)
	var queue []bool
	for {
		var out chan bool
		var next bool
		if len(queue) > 0 {
			out, next = c.leaderOut, queue[0]
		}
		select {
		case v := <-c.notifyCh:
			if v {
				c.logger.Info("gained cluster leadership")
			} else {
				c.logger.Info("lost cluster leadership")
			}
			queue = append(queue, v)
		case out <- next:
			queue = queue[1:]
		case <-c.ctx.Done():
			return
		}
	}
}

// NodeID returns this server's raft ServerID.
func (c *Cluster) NodeID() string { return c.cfg.NodeID }

// Addr returns the bound rpc address (the real port when bound to :0).
func (c *Cluster) Addr() string { return c.ln.Addr().String() }

// AdvertiseAddr returns the rpc address peers use: the raft ServerAddress.
func (c *Cluster) AdvertiseAddr() string { return c.advertise }

// PeerClient returns the HTTP client for server-to-server calls: URLs of the
// form http://<peer-rpc-host:port>/v1/... reach the peer over its rpc port.
// It sets no overall timeout; use request contexts.
func (c *Cluster) PeerClient() *http.Client { return c.client }

// Raft exposes the underlying raft instance.
func (c *Cluster) Raft() *raft.Raft { return c.raft }

// IsLeader reports whether this server is the raft leader.
func (c *Cluster) IsLeader() bool { return c.raft.State() == raft.Leader }

// Leader returns the leader's ID and rpc address, empty when unknown.
func (c *Cluster) Leader() (id, rpcAddr string) {
	addr, sid := c.raft.LeaderWithID()
	return string(sid), string(addr)
}

// LeaderCh delivers leadership transitions (true: became leader, false:
// lost it) in order and without loss, for a single consumer. It is closed on
// Shutdown. Source: raft.Config.NotifyCh.
func (c *Cluster) LeaderCh() <-chan bool { return c.leaderOut }

// Apply commits buf through raft and returns the FSM's response and the log
// index. It returns ErrNotLeader on a follower. An error returned by the FSM
// is returned as err.
func (c *Cluster) Apply(buf []byte, timeout time.Duration) (any, uint64, error) {
	if !c.IsLeader() {
		return nil, 0, ErrNotLeader
	}
	f := c.raft.Apply(buf, timeout)
	if err := f.Error(); err != nil {
		return nil, 0, raftErr("apply", err)
	}
	resp := f.Response()
	if err, ok := resp.(error); ok {
		return nil, f.Index(), err
	}
	return resp, f.Index(), nil
}

// Barrier waits until every preceding log entry is applied to the FSM.
func (c *Cluster) Barrier(timeout time.Duration) error {
	if !c.IsLeader() {
		return ErrNotLeader
	}
	if err := c.raft.Barrier(timeout).Error(); err != nil {
		return raftErr("barrier", err)
	}
	return nil
}

// VerifyLeader confirms with a quorum of voters, in one heartbeat round,
// that this server still leads; ErrNotLeader when it does not. A leader
// that was paused or cut off believes it leads until its lease check runs,
// while the others may already have elected a new leader and committed
// writes: only this round proves leadership at the moment of a read.
func (c *Cluster) VerifyLeader() error {
	if !c.IsLeader() {
		return ErrNotLeader
	}
	if err := c.raft.VerifyLeader().Error(); err != nil {
		if errors.Is(err, raft.ErrLeadershipLost) {
			return ErrNotLeader
		}
		return raftErr("verify leader", err)
	}
	return nil
}

// raftErr maps raft.ErrNotLeader to ErrNotLeader and wraps everything else.
func raftErr(op string, err error) error {
	if errors.Is(err, raft.ErrNotLeader) {
		return fmt.Errorf("%w: %s: %w", ErrNotLeader, op, err)
	}
	return fmt.Errorf("cluster: %s: %w", op, err)
}

// Peers returns the latest raft configuration's servers (nil on error).
func (c *Cluster) Peers() []raft.Server {
	f := c.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil
	}
	return f.Configuration().Servers
}

// Stats returns raft's stats.
func (c *Cluster) Stats() map[string]string { return c.raft.Stats() }

// LastContact is the time since the last contact with a leader: 0 on the
// leader, the time since start when there never was contact.
func (c *Cluster) LastContact() time.Duration {
	if c.IsLeader() {
		return 0
	}
	last := c.raft.LastContact()
	if last.IsZero() {
		last = c.started
	}
	return time.Since(last)
}

// Shutdown stops raft and closes the listeners and stores. It is
// idempotent and safe for concurrent use.
func (c *Cluster) Shutdown() error {
	c.shutdownOnce.Do(func() {
		c.logger.Info("shutting down cluster")
		c.cancel()
		var errs []error
		if err := c.raft.Shutdown().Error(); err != nil {
			errs = append(errs, fmt.Errorf("raft: %w", err))
		}
		_ = c.trans.Close()
		if err := c.srv.Close(); err != nil {
			errs = append(errs, fmt.Errorf("peer http: %w", err))
		}
		if err := c.mux.close(); err != nil {
			errs = append(errs, fmt.Errorf("rpc listener: %w", err))
		}
		c.client.CloseIdleConnections()
		c.wg.Wait()
		if err := c.store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("raft store: %w", err))
		}
		if err := errors.Join(errs...); err != nil {
			c.shutdownErr = fmt.Errorf("cluster: shutdown: %w", err)
		}
	})
	return c.shutdownErr
}
