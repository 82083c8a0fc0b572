package cluster

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"time"
)

// ForwardedHeader marks a request forwarded by a follower. A server never
// forwards a request that carries it.
const ForwardedHeader = "X-Drover-Forwarded"

const (
	// Error texts returned to clients; "No cluster leader" is Nomad's.
	msgNoLeader     = "No cluster leader"
	msgForwardLoop  = "rpc error: no leader / forwarding loop"
	leaderPollEvery = 50 * time.Millisecond
)

// hopHeaders are connection-scoped and never copied by the proxy.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// ForwardToLeader proxies r to the leader when this server is not the
// leader, copying the leader's response to w, and returns true. It returns
// false when this server is the leader: the caller handles r locally.
//
// Without a known leader it waits up to 5s for one, then replies 500
// "No cluster leader". A request already forwarded once is not forwarded
// again (500).
func (c *Cluster) ForwardToLeader(w http.ResponseWriter, r *http.Request) bool {
	if c.IsLeader() {
		return false
	}
	if r.Header.Get(ForwardedHeader) != "" {
		writeText(w, http.StatusInternalServerError, msgForwardLoop)
		return true
	}
	addr, self, ok := c.waitForLeader(r.Context())
	switch {
	case self:
		return false
	case !ok:
		writeText(w, http.StatusInternalServerError, msgNoLeader)
		return true
	}
	c.proxy(w, r, addr)
	return true
}

// waitForLeader polls for a leader for up to c.leaderWait. self is true when
// this server became the leader meanwhile.
func (c *Cluster) waitForLeader(ctx context.Context) (addr string, self, ok bool) {
	deadline := time.NewTimer(c.leaderWait)
	defer deadline.Stop()
	tick := time.NewTicker(leaderPollEvery)
	defer tick.Stop()
	for {
		if c.IsLeader() {
			return "", true, true
		}
		id, a := c.Leader()
		if id != "" && id != c.cfg.NodeID && a != "" {
			return a, false, true
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			return "", false, false
		case <-ctx.Done():
			return "", false, false
		case <-c.ctx.Done():
			return "", false, false
		}
	}
}

// proxy sends r to the leader at addr over the peer client and copies the
// response back, flushing as it goes so streaming endpoints keep working.
func (c *Cluster) proxy(w http.ResponseWriter, r *http.Request, addr string) {
	resp, err := c.send(r, addr, func(h http.Header) { h.Set(ForwardedHeader, "1") })
	if err != nil {
		if r.Context().Err() != nil {
			return // client went away
		}
		c.logger.Warn("forwarding to leader failed", "leader", addr, "path", r.URL.Path, "error", err)
		writeText(w, http.StatusInternalServerError, "rpc error: "+err.Error())
		return
	}
	c.relay(w, r, resp)
}

// send sends a copy of r (method, path, query, end-to-end headers, body) to
// the server at addr over the peer client; mark edits the copy's headers.
// On error nothing has been written to the caller's response.
func (c *Cluster) send(r *http.Request, addr string, mark func(http.Header)) (*http.Response, error) {
	u := url.URL{Scheme: "http", Host: addr, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
	var body io.Reader
	if r.ContentLength != 0 {
		body = r.Body
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), body)
	if err != nil {
		return nil, err
	}
	out.ContentLength = r.ContentLength
	copyHeader(out.Header, r.Header)
	mark(out.Header)
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		if prior := r.Header.Get("X-Forwarded-For"); prior != "" {
			host = prior + ", " + host
		}
		out.Header.Set("X-Forwarded-For", host)
	}
	return c.client.Do(out)
}

// relay copies resp (status, headers, body) to w and closes it.
func (c *Cluster) relay(w http.ResponseWriter, r *http.Request, resp *http.Response) {
	defer resp.Body.Close()
	copyHeader(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	if err := copyFlush(w, resp.Body); err != nil && r.Context().Err() == nil {
		c.logger.Debug("copying forwarded response failed", "path", r.URL.Path, "error", err)
	}
}

// copyHeader copies end-to-end headers from src to dst.
func copyHeader(dst, src http.Header) {
	skip := map[string]bool{}
	for _, h := range hopHeaders {
		skip[h] = true
	}
	for _, v := range src.Values("Connection") {
		for tok := range strings.SplitSeq(v, ",") {
			if tok = strings.TrimSpace(tok); tok != "" {
				skip[textproto.CanonicalMIMEHeaderKey(tok)] = true
			}
		}
	}
	for k, vs := range src {
		if skip[k] {
			continue
		}
		for _, v := range vs {
			dst.Add(k, v)
		}
	}
}

// copyFlush copies src to w, flushing after every chunk.
func copyFlush(w http.ResponseWriter, src io.Reader) error {
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
			if ferr := rc.Flush(); ferr != nil && !errors.Is(ferr, http.ErrNotSupported) {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
