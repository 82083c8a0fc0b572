package nodesim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/wire"
)

// callTimeout bounds every call but the blocking alloc query.
const callTimeout = 15 * time.Second

// statusError is a server's non-2xx answer.
type statusError struct {
	code int
	msg  string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("server answered %d: %s", e.code, e.msg)
}

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
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(raw)
	}
	u := c.base[server%len(c.base)] + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-Nomad-Token", secret)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return 0, &statusError{code: resp.StatusCode, msg: strings.TrimSpace(string(msg))}
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return 0, fmt.Errorf("%s %s: decoding answer: %w", method, path, err)
		}
	} else {
		_, _ = io.Copy(io.Discard, resp.Body)
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

// jobDecoder decodes the jobs of allocations, once per distinct encoding:
// the nodes of a fleet receive the same job version thousands of times,
// and the simulator runs them all in one process beside the servers it
// measures, so decoding each copy made its own CPU a part of what it
// measured. The decoded jobs are shared: nodes only read them.
type jobDecoder struct {
	mu   sync.Mutex
	byJS map[string]*api.Job // by the job's JSON
}

// jobDecoderSize bounds the jobs kept (a few versions of a few jobs are
// rolled out at once); past it the cache starts over.
const jobDecoderSize = 64

func (d *jobDecoder) decode(raw json.RawMessage) (*api.Job, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	d.mu.Lock()
	job, ok := d.byJS[string(raw)]
	d.mu.Unlock()
	if ok {
		return job, nil
	}
	job = new(api.Job)
	if err := json.Unmarshal(raw, job); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.byJS == nil || len(d.byJS) >= jobDecoderSize {
		d.byJS = map[string]*api.Job{}
	}
	d.byJS[string(raw)] = job
	return job, nil
}

func (c *conn) updateAllocs(ctx context.Context, server int, nodeID, secret string, allocs []*api.Allocation) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := c.call(ctx, server, secret, http.MethodPut, wire.NodePath(wire.RouteNodeAllocs, nodeID), nil, &wire.AllocUpdateRequest{Allocs: allocs}, nil)
	return err
}
