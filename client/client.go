package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/client/allocrunner"
	"github.com/drover-project/drover/client/allocrunner/taskrunner"
	"github.com/drover-project/drover/client/fingerprint"
	"github.com/drover-project/drover/client/network"
	"github.com/drover-project/drover/client/state"
	"github.com/drover-project/drover/client/taskapi"
	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/drivers/builtin"
	"github.com/drover-project/drover/nomad/structs"
)

var _ allocrunner.StateDB = (*state.DB)(nil)

// Client is a client agent: it registers its node, heartbeats, runs the
// node's allocations and reports their status. Create it with New.
type Client struct {
	acls     aclCache // rights of callers of the /v1/client/* endpoints (acl.go)
	cfg      *Config  // normalized; immutable
	logger   hclog.Logger
	db       *state.DB
	drivers  drivers.Catalog
	rpc      *serverConn
	secretID string // immutable

	nodeMu    sync.Mutex
	node      *structs.Node     // replaced, never mutated; guarded by nodeMu
	hostAttrs map[string]string // immutable after New
	// dynamicMeta is the node metadata set through the API (node_meta.go);
	// guarded by nodeMu.
	dynamicMeta map[string]*string

	// taskAPI serves the tasks' task API sockets; immutable after New.
	taskAPI *taskapi.Server
	// templates is how tasks' templates reach the servers; immutable.
	templates *taskrunner.TemplateConfig

	allocsMu sync.Mutex
	allocs   map[string]*allocEntry // by alloc ID; guarded by allocsMu
	// prevPeers are the previous nodes of allocations not yet started
	// whose ephemeral data migrates from there (migrate.go), by alloc ID;
	// guarded by allocsMu.
	prevPeers map[string]prevPeer
	closing   bool // Shutdown began; guarded by allocsMu

	updates *pendingUpdates
	// services holds the allocations' native catalog registrations
	// until the servers have them (services_sync.go).
	services *serviceSync

	// network builds bridge-mode allocations' namespaces; nil when this
	// host cannot (immutable after New).
	network *network.Manager
	// images feeds the image collector; nil without a Docker driver that
	// offers image GC.
	images *imageLeases
	// ahead holds the pulls ahead of the wave (prefetch.go).
	ahead aheadPulls

	// registered is closed after the first successful registration.
	registered     chan struct{}
	registeredOnce sync.Once
	// reregister (room for one token) asks nodeLoop to register again.
	reregister chan struct{}
	// registrations counts the node's successful registrations.
	registrations atomic.Uint64

	// lastContact is when (unix nanoseconds) the servers last answered a
	// registration or heartbeat; the client's start before that.
	lastContact atomic.Int64

	cancel   context.CancelFunc
	loops    sync.WaitGroup // background loops
	bg       sync.WaitGroup // runner destroys in flight
	shutdown sync.Once
	shutErr  error
}

// New starts a client agent. It loads the node identity from
// <DataDir>/client/state.db (creating and storing one on first start),
// fingerprints the host and drivers, reattaches to the allocations the
// client ran before a restart (tasks left running are recovered, not
// restarted), then starts registering, heartbeating, watching allocations
// and reporting their status in the background. The servers need not be
// reachable for New to succeed.
func New(cfg *Config) (*Client, error) {
	ncfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	for _, dir := range []string{ncfg.StateDir(), ncfg.AllocDir()} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("client: creating %s: %w", dir, err)
		}
	}
	db, err := state.Open(filepath.Join(ncfg.StateDir(), state.FileName))
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	c, err := newClient(ncfg, db)
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	c.restoreAllocs()
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.noteContact(c.cfg.Now())
	loops := []func(context.Context){c.nodeLoop, c.watchAllocs, c.flushLoop, c.serviceLoop, c.driverLoop, c.prefetchLoop, c.disconnectLoop, c.hostVolumeLoop}
	if c.images != nil {
		loops = append(loops, c.imageLeaseLoop, c.images.gc.Run)
		c.kickImages() // the restored runners' leases, before any removal
	}
	for _, loop := range loops {
		c.loops.Add(1)
		go func() {
			defer c.loops.Done()
			loop(ctx)
		}()
	}
	return c, nil
}

// newClient loads the identity and fingerprints the node.
func newClient(cfg *Config, db *state.DB) (*Client, error) {
	id, err := loadIdentity(db)
	if err != nil {
		return nil, err
	}
	logger := cfg.Logger.Named("client")
	catalog := cfg.catalog
	if catalog == nil {
		catalog = builtin.NewCatalog(logger.Named("driver"), cfg.Plugins)
	}
	c := &Client{
		cfg:        cfg,
		logger:     logger,
		db:         db,
		drivers:    catalog,
		rpc:        newServerConn(cfg.Servers, id.SecretID, cfg.TLS, logger.Named("rpc")),
		secretID:   id.SecretID,
		allocs:     map[string]*allocEntry{},
		prevPeers:  map[string]prevPeer{},
		updates:    newPendingUpdates(),
		services:   newServiceSync(),
		registered: make(chan struct{}),
		reregister: make(chan struct{}, 1),
	}
	c.templates = &taskrunner.TemplateConfig{
		Dial:               taskrunner.ServerDialer(cfg.Servers, cfg.TLS),
		FunctionDenylist:   cfg.TemplateFunctionDenylist,
		DisableFileSandbox: cfg.TemplateDisableFileSandbox,
	}
	c.taskAPI = taskapi.New(taskapi.Config{
		ACLEnabled: cfg.ACLEnabled, KnownIdentity: c.knownIdentity, Logger: logger.Named("task_api"),
	})
	host, err := fingerprint.Host(fingerprint.HostConfig{Root: cfg.procRoot, DataDir: cfg.DataDir, Servers: cfg.Servers})
	if err != nil {
		logger.Warn("some host fingerprints are missing", "error", err)
	}
	reserved, _ := reservedResources(cfg.Options) // validated by normalize
	var offer networkOffer
	c.network, offer = newNetworkManager(cfg)
	if !offer.bridge {
		logger.Info("bridge networking is not available", "reason", offer.bridgeWhy)
	}
	host.Resources.Networks = nodeNetworks(offer)
	if host.Resources.NodeNetworks, err = resolveHostNetworks(cfg.HostNetworks, logger); err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	drv := fingerprint.Drivers(context.Background(), c.drivers, cfg.Now())
	c.hostAttrs = host.Attributes
	if c.hostAttrs == nil {
		c.hostAttrs = map[string]string{}
	}
	c.hostAttrs[hostVolumePluginAttr] = HostVolumePluginVersion
	c.node = &structs.Node{
		ID:                    id.ID,
		SecretID:              id.SecretID,
		Name:                  cfg.NodeName,
		Datacenter:            cfg.Datacenter,
		NodeClass:             cfg.NodeClass,
		NodePool:              cfg.NodePool,
		HTTPAddr:              cfg.HTTPAddr,
		Attributes:            fingerprint.MergeAttributes(host.Attributes, drv),
		Meta:                  maps.Clone(cfg.Meta),
		NodeResources:         host.Resources,
		ReservedResources:     reserved,
		Drivers:               drv,
		HostVolumes:           copyHostVolumes(cfg.HostVolumes),
		HostNetworks:          copyHostNetworks(cfg.HostNetworks),
		Status:                structs.NodeStatusReady,
		SchedulingEligibility: structs.NodeSchedulingEligible,
	}
	if c.node.Meta == nil {
		c.node.Meta = map[string]string{}
	}
	if err := c.loadDynamicMeta(); err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	// The node reports the range the scheduler will use.
	c.node.NodeResources.MinDynamicPort = cmp.Or(cfg.MinDynamicPort, structs.DefaultMinDynamicPort)
	c.node.NodeResources.MaxDynamicPort = cmp.Or(cfg.MaxDynamicPort, structs.DefaultMaxDynamicPort)
	c.images = newImageLeases(c.drivers, db, logger)
	logger.Info("client started", "node_id", id.ID, "node_name", cfg.NodeName, "drivers", c.drivers.Names())
	return c, nil
}

// loadIdentity returns the stored node identity, creating one on first
// start.
func loadIdentity(db *state.DB) (*state.NodeIdentity, error) {
	id, err := db.NodeIdentity()
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	if id != nil {
		return id, nil
	}
	id = &state.NodeIdentity{ID: uuid.NewString(), SecretID: uuid.NewString()}
	if err := db.PutNodeIdentity(id); err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return id, nil
}

// restoreAllocs recreates the runners of the allocations in the state
// database and reattaches them to their tasks: every runner is restored
// before any runs, since a replacement may stop its previous allocation.
// Allocations are taken oldest first so that a replacement finds its
// previous allocation's runner. An allocation whose tasks have all finished
// gets no runner: the client remembers it (so the alloc watcher does not
// start it again) and reports its final status once more, in case the
// report was lost with the previous process.
func (c *Client) restoreAllocs() {
	allocs, errs, err := c.db.Allocs()
	if err != nil {
		c.logger.Error("failed to read allocations from the state database", "error", err)
		return
	}
	for _, err := range errs {
		c.logger.Error("skipping an allocation the client cannot restore", "error", err)
	}
	c.forgetOrphans(allocs)
	sort.SliceStable(allocs, func(i, j int) bool { return allocs[i].CreateIndex < allocs[j].CreateIndex })
	c.allocsMu.Lock()
	defer c.allocsMu.Unlock()
	var runners []*allocrunner.AllocRunner
	for _, a := range allocs {
		if a.Job == nil || a.Job.LookupTaskGroup(a.TaskGroup) == nil {
			c.logger.Error("forgetting a stored allocation without its job or group", "alloc_id", a.ID)
			c.forgetAlloc(a.ID)
			continue
		}
		states, err := c.db.TaskStates(a.ID)
		if err != nil {
			c.logger.Error("failed to read task states", "alloc_id", a.ID, "error", err)
		}
		if final, ok := finalStatus(a, states); ok {
			if final.DeploymentStatus, err = allocrunner.FinalHealth(c.db, a, states, c.cfg.Now()); err != nil {
				c.logger.Error("failed to read or record deployment health", "alloc_id", a.ID, "error", err)
			}
			c.allocs[a.ID] = &allocEntry{modifyIndex: a.AllocModifyIndex}
			c.updates.add(final)
			continue
		}
		ar := c.newRunnerLocked(a)
		if ar == nil {
			continue
		}
		c.logger.Info("restoring allocation", "alloc_id", a.ID)
		if err := ar.Restore(); err != nil {
			// Tasks that could not be reattached restart per their policy.
			c.logger.Error("failed to restore some tasks", "alloc_id", a.ID, "error", err)
		}
		runners = append(runners, ar)
	}
	live := map[string]bool{}
	for id, e := range c.allocs {
		if e.runner != nil {
			live[id] = true
		}
	}
	c.cleanupNetworks(live)
	for _, ar := range runners {
		go ar.Run()
	}
}

// forgetOrphans deletes alloc buckets that hold task state but no
// allocation (a runner wrote after its allocation was deleted).
func (c *Client) forgetOrphans(allocs []*structs.Allocation) {
	ids, err := c.db.AllocIDs()
	if err != nil {
		c.logger.Error("failed to list stored allocations", "error", err)
		return
	}
	have := make(map[string]bool, len(allocs))
	for _, a := range allocs {
		have[a.ID] = true
	}
	for _, id := range ids {
		if !have[id] {
			c.forgetAlloc(id)
		}
	}
}

// finalStatus returns the client update of an allocation whose tasks are
// all dead, and false when some task may still run (or never started). It
// leaves DeploymentStatus nil (see allocrunner.FinalHealth).
func finalStatus(a *structs.Allocation, states map[string]*structs.TaskState) (*structs.Allocation, bool) {
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	if tg == nil || len(tg.Tasks) == 0 {
		return nil, false
	}
	for _, t := range tg.Tasks {
		if st := states[t.Name]; st == nil || st.State != taskStateDead {
			return nil, false
		}
	}
	u := &structs.Allocation{ID: a.ID, TaskStates: states}
	u.ClientStatus, u.ClientDescription = allocrunner.ClientStatus(states)
	return u, true
}

// NodeID returns the node's ID, stable across restarts on the same data
// dir.
func (c *Client) NodeID() string {
	c.nodeMu.Lock()
	defer c.nodeMu.Unlock()
	return c.node.ID
}

// Node returns a copy of the node as the client registers it (with its
// SecretID).
func (c *Client) Node() *structs.Node {
	c.nodeMu.Lock()
	defer c.nodeMu.Unlock()
	n := c.node.Copy()
	n.Attributes = maps.Clone(n.Attributes)
	n.Meta = maps.Clone(n.Meta)
	n.HostVolumes = copyHostVolumes(n.HostVolumes)
	n.Drivers = make(map[string]*structs.DriverInfo, len(c.node.Drivers))
	for k, v := range c.node.Drivers {
		d := *v
		d.Attributes = maps.Clone(v.Attributes)
		n.Drivers[k] = &d
	}
	return n
}

// Shutdown stops the client's loops and its alloc runners' supervision;
// tasks keep running, and a client started on the same data dir reattaches
// to them. Pending status updates get one last attempt. It closes the
// state database and is safe to call more than once.
func (c *Client) Shutdown() error {
	c.shutdown.Do(func() {
		c.allocsMu.Lock()
		c.closing = true
		c.allocsMu.Unlock()
		c.cancel()
		c.loops.Wait()

		c.allocsMu.Lock()
		runners := make([]*allocrunner.AllocRunner, 0, len(c.allocs))
		for _, e := range c.allocs {
			if e.runner != nil {
				runners = append(runners, e.runner)
			}
		}
		c.allocsMu.Unlock()
		if c.cfg.StopAllocsOnShutdown {
			// Destroyed runners have returned; the ones still stopping
			// at the bound are told to give up but not waited for: a
			// driver that hangs must not hold the exit.
			for _, ar := range c.stopAllocsForExit(runners) {
				go ar.Shutdown()
			}
			runners = nil
		}
		var wg sync.WaitGroup
		for _, ar := range runners {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ar.Shutdown()
			}()
		}
		wg.Wait()
		c.bg.Wait()

		ctx, cancel := context.WithTimeout(context.Background(), finalFlushTimeout)
		if err := c.flushOnce(ctx); err != nil {
			c.logger.Warn("allocation updates not sent before shutdown", "error", err, "pending", c.updates.len())
		}
		cancel()
		if err := c.db.Close(); err != nil {
			c.shutErr = errors.Join(c.shutErr, err)
		}
		c.logger.Info("client stopped")
	})
	return c.shutErr
}

// taskStateDead is structs.TaskState.State of a task that has finished.
const taskStateDead = "dead"

// Servers returns the addresses of the servers the client talks to.
func (c *Client) Servers() []string { return c.rpc.addrs() }

// SetServers replaces the servers the client talks to (at least one).
func (c *Client) SetServers(addrs []string) error {
	if len(addrs) == 0 {
		return errors.New("at least one server address is required")
	}
	c.rpc.setAddrs(addrs)
	return nil
}

// SetTaskAPIHandler sets the agent's HTTP API that the tasks' task API
// sockets serve (NOMAD_UNIX_ADDR); until it is set they answer 503.
func (c *Client) SetTaskAPIHandler(h http.Handler) { c.taskAPI.SetHandler(h) }

// knownIdentity reports whether token is a workload identity the servers
// signed for one of the client's allocations.
func (c *Client) knownIdentity(token string) bool {
	c.allocsMu.Lock()
	runners := make([]*allocrunner.AllocRunner, 0, len(c.allocs))
	for _, e := range c.allocs {
		if e.runner != nil {
			runners = append(runners, e.runner)
		}
	}
	c.allocsMu.Unlock()
	for _, r := range runners {
		if r.HoldsIdentity(token) {
			return true
		}
	}
	return false
}

// listenTaskAPI opens a task's task API socket (allocrunner.Config.TaskAPI).
func (c *Client) listenTaskAPI(taskDir, secretsDir string) (io.Closer, error) {
	return c.taskAPI.Listen(taskDir, secretsDir)
}
