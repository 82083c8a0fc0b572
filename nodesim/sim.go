package nodesim

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/drivers/mock"
	"github.com/drover-project/drover/version"
)

// Config describes the simulated fleet.
type Config struct {
	// Servers are the servers' HTTP addresses ("http://host:port" or
	// "host:port"); node i starts with server i mod len and moves on to
	// the next when one fails.
	Servers    []string
	Nodes      int
	Datacenter string // default "dc1"
	NodePool   string // default "default"
	NodeClass  string
	NamePrefix string            // node names are <prefix><i>; default "sim-"
	Attributes map[string]string // added to (and overriding) the defaults
	Meta       map[string]string
	// HeartbeatJitter is the fraction of half the TTL taken off a
	// heartbeat's delay at random (the client agent uses 0.2).
	HeartbeatJitter float64
	// Grace is what a heartbeat may be late, beyond the TTL, before the
	// simulator counts it as missed (the servers' heartbeat_grace).
	Grace time.Duration
	// UpdateInterval coalesces a node's status updates into one call
	// (the client agent uses 200ms).
	UpdateInterval time.Duration
	// AllocWait is the long poll's wait (the client agent uses 5m).
	AllocWait time.Duration
	// RegisterParallel bounds concurrent registrations at start.
	RegisterParallel int
	// CPU and MemoryMB are what each node offers.
	CPU      int
	MemoryMB int
	Logger   hclog.Logger
}

func (c *Config) defaults() {
	if c.Datacenter == "" {
		c.Datacenter = "dc1"
	}
	if c.NodePool == "" {
		c.NodePool = "default"
	}
	if c.NamePrefix == "" {
		c.NamePrefix = "sim-"
	}
	if c.HeartbeatJitter <= 0 || c.HeartbeatJitter > 1 {
		c.HeartbeatJitter = 0.2
	}
	if c.Grace <= 0 {
		c.Grace = 10 * time.Second
	}
	if c.UpdateInterval <= 0 {
		c.UpdateInterval = 200 * time.Millisecond
	}
	if c.AllocWait <= 0 {
		c.AllocWait = 5 * time.Minute
	}
	if c.RegisterParallel <= 0 {
		c.RegisterParallel = 64
	}
	if c.CPU <= 0 {
		c.CPU = 4000
	}
	if c.MemoryMB <= 0 {
		c.MemoryMB = 8192
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
}

// Sim is a running fleet of simulated nodes.
type Sim struct {
	cfg    Config
	logger hclog.Logger
	conn   *conn
	nodes  []*node
	stats  stats
}

// New builds the fleet (nothing is sent until Run).
func New(cfg Config) (*Sim, error) {
	cfg.defaults()
	if cfg.Nodes <= 0 {
		return nil, fmt.Errorf("nodes: must be at least 1")
	}
	if len(cfg.Servers) == 0 {
		return nil, fmt.Errorf("address: at least one server is required")
	}
	s := &Sim{cfg: cfg, logger: cfg.Logger}
	// Every node may have a long poll and an update or heartbeat open at
	// once: keep that many connections for reuse, or a fleet-wide burst
	// closes thousands of them and the TIME_WAIT sockets exhaust the
	// local ports (heartbeats and updates then fail to connect).
	s.conn = newConn(cfg.Servers, 2*cfg.Nodes+64)
	for i := range cfg.Nodes {
		id := uuid.NewString()
		n := &node{
			sim: s, id: id, secret: uuid.NewString(), server: i,
			registered: make(chan struct{}),
			allocs:     map[string]*simAlloc{},
			pending:    map[string]*api.Allocation{},
		}
		n.api = s.nodeAPI(id, fmt.Sprintf("%s%d", cfg.NamePrefix, i))
		s.nodes = append(s.nodes, n)
	}
	return s, nil
}

// nodeAPI is what a simulated node registers: the mock driver, healthy,
// and the fingerprint attributes jobs usually constrain on.
func (s *Sim) nodeAPI(id, name string) *api.Node {
	attrs := map[string]string{
		"kernel.name": "linux", "os.name": "simulated", "cpu.arch": runtime.GOARCH,
		"unique.hostname": name, "unique.network.ip-address": "127.0.0.1",
		"driver." + mock.Name: "1", "nodesim": "1",
		"nomad.version": version.NomadAPIVersion, "drover.version": version.Version,
		"cpu.numcores": "4", "memory.totalbytes": fmt.Sprint(int64(s.cfg.MemoryMB) << 20),
	}
	maps.Copy(attrs, s.cfg.Attributes)
	return &api.Node{
		ID: id, Name: name, Datacenter: s.cfg.Datacenter, NodePool: s.cfg.NodePool, NodeClass: s.cfg.NodeClass,
		Status: "ready", SchedulingEligibility: "eligible",
		Attributes: attrs, Meta: maps.Clone(s.cfg.Meta),
		Drivers: map[string]*api.DriverInfo{mock.Name: {Detected: true, Healthy: true, HealthDescription: "Healthy", UpdateTime: time.Now()}},
		NodeResources: &api.NodeResources{
			Cpu:            api.NodeCpuResources{CpuShares: int64(s.cfg.CPU), TotalCpuCores: 4},
			Memory:         api.NodeMemoryResources{MemoryMB: int64(s.cfg.MemoryMB)},
			Disk:           api.NodeDiskResources{DiskMB: 100000},
			MinDynamicPort: 20000, MaxDynamicPort: 32000,
		},
		ReservedResources: &api.NodeReservedResources{},
	}
}

func (s *Sim) ttlOr(ttl time.Duration) time.Duration {
	if ttl <= 0 {
		return 10 * time.Second
	}
	return ttl
}

// NodeIDs returns the simulated nodes' IDs, in name order.
func (s *Sim) NodeIDs() []string {
	out := make([]string, len(s.nodes))
	for i, n := range s.nodes {
		out[i] = n.id
	}
	return out
}

// Run registers every node (at most RegisterParallel at once), then keeps
// heartbeating, polling and running allocations until ctx ends. It returns
// when every node's goroutines have stopped; the nodes are not
// deregistered, so the servers mark them down when their TTL runs out.
func (s *Sim) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	sem := make(chan struct{}, s.cfg.RegisterParallel)
	for _, n := range s.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.pollLoop(ctx)
		}()
	}
	for _, n := range s.nodes {
		select {
		case <-ctx.Done():
		case sem <- struct{}{}:
			go func() {
				defer func() { <-sem }()
				n.registerLoop(ctx)
			}()
		}
	}
	<-ctx.Done()
	wg.Wait()
	for _, n := range s.nodes {
		n.mu.Lock()
		n.stopped = true
		if n.wake != nil {
			n.wake.Stop()
		}
		n.mu.Unlock()
	}
	s.conn.close()
	return nil
}

// WaitRegistered blocks until every node registered once, or ctx ends.
func (s *Sim) WaitRegistered(ctx context.Context) error {
	for _, n := range s.nodes {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-n.registered:
		}
	}
	return nil
}

// Stats is a snapshot of the simulator's counters.
type Stats struct {
	Registered      int64
	Heartbeats      int64
	HeartbeatErrors int64
	// Missed counts heartbeats that arrived later than TTL + grace after
	// the previous one: the servers may have marked the node down.
	Missed       int64
	Updates      int64 // successful status update calls
	UpdateErrors int64
	// HeartbeatP50 and HeartbeatP99 are round-trip latencies of the
	// heartbeats since the last ResetLatencies.
	HeartbeatP50, HeartbeatP99 time.Duration
	Running                    int // allocations whose tasks run now
}

// Stats returns the counters now.
func (s *Sim) Stats() Stats {
	st := Stats{
		Registered: s.stats.registered.Load(), HeartbeatErrors: s.stats.heartbeatErrors.Load(),
		Missed: s.stats.missed.Load(), Updates: s.stats.updates.Load(), UpdateErrors: s.stats.updateErrors.Load(),
	}
	s.stats.mu.Lock()
	lat := slices.Clone(s.stats.lat)
	st.Heartbeats = s.stats.beats
	s.stats.mu.Unlock()
	slices.Sort(lat)
	if len(lat) > 0 {
		st.HeartbeatP50 = lat[len(lat)/2]
		st.HeartbeatP99 = lat[min(len(lat)-1, len(lat)*99/100)]
	}
	now := time.Now()
	for _, n := range s.nodes {
		n.mu.Lock()
		for _, a := range n.allocs {
			if !a.remembered {
				if rep, _ := a.report(now); rep.ClientStatus == "running" {
					st.Running++
				}
			}
		}
		n.mu.Unlock()
	}
	return st
}

// ResetLatencies drops the recorded heartbeat latencies.
func (s *Sim) ResetLatencies() {
	s.stats.mu.Lock()
	s.stats.lat = nil
	s.stats.mu.Unlock()
}

// stats are the simulator's counters.
type stats struct {
	registered, heartbeatErrors, missed, updates, updateErrors atomic.Int64

	mu    sync.Mutex
	beats int64
	lat   []time.Duration // bounded: the newest maxLatencies
}

const maxLatencies = 200_000

func (s *stats) heartbeat(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.beats++
	if len(s.lat) >= maxLatencies {
		s.lat = s.lat[len(s.lat)/2:]
	}
	s.lat = append(s.lat, d)
}
