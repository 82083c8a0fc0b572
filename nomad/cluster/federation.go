package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httputil"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/nomad/cluster/wan"
)

// Federation of regions: every server exchanges its membership table with
// every server it knows (its raft peers, the servers of other regions, and
// the retry_join addresses it has not reached yet) once per GossipInterval.
// A request for another region goes to one of that region's alive servers.

const (
	// wanPath is the membership exchange, served on the rpc port only.
	wanPath    = "/v1/internal/cluster/wan"
	maxWANBody = 1 << 20

	// msgNoRegionPath is the answer to a request for a region with no
	// known alive server (Nomad's wording).
	msgNoRegionPath = "No path to region"
)

// RegionForwardedHeader carries the region a request was forwarded from.
// A server never forwards such a request to another region again.
const RegionForwardedHeader = "X-Drover-Forwarded-Region"

// WANExchange is the body of PUT /v1/internal/cluster/wan and of its reply:
// the sender's member name and its table.
type WANExchange struct {
	From    string
	Members []wan.Member
}

// newTable is this server's membership table, holding itself.
func (c *Cluster) newTable(now time.Time) *wan.Table {
	self := wan.Member{
		ID: c.cfg.NodeID, Region: c.cfg.region(), Datacenter: c.cfg.Datacenter,
		Addr: c.advertise, Build: c.cfg.Build, Incarnation: uint64(now.UnixNano()),
	}
	return wan.New(self, c.cfg.WAN, now)
}

// Region is this server's region.
func (c *Cluster) Region() string { return c.cfg.region() }

// Regions lists, sorted, this server's region and every region with an
// alive server.
func (c *Cluster) Regions() []string { return c.wan.Regions() }

// WANMembers lists every server of every region this server knows, with its
// view of each one, sorted by region then ID.
func (c *Cluster) WANMembers() []wan.View { return c.wan.Members() }

// ForceLeaveMember marks the server name ("<id>.<region>") as left in the
// membership table; the leave spreads to the other servers. It reports
// whether name was a member other than this server.
func (c *Cluster) ForceLeaveMember(name string) bool {
	ok := c.wan.Leave(name, time.Now())
	if ok {
		c.logger.Info("member forced to leave", "member", name)
	}
	return ok
}

func (c *Cluster) handleWAN(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut && r.Method != http.MethodPost {
		writeText(w, http.StatusMethodNotAllowed, "Invalid method")
		return
	}
	var req WANExchange
	if err := json.NewDecoder(io.LimitReader(r.Body, maxWANBody)).Decode(&req); err != nil {
		writeText(w, http.StatusBadRequest, "invalid membership exchange: "+err.Error())
		return
	}
	if req.From == "" {
		writeText(w, http.StatusBadRequest, "invalid membership exchange: From is required")
		return
	}
	now := time.Now()
	c.logChanges(c.wan.Merge(req.Members, now))
	c.logChange(c.wan.Contacted(req.From, true, now))
	writeJSON(w, http.StatusOK, c.wanExchange())
}

func (c *Cluster) wanExchange() WANExchange {
	return WANExchange{From: c.wan.Self().Name(), Members: c.wan.Gossip()}
}

// gossipWith exchanges tables with the server at addr and records the
// outcome against name (the member expected there; "" for an address not
// known yet).
func (c *Cluster) gossipWith(ctx context.Context, addr, name string) error {
	reply, err := c.exchange(ctx, addr)
	now := time.Now()
	if err != nil {
		if name != "" {
			c.logChange(c.wan.Contacted(name, false, now))
		}
		return err
	}
	c.logChanges(c.wan.Merge(reply.Members, now))
	c.logChange(c.wan.Contacted(reply.From, true, now))
	return nil
}

func (c *Cluster) exchange(ctx context.Context, addr string) (WANExchange, error) {
	ctx, cancel := context.WithTimeout(ctx, discoverTimeout)
	defer cancel()
	var reply WANExchange
	body, err := json.Marshal(c.wanExchange())
	if err != nil {
		return reply, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+addr+wanPath, bytes.NewReader(body))
	if err != nil {
		return reply, err
	}
	req.Header.Set("Content-Type", "application/json")
	if err := c.doJSON(req, &reply); err != nil {
		return reply, err
	}
	return reply, nil
}

// runWAN gossips every GossipInterval until Shutdown.
func (c *Cluster) runWAN() {
	defer c.wg.Done()
	saved := c.loadWANPeers()
	c.wanSaved = &saved
	seeds := make([]string, 0, len(c.cfg.RetryJoin)+len(saved))
	for _, a := range c.cfg.RetryJoin {
		seeds = append(seeds, normalizeJoinAddr(a))
	}
	for _, a := range saved {
		if !slices.Contains(seeds, a) {
			seeds = append(seeds, a)
		}
	}
	tick := time.NewTicker(c.cfg.gossipInterval())
	defer tick.Stop()
	for {
		seeds = c.gossipRound(seeds)
		select {
		case <-c.ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// gossipTarget is one exchange of a round.
type gossipTarget struct {
	addr, name string
	seed       bool
}

// gossipRound exchanges tables with every member, every raft peer and every
// seed not known as a member yet, concurrently, then reaps and saves the
// addresses of the other regions' servers. It returns the seeds still to
// reach.
func (c *Cluster) gossipRound(seeds []string) []string {
	seeds = slices.DeleteFunc(seeds, c.wan.HasAddr)
	var targets []gossipTarget
	seen := map[string]bool{c.advertise: true}
	add := func(t gossipTarget) {
		if !seen[t.addr] {
			seen[t.addr] = true
			targets = append(targets, t)
		}
	}
	for _, m := range c.wan.Targets() {
		add(gossipTarget{addr: m.Addr, name: m.Name()})
	}
	for _, p := range c.Peers() {
		add(gossipTarget{addr: string(p.Address)})
	}
	for _, s := range seeds {
		add(gossipTarget{addr: s, seed: true})
	}
	var (
		mu      sync.Mutex
		reached = map[string]bool{}
		wg      sync.WaitGroup
	)
	for _, t := range targets {
		wg.Go(func() {
			if err := c.gossipWith(c.ctx, t.addr, t.name); err != nil {
				c.logger.Debug("membership exchange failed", "address", t.addr, "member", t.name, "error", err)
				return
			}
			if t.seed {
				mu.Lock()
				reached[t.addr] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, name := range c.wan.Reap(time.Now()) {
		c.logger.Info("member reaped", "member", name)
	}
	c.saveWANPeers(remoteAddrs(c.wan.Members(), c.cfg.region()))
	return slices.DeleteFunc(seeds, func(s string) bool { return reached[s] })
}

func (c *Cluster) logChanges(changes []wan.Change) {
	for _, ch := range changes {
		c.logChange(ch, true)
	}
}

func (c *Cluster) logChange(ch wan.Change, changed bool) {
	if !changed {
		return
	}
	switch ch.Status {
	case wan.StatusFailed:
		c.logger.Warn("member failed", "member", ch.Name)
	default:
		c.logger.Info("member "+string(ch.Status), "member", ch.Name)
	}
}

// federate makes this server and the server at addr (of another region)
// know each other and their tables.
func (c *Cluster) federate(addr string, info SelfInfo) error {
	if err := c.gossipWith(c.ctx, addr, ""); err != nil {
		return err
	}
	c.logger.Info("federated with region", "region", info.Region, "server", info.ID, "address", addr)
	return nil
}

// ForwardToRegion proxies r to a server of region when region is neither
// empty nor this server's, copying the response to w, and returns true. It
// returns false when r is for this region: the caller handles it.
//
// The server is picked at random among the region's alive servers; a
// request without a body moves on to the next one when a server cannot be
// reached. Without an alive server the answer is 500 "No path to region",
// as it is for a request already forwarded from another region.
func (c *Cluster) ForwardToRegion(w http.ResponseWriter, r *http.Request, region string) bool {
	if region == "" || region == c.cfg.region() {
		return false
	}
	routes := c.wan.Route(region)
	if len(routes) == 0 || r.Header.Get(RegionForwardedHeader) != "" {
		writeText(w, http.StatusInternalServerError, msgNoRegionPath)
		return true
	}
	start := rand.N(len(routes))
	mark := func(h http.Header) {
		h.Del(ForwardedHeader)
		h.Set(RegionForwardedHeader, c.cfg.region())
	}
	if r.Header.Get("Upgrade") != "" {
		c.forwardUpgrade(w, r, routes[start].Addr, mark)
		return true
	}
	retry := r.ContentLength == 0
	var err error
	for i := range routes {
		m := routes[(start+i)%len(routes)]
		var resp *http.Response
		resp, err = c.send(r, m.Addr, mark)
		if err == nil {
			c.relay(w, r, resp)
			return true
		}
		if r.Context().Err() != nil {
			return true // client went away
		}
		c.logger.Warn("forwarding to region failed", "region", region, "server", m.Name(), "path", r.URL.Path, "error", err)
		c.logChange(c.wan.Contacted(m.Name(), false, time.Now()))
		if !retry {
			break
		}
	}
	writeText(w, http.StatusInternalServerError, "rpc error: "+err.Error())
	return true
}

// forwardUpgrade proxies a request that upgrades its connection (a
// websocket, such as alloc exec's) to the server at addr, then copies bytes
// both ways until either side closes.
func (c *Cluster) forwardUpgrade(w http.ResponseWriter, r *http.Request, addr string, mark func(http.Header)) {
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", addr
			mark(pr.Out.Header)
		},
		Transport:     c.client.Transport,
		FlushInterval: -1,
		ErrorLog:      c.logger.Named("region-proxy").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			c.logger.Warn("forwarding an upgrade to another region failed", "address", addr, "path", r.URL.Path, "error", err)
			writeText(w, http.StatusInternalServerError, "rpc error: "+err.Error())
		},
	}
	rp.ServeHTTP(w, r)
}
