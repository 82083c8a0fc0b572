package registry

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ggcr "github.com/google/go-containerregistry/pkg/registry"
)

// Options configure a Registry. The zero value is ready to use.
type Options struct {
	// Addr is the listen address; default "127.0.0.1:0" (a free port).
	// Keep it on 127.0.0.0/8 so that dockerd talks plain HTTP to it.
	Addr string
	// Bandwidth is the initial blob download limit in bytes per second;
	// 0 means unlimited. See SetBandwidth.
	Bandwidth int64
	// Logf, when set, receives one line per request (method, path, status
	// of injected failures). Nil keeps the registry quiet.
	Logf func(format string, args ...any)
}

// Registry is a running test registry. All methods are safe for concurrent
// use.
type Registry struct {
	ln    net.Listener
	srv   *http.Server
	inner http.Handler
	logf  func(format string, args ...any)

	lim           limiter
	perDownload   atomic.Int64 // bytes/s for each blob download on its own; 0 = none
	failBlobs     atomic.Bool
	failManifests atomic.Bool
	blobBytes     atomic.Int64

	mu        sync.Mutex
	stallCh   chan struct{} // non-nil while stalled; closed on release
	closed    bool
	inflight  sync.WaitGroup
	blobGets  map[string]int
	manGets   map[string]int
	manHeads  map[string]int
	done      chan struct{}
	closeOnce sync.Once
	serveErr  chan error
}

// Start starts a registry for the test and closes it in t.Cleanup. It fails
// the test if the registry cannot listen.
func Start(t testing.TB, opts Options) *Registry {
	t.Helper()
	r, err := New(opts)
	if err != nil {
		t.Fatalf("test registry: %v", err)
	}
	t.Cleanup(r.Close)
	return r
}

// New starts a registry outside a test (for benchmarks and commands). The
// caller must Close it.
func New(opts Options) (*Registry, error) {
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	r := &Registry{
		ln:       ln,
		inner:    ggcr.New(ggcr.Logger(log.New(io.Discard, "", 0))),
		logf:     opts.Logf,
		blobGets: map[string]int{},
		manGets:  map[string]int{},
		manHeads: map[string]int{},
		done:     make(chan struct{}),
		serveErr: make(chan error, 1),
	}
	r.lim.setRate(opts.Bandwidth)
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 30 * time.Second}
	go func() { r.serveErr <- r.srv.Serve(ln) }()
	return r, nil
}

// Close stops the registry: it releases stalled and throttled requests,
// closes all connections and waits for in-flight handlers to return. It is
// safe to call more than once.
func (r *Registry) Close() {
	r.closeOnce.Do(func() {
		r.mu.Lock()
		r.closed = true
		r.mu.Unlock()
		close(r.done)
		_ = r.srv.Close()
		r.inflight.Wait()
		<-r.serveErr
	})
}

// Addr returns the registry's "127.0.0.1:PORT".
func (r *Registry) Addr() string { return r.ln.Addr().String() }

// Ref returns "ADDR/repo:tag", or "ADDR/repo@tag" when tag is a digest
// ("sha256:...").
func (r *Registry) Ref(repo, tag string) string {
	if strings.Contains(tag, ":") {
		return r.Addr() + "/" + repo + "@" + tag
	}
	return r.Addr() + "/" + repo + ":" + tag
}

// SetBandwidth limits blob downloads to bytesPerSec, shared by all concurrent
// downloads; 0 (or less) removes the limit. It applies to downloads already
// in progress from their next chunk on.
func (r *Registry) SetBandwidth(bytesPerSec int64) { r.lim.setRate(bytesPerSec) }

// Bandwidth returns the current limit in bytes per second (0 = unlimited).
func (r *Registry) Bandwidth() int64 { return r.lim.getRate() }

// SetDownloadBandwidth limits each blob download on its own to bytesPerSec,
// in addition to the shared limit of SetBandwidth; 0 (or less) removes it.
// It models clients that each sit behind their own link: n concurrent
// downloads take as long as one. Downloads in progress follow a change
// from their next chunk on.
func (r *Registry) SetDownloadBandwidth(bytesPerSec int64) { r.perDownload.Store(max(bytesPerSec, 0)) }

// DownloadBandwidth returns the per-download limit (0 = none).
func (r *Registry) DownloadBandwidth() int64 { return r.perDownload.Load() }

// FailBlobs makes blob GETs answer 500 while on. Blob HEADs and uploads keep
// working, so pushes still succeed.
func (r *Registry) FailBlobs(on bool) { r.failBlobs.Store(on) }

// FailManifests makes manifest GETs and HEADs answer 500 while on (tag
// resolution and pulls fail). Manifest PUTs keep working.
func (r *Registry) FailManifests(on bool) { r.failManifests.Store(on) }

// Stall makes blob GETs hang while on: new requests send nothing (not even
// headers) and downloads in progress stop before their next chunk. Requests
// resume when Stall(false) is called, and end when the client gives up or
// the registry closes. A request released from a stall while FailBlobs is on
// answers 500.
func (r *Registry) Stall(on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case on && r.stallCh == nil:
		r.stallCh = make(chan struct{})
	case !on && r.stallCh != nil:
		close(r.stallCh)
		r.stallCh = nil
	}
}

// BlobPulls returns how many GET requests reached the registry for the blob
// with this digest ("sha256:HEX"; a bare HEX is taken as sha256), whatever
// their outcome (served, failed by injection, stalled, cancelled), in any
// repository.
func (r *Registry) BlobPulls(digest string) int {
	if !strings.Contains(digest, ":") {
		digest = "sha256:" + digest
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.blobGets[digest]
}

// ManifestGets returns how many manifest GET requests named ref, whatever
// their outcome. ref is "repo:tag" or "repo@sha256:HEX", optionally prefixed
// with Addr()+"/" (so a Ref result works). Note that dockerd pulls a tag by
// HEAD on "repo:tag" then GET on "repo@DIGEST"; see ManifestHeads.
func (r *Registry) ManifestGets(ref string) int {
	key := r.key(ref)
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.manGets[key]
}

// ManifestHeads is ManifestGets for HEAD requests (how dockerd and
// digest pollers resolve a tag).
func (r *Registry) ManifestHeads(ref string) int {
	key := r.key(ref)
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.manHeads[key]
}

// TotalBlobBytes returns the number of blob body bytes sent to clients by
// GET requests since start (or the last ResetCounters).
func (r *Registry) TotalBlobBytes() int64 { return r.blobBytes.Load() }

// ResetCounters zeroes all counters.
func (r *Registry) ResetCounters() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.blobGets)
	clear(r.manGets)
	clear(r.manHeads)
	r.blobBytes.Store(0)
}

func (r *Registry) key(ref string) string {
	return strings.TrimPrefix(ref, r.Addr()+"/")
}

// ServeHTTP implements http.Handler: the registry with its knobs applied.
func (r *Registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		http.Error(w, "registry closed", http.StatusServiceUnavailable)
		return
	}
	r.inflight.Add(1)
	r.mu.Unlock()
	defer r.inflight.Done()

	if r.logf != nil {
		r.logf("registry: %s %s", req.Method, req.URL.Path)
	}
	rq := classify(req)
	switch rq.kind {
	case kindBlobGet:
		r.serveBlob(w, req, rq.ref)
	case kindManifest:
		r.mu.Lock()
		if req.Method == http.MethodHead {
			r.manHeads[rq.ref]++
		} else {
			r.manGets[rq.ref]++
		}
		r.mu.Unlock()
		if r.failManifests.Load() {
			r.injectError(w, req, "manifest")
			return
		}
		r.inner.ServeHTTP(w, req)
	default:
		r.inner.ServeHTTP(w, req)
	}
}

func (r *Registry) serveBlob(w http.ResponseWriter, req *http.Request, digest string) {
	r.mu.Lock()
	r.blobGets[digest]++
	r.mu.Unlock()
	if r.waitStall(req) != nil {
		return
	}
	if r.failBlobs.Load() {
		r.injectError(w, req, "blob")
		return
	}
	r.inner.ServeHTTP(&throttledWriter{ResponseWriter: w, r: r, req: req}, req)
}

func (r *Registry) injectError(w http.ResponseWriter, req *http.Request, what string) {
	if r.logf != nil {
		r.logf("registry: injected 500 for %s %s", req.Method, req.URL.Path)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusInternalServerError)
	if req.Method != http.MethodHead {
		fmt.Fprintf(w, `{"errors":[{"code":"UNKNOWN","message":"drover test registry: injected %s failure"}]}`+"\n", what)
	}
}

var errAborted = errors.New("request aborted")

// waitStall blocks while the registry is stalled. It returns an error when
// the request ends or the registry closes first.
func (r *Registry) waitStall(req *http.Request) error {
	for {
		r.mu.Lock()
		ch := r.stallCh
		r.mu.Unlock()
		if ch == nil {
			return nil
		}
		select {
		case <-ch:
		case <-req.Context().Done():
			return errAborted
		case <-r.done:
			return errAborted
		}
	}
}

// sleep waits d, or returns an error if the request ends or the registry
// closes first.
func (r *Registry) sleep(req *http.Request, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-req.Context().Done():
		return errAborted
	case <-r.done:
		return errAborted
	}
}

// throttledWriter writes a blob body in chunks, honouring Stall and the
// bandwidth limits (shared and per download) before each chunk and flushing after it, so the client
// sees the bytes at the limited pace.
type throttledWriter struct {
	http.ResponseWriter
	r   *Registry
	req *http.Request
	own limiter // this download's own link (SetDownloadBandwidth)
}

func (tw *throttledWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		if err := tw.r.waitStall(tw.req); err != nil {
			return written, err
		}
		if rate := tw.r.perDownload.Load(); rate != tw.own.getRate() {
			tw.own.setRate(rate)
		}
		n := min(len(p), tw.r.lim.chunkSize(), tw.own.chunkSize())
		if err := tw.r.sleep(tw.req, max(tw.r.lim.reserve(n), tw.own.reserve(n))); err != nil {
			return written, err
		}
		m, err := tw.ResponseWriter.Write(p[:n])
		written += m
		tw.r.blobBytes.Add(int64(m))
		if err != nil {
			return written, err
		}
		_ = http.NewResponseController(tw.ResponseWriter).Flush()
		p = p[n:]
	}
	return written, nil
}

// limiter is a shared pacing clock: each chunk reserves len/rate seconds of
// link time after the previous reservation, with a small burst credit for an
// idle link.
type limiter struct {
	mu   sync.Mutex
	rate int64
	next time.Time
}

const (
	maxChunk   = 32 << 10
	minChunk   = 512
	burstAllow = 20 * time.Millisecond
)

func (l *limiter) setRate(bps int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rate = max(bps, 0)
	l.next = time.Now()
}

func (l *limiter) getRate() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rate
}

// chunkSize keeps one chunk at about 20ms of link time.
func (l *limiter) chunkSize() int {
	rate := l.getRate()
	if rate <= 0 {
		return maxChunk
	}
	return int(min(max(rate/50, minChunk), maxChunk))
}

// reserve books n bytes of link time and returns how long the caller must
// wait before sending them.
func (l *limiter) reserve(n int) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rate <= 0 {
		return 0
	}
	now := time.Now()
	start := l.next
	if earliest := now.Add(-burstAllow); start.Before(earliest) {
		start = earliest
	}
	l.next = start.Add(time.Duration(float64(n) / float64(l.rate) * float64(time.Second)))
	return l.next.Sub(now)
}

type kind int

const (
	kindOther kind = iota
	kindBlobGet
	kindManifest
)

type request struct {
	kind kind
	// ref is the blob digest for kindBlobGet, and "repo:tag" or
	// "repo@digest" for kindManifest.
	ref string
}

// classify recognises GET /v2/<name>/blobs/<digest> and GET or HEAD
// /v2/<name>/manifests/<reference>; everything else passes through.
func classify(req *http.Request) request {
	rest, ok := strings.CutPrefix(req.URL.Path, "/v2/")
	if !ok {
		return request{}
	}
	if i := strings.LastIndex(rest, "/blobs/"); i > 0 && req.Method == http.MethodGet {
		d := rest[i+len("/blobs/"):]
		if strings.Contains(d, ":") && !strings.Contains(d, "/") {
			return request{kind: kindBlobGet, ref: d}
		}
		return request{}
	}
	if i := strings.LastIndex(rest, "/manifests/"); i > 0 &&
		(req.Method == http.MethodGet || req.Method == http.MethodHead) {
		repo, ref := rest[:i], rest[i+len("/manifests/"):]
		if ref == "" || strings.Contains(ref, "/") {
			return request{}
		}
		sep := ":"
		if strings.Contains(ref, ":") {
			sep = "@"
		}
		return request{kind: kindManifest, ref: repo + sep + ref}
	}
	return request{}
}
