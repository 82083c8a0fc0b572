package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Internal server-to-server endpoints, served on the rpc port only.
const (
	selfPath = "/v1/internal/cluster/self"
	joinPath = "/v1/internal/cluster/join"
)

const (
	discoverTimeout = 2 * time.Second
	joinTimeout     = 10 * time.Second
	maxJoinBody     = 64 << 10
)

// SelfInfo is the body of GET /v1/internal/cluster/self.
type SelfInfo struct {
	ID              string
	Address         string
	Region          string
	Datacenter      string
	BootstrapExpect int
	HasLeader       bool
	// Raft progress, for the leader's view of server health.
	Term              uint64
	AppliedIndex      uint64
	LastContactMillis int64 // since the server last heard from the leader (0 on the leader)
}

// JoinRequest is the body of PUT /v1/internal/cluster/join.
type JoinRequest struct {
	ID      string
	Address string
}

// JoinResponse is the reply to a successful join.
type JoinResponse struct {
	Index uint64
}

// peerHandler serves the internal cluster endpoints and delegates the rest.
func (c *Cluster) peerHandler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case selfPath:
			c.handleSelf(w, r)
		case joinPath:
			c.handleJoin(w, r)
		case wanPath:
			c.handleWAN(w, r)
		default:
			if next == nil {
				http.NotFound(w, r)
				return
			}
			next.ServeHTTP(w, r)
		}
	})
}

func (c *Cluster) selfInfo() SelfInfo {
	_, leader := c.raft.LeaderWithID()
	return SelfInfo{
		ID:                c.cfg.NodeID,
		Address:           c.advertise,
		Region:            c.cfg.region(),
		Datacenter:        c.cfg.Datacenter,
		BootstrapExpect:   c.cfg.BootstrapExpect,
		HasLeader:         leader != "",
		Term:              c.raft.CurrentTerm(),
		AppliedIndex:      c.raft.AppliedIndex(),
		LastContactMillis: c.LastContact().Milliseconds(),
	}
}

func (c *Cluster) handleSelf(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeText(w, http.StatusMethodNotAllowed, "Invalid method")
		return
	}
	writeJSON(w, http.StatusOK, c.selfInfo())
}

func (c *Cluster) handleJoin(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut && r.Method != http.MethodPost {
		writeText(w, http.StatusMethodNotAllowed, "Invalid method")
		return
	}
	if c.ForwardToLeader(w, r) {
		return
	}
	var req JoinRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxJoinBody)).Decode(&req); err != nil {
		writeText(w, http.StatusBadRequest, "invalid join request: "+err.Error())
		return
	}
	var problems []string
	if req.ID == "" {
		problems = append(problems, "ID is required")
	}
	if req.Address == "" {
		problems = append(problems, "Address is required")
	}
	if len(problems) > 0 {
		writeText(w, http.StatusBadRequest, "invalid join request: "+strings.Join(problems, "; "))
		return
	}
	index, err := c.addVoter(req)
	if err != nil {
		writeText(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, JoinResponse{Index: index})
}

// addVoter adds req as a voter unless it already is one at that address.
func (c *Cluster) addVoter(req JoinRequest) (uint64, error) {
	f := c.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return 0, raftErr("get configuration", err)
	}
	for _, s := range f.Configuration().Servers {
		if string(s.ID) == req.ID && string(s.Address) == req.Address && s.Suffrage == raft.Voter {
			return f.Index(), nil
		}
	}
	c.logger.Info("adding voter", "id", req.ID, "address", req.Address)
	af := c.raft.AddVoter(raft.ServerID(req.ID), raft.ServerAddress(req.Address), 0, joinTimeout)
	if err := af.Error(); err != nil {
		return 0, raftErr("add voter", err)
	}
	return af.Index(), nil
}

// runJoin retries discovery, bootstrap and join until this server is in a
// configuration with a known leader, or Shutdown.
func (c *Cluster) runJoin() {
	defer c.wg.Done()
	interval := c.cfg.retryInterval()
	bootstrapped := false
	for {
		if c.joined() {
			c.logger.Info("cluster membership established")
			return
		}
		c.joinAttempt(&bootstrapped)
		// Uniform in [0.75, 1.25) × interval.
		wait := interval*3/4 + rand.N(interval/2+1)
		select {
		case <-c.ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// joined reports whether a leader is known and this server is in the
// latest configuration.
func (c *Cluster) joined() bool {
	if _, leader := c.raft.LeaderWithID(); leader == "" {
		return false
	}
	return slices.ContainsFunc(c.Peers(), func(s raft.Server) bool {
		return string(s.ID) == c.cfg.NodeID
	})
}

// joinAttempt makes one round of discovery, then joins a peer that has a
// leader or, failing that, bootstraps once enough servers are known.
func (c *Cluster) joinAttempt(bootstrapped *bool) {
	peers := c.discover()
	for _, p := range peers {
		if !p.HasLeader {
			continue
		}
		if err := c.requestJoin(p.Address); err != nil {
			c.logger.Warn("join request failed", "peer", p.ID, "address", p.Address, "error", err)
			continue
		}
		c.logger.Info("joined cluster", "via", p.ID, "address", p.Address)
		return
	}
	if *bootstrapped || c.cfg.BootstrapExpect < 2 {
		return
	}
	servers := c.bootstrapServers(peers)
	if len(servers) < c.cfg.BootstrapExpect {
		c.logger.Debug("waiting for servers before bootstrap", "known", len(servers), "expect", c.cfg.BootstrapExpect)
		return
	}
	err := c.raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error()
	switch {
	case err == nil:
		c.logger.Info("bootstrapped cluster", "servers", serverIDs(servers))
	case errors.Is(err, raft.ErrCantBootstrap):
		c.logger.Info("raft state already present, not bootstrapping")
	default:
		c.logger.Error("bootstrap failed", "error", err)
		return
	}
	*bootstrapped = true
}

// bootstrapServers is self plus every discovered server expecting the same
// cluster size, sorted by ID so that all servers compute the same set.
func (c *Cluster) bootstrapServers(peers []SelfInfo) []raft.Server {
	servers := []raft.Server{c.selfServer()}
	for _, p := range peers {
		if p.BootstrapExpect != c.cfg.BootstrapExpect {
			c.logger.Warn("peer has a different bootstrap_expect, ignoring it for bootstrap",
				"peer", p.ID, "peer_expect", p.BootstrapExpect, "expect", c.cfg.BootstrapExpect)
			continue
		}
		servers = append(servers, raft.Server{
			Suffrage: raft.Voter,
			ID:       raft.ServerID(p.ID),
			Address:  raft.ServerAddress(p.Address),
		})
	}
	slices.SortFunc(servers, func(a, b raft.Server) int { return strings.Compare(string(a.ID), string(b.ID)) })
	return servers
}

// discover queries every RetryJoin address concurrently and returns the
// distinct other servers that answered, sorted by ID.
func (c *Cluster) discover() []SelfInfo {
	var (
		mu    sync.Mutex
		found = map[string]SelfInfo{}
		wg    sync.WaitGroup
	)
	for _, addr := range c.cfg.RetryJoin {
		addr = normalizeJoinAddr(addr)
		wg.Go(func() {
			info, err := c.fetchSelf(addr)
			if err != nil {
				c.logger.Debug("discovery failed", "address", addr, "error", err)
				return
			}
			if !c.sameRegion(info) {
				c.logger.Debug("discovered a server of another region, not a raft peer", "address", addr, "region", info.Region)
				return
			}
			if info.ID == c.cfg.NodeID {
				if info.Address != c.advertise {
					c.logger.Error("another server uses this node ID", "id", info.ID, "address", info.Address)
				}
				return
			}
			mu.Lock()
			found[info.ID] = info
			mu.Unlock()
		})
	}
	wg.Wait()
	out := make([]SelfInfo, 0, len(found))
	for _, info := range found {
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b SelfInfo) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func (c *Cluster) fetchSelf(addr string) (SelfInfo, error) {
	ctx, cancel := context.WithTimeout(c.ctx, discoverTimeout)
	defer cancel()
	var info SelfInfo
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+selfPath, nil)
	if err != nil {
		return info, err
	}
	if err := c.doJSON(req, &info); err != nil {
		return info, err
	}
	if info.ID == "" || info.Address == "" {
		return info, fmt.Errorf("incomplete self info from %s", addr)
	}
	return info, nil
}

func (c *Cluster) requestJoin(addr string) error {
	ctx, cancel := context.WithTimeout(c.ctx, joinTimeout+discoverTimeout)
	defer cancel()
	body, err := json.Marshal(JoinRequest{ID: c.cfg.NodeID, Address: c.advertise})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+addr+joinPath, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	var resp JoinResponse
	return c.doJSON(req, &resp)
}

// doJSON sends req over the peer client and decodes a 200 JSON reply.
func (c *Cluster) doJSON(req *http.Request, out any) error {
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%s %s: HTTP %d: %s", req.Method, req.URL.Path, resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func serverIDs(servers []raft.Server) []string {
	ids := make([]string, len(servers))
	for i, s := range servers {
		ids[i] = string(s.ID)
	}
	return ids
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// writeText writes msg verbatim (no trailing newline), as Nomad does.
func writeText(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, msg)
}

// sameRegion reports whether the server info describes is of this
// server's region (a server that names no region is).
func (c *Cluster) sameRegion(info SelfInfo) bool {
	return info.Region == "" || info.Region == c.cfg.region()
}

// Join makes the server at addr (its rpc address) and this one members of
// one cluster: when this server's cluster has a leader, the leader adds
// the other server as a voter (it must not lead a cluster of its own);
// otherwise this server asks to join the other's cluster. A server of
// another region is not added to raft: the two regions federate (each
// learns the other's servers). It returns the other server's ID.
func (c *Cluster) Join(addr string) (string, error) {
	addr = normalizeJoinAddr(addr)
	info, err := c.fetchSelf(addr)
	if err != nil {
		return "", fmt.Errorf("failed to reach server at %s: %w", addr, err)
	}
	if !c.sameRegion(info) {
		if err := c.federate(addr, info); err != nil {
			return "", fmt.Errorf("failed to federate with server %s of region %s at %s: %w", info.ID, info.Region, addr, err)
		}
		return info.ID, nil
	}
	if info.ID == c.cfg.NodeID {
		return info.ID, nil
	}
	if slices.ContainsFunc(c.Peers(), func(s raft.Server) bool { return string(s.ID) == info.ID }) {
		return info.ID, nil
	}
	leaderAddr, leaderID := c.raft.LeaderWithID()
	switch {
	case leaderID != "" && info.HasLeader:
		return "", fmt.Errorf("server %s at %s already belongs to a cluster with a leader", info.ID, addr)
	case leaderID != "":
		if c.IsLeader() {
			_, err = c.addVoter(JoinRequest{ID: info.ID, Address: info.Address})
		} else {
			err = c.askToAdd(string(leaderAddr), JoinRequest{ID: info.ID, Address: info.Address})
		}
	case info.HasLeader:
		err = c.requestJoin(info.Address)
	default:
		err = fmt.Errorf("neither this server nor %s at %s has a leader", info.ID, addr)
	}
	if err != nil {
		return "", err
	}
	return info.ID, nil
}

// askToAdd asks the leader at leaderAddr to add req as a voter.
func (c *Cluster) askToAdd(leaderAddr string, req JoinRequest) error {
	ctx, cancel := context.WithTimeout(c.ctx, joinTimeout+discoverTimeout)
	defer cancel()
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+leaderAddr+joinPath, bytes.NewReader(body))
	if err != nil {
		return err
	}
	r.Header.Set("Content-Type", "application/json")
	var resp JoinResponse
	return c.doJSON(r, &resp)
}

// Alive reports whether the server at addr (its rpc address) answers.
func (c *Cluster) Alive(ctx context.Context, addr string) bool {
	_, err := c.Probe(ctx, addr)
	return err == nil
}

// Probe asks the server at addr (its rpc address) about itself.
func (c *Cluster) Probe(ctx context.Context, addr string) (SelfInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, discoverTimeout)
	defer cancel()
	var info SelfInfo
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+selfPath, nil)
	if err != nil {
		return info, err
	}
	return info, c.doJSON(req, &info)
}

// SelfInfo describes this server as Probe reports it.
func (c *Cluster) SelfInfo() SelfInfo { return c.selfInfo() }

// ServeAlso makes ln a second entrance to the rpc port (the agent's serf
// port): its connections speak the rpc port's protocols. It returns when ln
// is closed.
func (c *Cluster) ServeAlso(ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				c.logger.Warn("second rpc listener stopped", "address", ln.Addr(), "error", err)
			}
			return
		}
		go c.mux.route(conn)
	}
}
