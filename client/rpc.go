package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/wire"
)

// callTimeout bounds every server call but the blocking alloc query.
const callTimeout = 15 * time.Second

// isStatus reports whether err is a wire.StatusError with code.
func isStatus(err error, code int) bool {
	var se *wire.StatusError
	return errors.As(err, &se) && se.Code == code
}

// serverConn makes the client's internal calls (JSON over HTTP), rotating
// through the servers when one is unreachable or answers 5xx.
type serverConn struct {
	http   *http.Client
	logger hclog.Logger
	scheme string // "http", or "https" with TLS

	mu      sync.Mutex
	servers []string // base URLs; guarded by mu
	cur     int      // index into servers; guarded by mu
	secret  string   // X-Nomad-Token; guarded by mu
}

// newServerConn calls servers over HTTPS with tlsCfg when it is set, plain
// HTTP otherwise.
func newServerConn(servers []string, secret string, tlsCfg *tls.Config, logger hclog.Logger) *serverConn {
	scheme := "http"
	hc := &http.Client{}
	if tlsCfg != nil {
		scheme = "https"
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.Proxy = nil
		tr.TLSClientConfig = tlsCfg
		hc.Transport = tr
	}
	base := make([]string, len(servers))
	for i, s := range servers {
		base[i] = baseURL(scheme, s)
	}
	return &serverConn{http: hc, logger: logger, scheme: scheme, servers: base, secret: secret}
}

// baseURL turns "host:port" into "scheme://host:port"; URLs are kept.
func baseURL(scheme, addr string) string {
	addr = strings.TrimSuffix(addr, "/")
	if strings.Contains(addr, "://") {
		return addr
	}
	return scheme + "://" + addr
}

func (s *serverConn) current() (base, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.servers[s.cur], s.secret
}

// rotate moves to the next server unless another call already did (failed
// is the base URL that failed).
func (s *serverConn) rotate(failed string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.servers[s.cur] == failed {
		s.cur = (s.cur + 1) % len(s.servers)
		s.logger.Debug("switching server", "from", failed, "to", s.servers[s.cur])
	}
}

// call sends method path (with query) and decodes a 2xx JSON answer into
// out (when non-nil). It returns the response headers. Network errors and
// 5xx answers rotate to the next server; the error is returned either way
// and the caller decides when to retry.
func (s *serverConn) call(ctx context.Context, method, path string, query url.Values, body, out any) (http.Header, error) {
	hdr, _, err := s.callFrom(ctx, method, path, query, body, out)
	return hdr, err
}

// callFrom is call that also returns the base URL of the server asked.
func (s *serverConn) callFrom(ctx context.Context, method, path string, query url.Values, body, out any) (http.Header, string, error) {
	base, secret := s.current()
	u := base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := wire.NewRequest(ctx, method, u, secret, body)
	if err != nil {
		return nil, base, fmt.Errorf("%s %s: %w", method, path, err)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			s.rotate(base)
		}
		return nil, base, fmt.Errorf("%s %s: %w", method, u, err)
	}
	defer resp.Body.Close()
	if err := wire.ReadAnswer(resp, out); err != nil {
		if resp.StatusCode >= 500 {
			s.rotate(base)
		}
		return resp.Header, base, fmt.Errorf("%s %s: %w", method, u, err)
	}
	return resp.Header, base, nil
}

func (s *serverConn) register(ctx context.Context, node *api.Node, nets []*structs.NodeNetworkResource, secret, introToken string) (*wire.NodeRegisterResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var out wire.NodeRegisterResponse
	_, err := s.call(ctx, http.MethodPut, wire.RouteNodeRegister, nil, &wire.NodeRegisterRequest{Node: node, NodeNetworks: nets, SecretID: secret, IntroToken: introToken}, &out)
	return &out, err
}

func (s *serverConn) heartbeat(ctx context.Context, nodeID, status string) (*wire.NodeHeartbeatResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var out wire.NodeHeartbeatResponse
	_, err := s.call(ctx, http.MethodPut, wire.NodePath(wire.RouteNodeHeartbeat, nodeID), nil, &wire.NodeHeartbeatRequest{Status: status}, &out)
	return &out, err
}

// nodeAllocs is the blocking query for the node's allocations: it returns
// when the server's index passes index or after wait (at once, with its
// own lower index, from a server behind index). from is the base URL of
// the server asked.
func (s *serverConn) nodeAllocs(ctx context.Context, nodeID string, index uint64, wait time.Duration) (list []*wire.NodeAlloc, newIndex uint64, from string, err error) {
	ctx, cancel := context.WithTimeout(ctx, wait+wait/16+callTimeout)
	defer cancel()
	q := url.Values{"index": {strconv.FormatUint(index, 10)}, "wait": {formatWait(wait)}}
	var out []*wire.NodeAlloc
	hdr, from, err := s.callFrom(ctx, http.MethodGet, wire.NodePath(wire.RouteNodeAllocs, nodeID), q, nil, &out)
	if err != nil {
		return nil, 0, from, err
	}
	for _, na := range out {
		if na == nil {
			continue
		}
		if err := na.DecodeJob(); err != nil {
			return nil, 0, from, fmt.Errorf("node allocs: decoding the job of allocation %s: %w", na.ID, err)
		}
	}
	newIndex, err = strconv.ParseUint(hdr.Get("X-Nomad-Index"), 10, 64)
	if err != nil {
		return nil, 0, from, fmt.Errorf("node allocs: bad X-Nomad-Index %q: %w", hdr.Get("X-Nomad-Index"), err)
	}
	return out, newIndex, from, nil
}

// formatWait renders a blocking query wait as Nomad does ("300s"), in
// milliseconds when it is not whole seconds.
func formatWait(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}

func (s *serverConn) updateAllocs(ctx context.Context, nodeID string, allocs []*api.Allocation) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var out api.WriteMeta
	_, err := s.call(ctx, http.MethodPut, wire.NodePath(wire.RouteNodeAllocs, nodeID), nil, &wire.AllocUpdateRequest{Allocs: allocs}, &out)
	return out.LastIndex, err
}

// addrs returns the servers' addresses as configured ("host:port").
func (s *serverConn) addrs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.servers))
	for i, b := range s.servers {
		out[i] = strings.TrimPrefix(strings.TrimPrefix(b, "http://"), "https://")
	}
	return out
}

// setAddrs replaces the servers; the next call goes to the first.
func (s *serverConn) setAddrs(addrs []string) {
	base := make([]string, len(addrs))
	for i, a := range addrs {
		base[i] = baseURL(s.scheme, a)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.servers, s.cur = base, 0
}
