package nomad

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/helper/metrics"
	"github.com/drover-project/drover/nomad/broker"
	"github.com/drover-project/drover/nomad/cluster"
	"github.com/drover-project/drover/nomad/fsm"
	"github.com/drover-project/drover/nomad/gc"
	"github.com/drover-project/drover/nomad/imageresolve"
	"github.com/drover-project/drover/nomad/imagewatcher"
	"github.com/drover-project/drover/nomad/planner"
	"github.com/drover-project/drover/nomad/prefetch"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/stream"
	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/version"
)

// raftApplyTimeout bounds one raft apply.
const raftApplyTimeout = 30 * time.Second

// Config configures a server.
type Config struct {
	NodeName        string // unique among servers; the raft server ID
	Region          string
	Datacenter      string
	DataDir         string // raft log, stable store and snapshots live under DataDir/server
	RPCAddr         string // rpc listen address "host:port" (raft and server-to-server HTTP)
	RPCAdvertise    string // address other servers dial; "" uses the bound address
	BootstrapExpect int
	RetryJoin       []string
	NumSchedulers   int // scheduler workers on the leader; 0 means one per CPU
	// MinHeartbeatTTL and HeartbeatGrace govern when a silent client is
	// marked down; zero means Nomad's defaults (10s each).
	MinHeartbeatTTL time.Duration
	HeartbeatGrace  time.Duration
	RaftMultiplier  float64 // scales raft timeouts; 0 means 1
	// RPCTLS puts mutual TLS on the rpc port (raft, join, forwarding);
	// nil means plaintext.
	RPCTLS *cluster.TLS
	// Registry configures image tag resolution (pinning at registration
	// and the image watcher): server-side credentials, insecure registries,
	// the timeout of one resolution.
	Registry imageresolve.Options
	// RegistryBudget is the most manifest checks the image watcher sends
	// one registry per minute; 0 means DefaultRegistryBudget.
	RegistryBudget int
	// ImagePinningOff is the agent's image_pinning = "off": registrations
	// and plans resolve no tag (images run by tag), auto_update is refused
	// and the image watcher does not run.
	ImagePinningOff bool
	// Gates configures the deployment watcher's metric and webhook gates
	// (the agent's server { prometheus_address, gate_webhook_secret }).
	Gates GateConfig
	// ACLEnabled turns on ACL enforcement (the agent's `acl { enabled }`).
	ACLEnabled bool
	// ACLTokenMinTTL and ACLTokenMaxTTL bound a token's lifetime; zero
	// means Nomad's defaults (1m, 24h).
	ACLTokenMinTTL, ACLTokenMaxTTL time.Duration
	// Metrics is the registry the server's metrics are added to; nil means
	// a private one.
	Metrics *metrics.Registry
	// GC holds the garbage collector's thresholds (zero: Nomad's
	// defaults) and GCInterval how often the leader collects (zero: 5m).
	GC         gc.Thresholds
	GCInterval time.Duration
	// MaxHeartbeatsPerSecond scales the heartbeat TTL with the node count;
	// zero means 50.
	MaxHeartbeatsPerSecond float64
	// ClientIntroduction is the client_introduction block: what a node
	// registering without a client introduction token gets, and the
	// lifetimes of the tokens this server signs.
	ClientIntroduction ClientIntroduction
	Logger             hclog.Logger
	// Now is the wall clock; tests may replace it.
	Now func() time.Time
}

// Server is one Drover server.
type Server struct {
	config  Config
	logger  hclog.Logger
	fsm     *fsm.FSM
	cluster *cluster.Cluster
	broker  *broker.Broker
	plans   *planner.Queue
	handler atomic.Pointer[http.Handler]

	heartbeats   heartbeats
	workers      *workerPool
	stable       stableTracker // autopilot: since when servers are healthy
	policies     policyCache   // parsed ACL policies
	varCipher    variableCipher
	varLocks     *lockLeases // the leader's variable lock leases
	prefetch     *prefetch.Coordinator
	allocUpdates *allocUpdateBatcher

	resolver     *imageresolve.Resolver
	imageMetrics *imagewatcher.Metrics
	introMetrics *introductionMetrics
	imageWatcher atomic.Pointer[imagewatcher.Watcher] // set while leading

	leaderMu     sync.Mutex
	leaderCancel context.CancelFunc // non-nil while this server leads
	leaderDone   sync.WaitGroup
	// readsReadyTerm is the raft term in which this server, as leader,
	// applied the log it inherited (see ReadyForConsistentReads); 0 when
	// it does not lead.
	readsReadyTerm atomic.Uint64
	// verifyLeader, if set, replaces the quorum round a default read
	// makes (cluster.VerifyLeader); tests set it.
	verifyLeader func() error

	shutdownOnce sync.Once
}

// NewServer starts a server: it opens (or restores) its raft state and joins
// or bootstraps the cluster. Leadership duties start when it is elected.
func NewServer(cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NumSchedulers <= 0 {
		cfg.NumSchedulers = runtime.NumCPU()
	}
	if cfg.DataDir == "" {
		return nil, errors.New("server: data_dir is required")
	}
	switch cfg.ClientIntroduction.Enforcement {
	case "", IntroductionNone, IntroductionWarn, IntroductionStrict:
	default:
		return nil, fmt.Errorf("server: client_introduction enforcement %q: must be %q, %q or %q",
			cfg.ClientIntroduction.Enforcement, IntroductionNone, IntroductionWarn, IntroductionStrict)
	}
	dir := filepath.Join(cfg.DataDir, "server")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("server: create data dir: %w", err)
	}
	s := &Server{config: cfg, logger: cfg.Logger.Named("server"), varLocks: newLockLeases()}
	s.resolver = imageresolve.New(cfg.Registry)
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.NewRegistry()
		s.config.Metrics = cfg.Metrics
	}
	s.imageMetrics = imagewatcher.NewMetrics(cfg.Metrics)
	s.introMetrics = newIntroductionMetrics(cfg.Metrics)
	s.workers = &workerPool{srv: s, cfg: WorkerPoolConfig{NumSchedulers: cfg.NumSchedulers, EnabledSchedulers: defaultEnabledSchedulers()}}
	s.fsm = fsm.New(state.NewStateStore(), s.logger)
	s.broker = broker.New(broker.Config{})
	s.fsm.SetEvalsHook(s.enqueueEvals)
	s.allocUpdates = newAllocUpdateBatcher(allocUpdateWindow, s.applyAllocClientUpdates)
	s.prefetch = prefetch.NewCoordinator(s.State(), s.logger, cfg.Now, 0)
	s.plans = planner.NewQueue(s.logger, func() planner.Snapshot { return s.State().Snapshot() },
		s.commitPlan, func() int64 { return s.config.Now().UnixNano() })

	cl, err := cluster.New(cluster.Config{
		NodeID:          cfg.NodeName,
		Region:          cfg.Region,
		Datacenter:      cfg.Datacenter,
		Build:           version.Version,
		BindAddr:        cfg.RPCAddr,
		AdvertiseAddr:   cfg.RPCAdvertise,
		DataDir:         dir,
		BootstrapExpect: cfg.BootstrapExpect,
		RetryJoin:       cfg.RetryJoin,
		FSM:             s.fsm,
		Handler:         http.HandlerFunc(s.servePeerHTTP),
		Logger:          s.logger,
		RaftMultiplier:  cfg.RaftMultiplier,
		TLS:             cfg.RPCTLS,
	})
	if err != nil {
		return nil, fmt.Errorf("server: start raft: %w", err)
	}
	s.cluster = cl
	go s.monitorLeadership()
	return s, nil
}

// SetHTTPHandler sets the handler that serves requests forwarded from other
// servers (the agent's full API handler).
func (s *Server) SetHTTPHandler(h http.Handler) { s.handler.Store(&h) }

func (s *Server) servePeerHTTP(w http.ResponseWriter, r *http.Request) {
	h := s.handler.Load()
	if h == nil {
		http.Error(w, "server is starting", http.StatusServiceUnavailable)
		return
	}
	(*h).ServeHTTP(w, r)
}

// State returns the server's state store. Readers take snapshots or use
// blocking queries; only the FSM writes.
func (s *Server) State() *state.StateStore { return s.fsm.State() }

// IsLeader reports whether this server is the raft leader.
func (s *Server) IsLeader() bool { return s.cluster.IsLeader() }

// Leader returns the leader's rpc address, or "" when no leader is known.
func (s *Server) Leader() string {
	_, addr := s.cluster.Leader()
	return addr
}

// LastContact is the time since this server last heard from the leader (0 on
// the leader).
func (s *Server) LastContact() time.Duration { return s.cluster.LastContact() }

// Peers lists the raft servers' rpc addresses.
func (s *Server) Peers() []string {
	var out []string
	for _, p := range s.cluster.Peers() {
		out = append(out, string(p.Address))
	}
	return out
}

// RPCAddr is the rpc address this server is reachable at.
func (s *Server) RPCAddr() string { return s.cluster.Addr() }

// Config returns the server's configuration.
func (s *Server) Config() Config { return s.config }

// Stats reports raft and broker figures for /v1/agent/self and metrics.
func (s *Server) Stats() (raftStats map[string]string, brokerStats broker.Stats) {
	return s.cluster.Stats(), s.broker.Stats()
}

// Forward proxies r to the leader when this server is not the leader and
// reports whether it did (the response has then been written).
func (s *Server) Forward(w http.ResponseWriter, r *http.Request) bool {
	return s.cluster.ForwardToLeader(w, r)
}

// ForwardRegion proxies r to a server of region when region is neither
// empty nor this server's, and reports whether it did (the response has
// then been written; "No path to region" when no server of region is
// known alive).
func (s *Server) ForwardRegion(w http.ResponseWriter, r *http.Request, region string) bool {
	return s.cluster.ForwardToRegion(w, r, region)
}

// Shutdown stops leadership duties and raft. It is idempotent.
func (s *Server) Shutdown() error {
	var err error
	s.shutdownOnce.Do(func() {
		s.revokeLeadership()
		err = s.cluster.Shutdown()
	})
	return err
}

// raftApply encodes msg as a t entry and applies it through raft. A non-nil
// error returned by the FSM for the entry is returned as err.
func (s *Server) raftApply(t structs.MessageType, msg any) (any, uint64, error) {
	buf, err := structs.Encode(t, msg)
	if err != nil {
		return nil, 0, err
	}
	resp, index, err := s.cluster.Apply(buf, raftApplyTimeout)
	if err != nil {
		return nil, 0, fmt.Errorf("raft apply: %w", err)
	}
	return resp, index, nil
}

// commitPlan is the plan queue's committer.
func (s *Server) commitPlan(req *structs.ApplyPlanResultsRequest) (uint64, error) {
	if err := s.signPlanIdentities(req); err != nil {
		return 0, err
	}
	_, index, err := s.raftApply(structs.ApplyPlanResultsCompactRequestType, structs.CompactPlanResults(req))
	return index, err
}

// enqueueEvals hands committed pending evaluations to the broker. On
// followers the broker is disabled and drops them; a new leader re-enqueues
// every pending evaluation from state.
func (s *Server) enqueueEvals(evals []*structs.Evaluation) {
	for _, e := range evals {
		if e.Status == structs.EvalStatusPending {
			s.broker.Enqueue(e)
		}
	}
}

func (s *Server) now() time.Time { return s.config.Now() }

// events returns the broker of the event stream, fed by this server's FSM
// (every server has one; followers publish what they apply). Subscribers
// come through EventSubscribe, which filters by their ACL.
func (s *Server) events() *stream.Broker { return s.fsm.Events() }
