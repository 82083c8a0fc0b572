package nodesim

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/wire"
)

// callTimeout bounds every call but the blocking alloc query.
const callTimeout = 15 * time.Second

// conn makes the internal calls of every simulated node over one shared
// HTTP transport (idle connections are reused across nodes; each pending
// long poll holds one connection).
type conn struct {
	http *http.Client
	base []string // server base URLs; a node uses base[i % len]
	jobs jobDecoder
}

// fdReserve is the part of the open-file limit left to everything but the
// connections to the servers.
const fdReserve = 256

func newConn(addrs []string, maxIdle int) *conn {
	tr := &http.Transport{
		Proxy:               nil,
		MaxIdleConns:        maxIdle,
		MaxIdleConnsPerHost: maxIdle,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	// A node's allocation query, status update and heartbeat may all be
	// open at once: past the process's open-file limit, new connections
	// fail ("too many open files"). Share the limit among the servers, so
	// that a call waits for a free connection instead.
	if limit := openFileLimit(); limit > fdReserve && len(addrs) > 0 {
		tr.MaxConnsPerHost = (limit - fdReserve) / len(addrs)
	}
	c := &conn{http: &http.Client{Transport: tr}}
	for _, a := range addrs {
		a = strings.TrimSuffix(a, "/")
		if !strings.Contains(a, "://") {
			a = "http://" + a
		}
		c.base = append(c.base, a)
	}
	return c
}

func (c *conn) close() { c.http.CloseIdleConnections() }

// call sends method path with the node's secret and decodes a 2xx answer
// into out (when non-nil); it returns the X-Nomad-Index header.
func (c *conn) call(ctx context.Context, server int, secret, method, path string, query url.Values, body, out any) (uint64, error) {
	u := c.base[server%len(c.base)] + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := wire.NewRequest(ctx, method, u, secret, body)
	if err != nil {
		return 0, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if err := wire.ReadAnswer(resp, out); err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, path, err)
	}
	idx, _ := strconv.ParseUint(resp.Header.Get("X-Nomad-Index"), 10, 64)
	return idx, nil
}

func (c *conn) register(ctx context.Context, server int, n *api.Node, secret string) (*wire.NodeRegisterResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var out wire.NodeRegisterResponse
	_, err := c.call(ctx, server, secret, http.MethodPut, wire.RouteNodeRegister, nil, &wire.NodeRegisterRequest{Node: n, SecretID: secret}, &out)
	return &out, err
}

func (c *conn) heartbeat(ctx context.Context, server int, nodeID, secret string) (*wire.NodeHeartbeatResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var out wire.NodeHeartbeatResponse
	_, err := c.call(ctx, server, secret, http.MethodPut, wire.NodePath(wire.RouteNodeHeartbeat, nodeID), nil, &wire.NodeHeartbeatRequest{Status: "ready"}, &out)
	return &out, err
}

// allocs is the node's blocking allocation query.
func (c *conn) allocs(ctx context.Context, server int, nodeID, secret string, index uint64, wait time.Duration) ([]*api.Allocation, uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, wait+wait/16+callTimeout)
	defer cancel()
	q := url.Values{"index": {strconv.FormatUint(index, 10)}, "wait": {strconv.FormatInt(wait.Milliseconds(), 10) + "ms"}}
	// The jobs are left encoded by the decode (wire.NodeAlloc.Job) and
	// decoded once per distinct encoding by c.jobs.
	var list []*wire.NodeAlloc
	idx, err := c.call(ctx, server, secret, http.MethodGet, wire.NodePath(wire.RouteNodeAllocs, nodeID), q, nil, &list)
	if err != nil {
		return nil, idx, err
	}
	out := make([]*api.Allocation, len(list))
	for i, w := range list {
		if w.Allocation == nil {
			w.Allocation = new(api.Allocation)
		}
		if w.Allocation.Job, err = c.jobs.decode(w.Job); err != nil {
			return nil, idx, fmt.Errorf("allocation %s: decoding its job: %w", w.ID, err)
		}
		out[i] = w.Allocation
	}
	return out, idx, nil
}

func (c *conn) updateAllocs(ctx context.Context, server int, nodeID, secret string, allocs []*api.Allocation) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := c.call(ctx, server, secret, http.MethodPut, wire.NodePath(wire.RouteNodeAllocs, nodeID), nil, &wire.AllocUpdateRequest{Allocs: allocs}, nil)
	return err
}
