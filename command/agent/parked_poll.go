package agent

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// A client's long poll for its node's allocations (internalNodeAllocs)
// spends almost all its life waiting. Parked in net/http, each waiting
// poll holds a handler goroutine, a background reader and the
// connection's and response's buffers: about 25 KB, 250 MB at 10,000
// nodes (docs/benchmarks.md, "Server memory at rest"). A parked poll
// instead takes its connection from net/http once the server endpoint
// has said it would wait, waits in a goroutine of its own that holds only
// the connection and the endpoint's blocking query, writes the answer
// itself and hands the connection back to the HTTP server through the
// agent's returningListener for the client's next request.
//
// Only plain HTTP/1.1 keep-alive requests park (HTTP/2 streams cannot be
// taken from net/http; an agent with a tls block answers every poll the
// usual way). A parked poll does not notice a client that went away until
// its wait ends and the write fails; that wait is bounded by the query's
// wait, as before.

// parkedPolls is the bookkeeping of an agent's parked polls.
type parkedPolls struct {
	ln  *returningListener
	ctx context.Context // canceled when the agent stops serving requests
	// server is the HTTP server that serves ln: only its requests park
	// (the same handler also serves the tasks' task API sockets).
	server *http.Server

	mu      sync.Mutex
	closed  bool
	waiting int // parked polls not yet answered
	wg      sync.WaitGroup
}

func newParkedPolls(ln *returningListener, ctx context.Context) *parkedPolls {
	return &parkedPolls{ln: ln, ctx: ctx}
}

// parkedAnswer, returned by a handler, tells serve that the request's
// connection was taken and will be answered by a parked poll.
type parkedAnswer struct{}

// canPark reports whether r may be answered by a parked poll.
func (p *parkedPolls) canPark(r *http.Request) bool {
	return p != nil && r.TLS == nil && r.ProtoMajor == 1 && r.ProtoMinor >= 1 && !r.Close &&
		r.Context().Value(http.ServerContextKey) == p.server
}

// count is the number of polls parked now.
func (p *parkedPolls) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waiting
}

// pollAnswer produces a poll's answer; it blocks until there is one or
// ctx ends.
type pollAnswer func(ctx context.Context) (out any, index uint64, err error)

// park takes r's connection from net/http and answers it from a goroutine
// of its own with what answer returns. It reports false, having touched
// nothing, when the connection cannot be taken or the agent is stopping;
// the caller then answers as usual.
func (h *HTTPServer) park(w http.ResponseWriter, r *http.Request, answer pollAnswer) bool {
	p := h.polls
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.ctx.Err() != nil {
		return false
	}
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	var c net.Conn = conn
	if n := rw.Reader.Buffered(); n > 0 {
		// A pipelined next request: keep its bytes for the server.
		pre, _ := rw.Reader.Peek(n)
		c = &prefixedConn{Conn: conn, pre: bytes.NewReader(bytes.Clone(pre))}
	}
	p.waiting++
	p.wg.Add(1)
	_, pretty := r.URL.Query()["pretty"]
	go h.waitParked(c, answer, parkedRequest{answerOf{method: r.Method, path: r.URL.Path, pretty: pretty}, time.Now()})
	return true
}

// parkedRequest is what a parked poll keeps of its request.
type parkedRequest struct {
	answerOf
	start time.Time
}

// parkedWriteTimeout bounds the write of a parked poll's answer.
const parkedWriteTimeout = 10 * time.Second

// waitParked waits for a parked poll's answer, writes it on c and hands c
// back to the HTTP server. When the agent stops, c is closed unanswered
// (the client asks again, as when a connection is cut).
func (h *HTTPServer) waitParked(c net.Conn, answer pollAnswer, req parkedRequest) {
	p := h.polls
	defer p.wg.Done()
	out, index, err := answer(p.ctx)
	p.mu.Lock()
	p.waiting--
	p.mu.Unlock()
	if p.ctx.Err() != nil {
		_ = c.Close()
		return
	}
	resp, observed := h.renderParked(out, index, err, req)
	_ = c.SetWriteDeadline(time.Now().Add(parkedWriteTimeout))
	if _, werr := c.Write(resp); werr != nil {
		_ = c.Close()
		return
	}
	_ = c.SetDeadline(time.Time{})
	h.logger.Debug("request complete", "method", req.method, "path", req.path, "duration", time.Since(req.start), "parked", true)
	if observed {
		h.agent.metrics.observeRequest(req.method, time.Since(req.start))
	}
	p.ln.give(c)
}

// renderParked is the HTTP/1.1 response serve would have written for
// (out, index, err): writeAnswer's, into a buffer, and whether the
// request counts in the request metrics as serve counts it.
func (h *HTTPServer) renderParked(out any, index uint64, err error, req parkedRequest) ([]byte, bool) {
	var rec bufferedResponse
	observed := h.writeAnswer(&rec, req.answerOf, out, index, err)
	code := rec.code
	if code == 0 {
		code = http.StatusOK
	}
	rec.header.Set("Content-Length", strconv.Itoa(rec.body.Len()))
	rec.header.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", code, http.StatusText(code))
	_ = rec.header.Write(&b)
	b.WriteString("\r\n")
	b.Write(rec.body.Bytes())
	return b.Bytes(), observed
}

// bufferedResponse is an http.ResponseWriter that keeps what is written
// to it.
type bufferedResponse struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *bufferedResponse) Header() http.Header {
	if r.header == nil {
		r.header = http.Header{}
	}
	return r.header
}

func (r *bufferedResponse) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

func (r *bufferedResponse) Write(b []byte) (int, error) { return r.body.Write(b) }

// stop makes later polls answer the usual way and waits, at most until
// deadline, for the parked ones to end (the agent's request context,
// canceled first, ends their waits).
func (p *parkedPolls) stop(deadline time.Duration) bool {
	if p == nil {
		return true
	}
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(deadline):
		return false
	}
}

// prefixedConn is a connection whose first reads return bytes already
// read from it.
type prefixedConn struct {
	net.Conn
	pre *bytes.Reader
}

func (c *prefixedConn) Read(b []byte) (int, error) {
	if c.pre.Len() > 0 {
		return c.pre.Read(b)
	}
	return c.Conn.Read(b)
}
