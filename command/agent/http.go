package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/nomad"
	"github.com/drover-project/drover/nomad/structs"
)

// Blocking-query limits, as Nomad has them (the server's).
const (
	defaultQueryWait = nomad.DefaultQueryWait
	maxQueryWait     = nomad.MaxQueryWait
	maxRequestBody   = 16 << 20
)

// HTTPServer serves the Nomad-compatible /v1 API over one server.
type HTTPServer struct {
	srv    *nomad.Server
	agent  *Agent
	logger hclog.Logger
	mux    *http.ServeMux
	routes []registeredRoute // every registered route, with its rule
	// pools serves /v1/node/pool/..., whose patterns would overlap the
	// main mux's /v1/node/{id}/... ones.
	pools *http.ServeMux
	// polls are the clients' parked allocation polls (parked_poll.go);
	// nil when polls cannot park (an agent with a tls block).
	polls *parkedPolls
}

// handlerFunc is an endpoint: it returns the value to encode as JSON (nil
// encodes as null) and the raft index for X-Nomad-Index, or an error.
type handlerFunc func(w http.ResponseWriter, r *http.Request) (out any, index uint64, err error)

// NewHTTPServer builds the API handler of agent a.
func NewHTTPServer(a *Agent, logger hclog.Logger) *HTTPServer {
	h := &HTTPServer{srv: a.server, agent: a, logger: logger.Named("http"), mux: http.NewServeMux(), pools: http.NewServeMux(), polls: a.polls}
	h.registerRoutes()
	return h
}

// ServeHTTP implements http.Handler.
func (h *HTTPServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	limit := int64(maxRequestBody)
	if r.URL.Path == snapshotPath {
		limit = maxSnapshotBody
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	if strings.HasPrefix(r.URL.Path, "/v1/job//") {
		// An empty job ID: answered here, before the mux would redirect
		// the uncleaned path to another endpoint.
		http.Error(w, "Missing job ID", http.StatusBadRequest)
		return
	}
	if h.forwardRegion(w, r) {
		return
	}
	if strings.HasPrefix(r.URL.Path, nodePoolPrefix) {
		h.pools.ServeHTTP(w, r)
		return
	}
	h.mux.ServeHTTP(w, r)
}

// read wraps a read endpoint, consistent by default as in Nomad: a
// follower forwards the request to the leader, and the leader answers once
// it has applied every committed entry (a new leader waits for its
// barrier). With ?stale (empty or true) any server answers from its own
// state. Blocking queries block wherever they are answered.
func (h *HTTPServer) read(fn handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !staleAllowed(r) {
			if h.srv.Forward(w, r) {
				return
			}
			if err := h.srv.WaitConsistentRead(r.Context()); err != nil {
				if r.Context().Err() == nil {
					h.setMeta(w, 0)
					http.Error(w, nomad.ErrNotReadyForReads.Error(), http.StatusInternalServerError)
				}
				return
			}
		}
		h.serve(w, r, fn)
	}
}

// local wraps an endpoint about this agent itself (agent, status, JWKS,
// the client agents' internal polls): answered by the server it reaches.
func (h *HTTPServer) local(fn handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { h.serve(w, r, fn) }
}

// staleAllowed reports whether the request asks for a possibly stale read:
// ?stale with no value (as the api client sends it) or a true value.
// parseQuery rejects values that are not booleans.
func staleAllowed(r *http.Request) bool {
	v, ok := r.URL.Query()["stale"]
	if !ok {
		return false
	}
	if len(v) == 0 || v[0] == "" {
		return true
	}
	b, err := strconv.ParseBool(v[0])
	return err == nil && b
}

// write wraps a write endpoint: a follower forwards the request to the leader.
func (h *HTTPServer) write(fn handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if h.srv.Forward(w, r) {
			return
		}
		h.serve(w, r, fn)
	}
}

func (h *HTTPServer) serve(w http.ResponseWriter, r *http.Request, fn handlerFunc) {
	start := time.Now()
	out, index, err := fn(w, r)
	if _, ok := out.(parkedAnswer); ok && err == nil {
		return // a parked poll took the connection and answers it
	}
	defer func() {
		h.logger.Debug("request complete", "method", r.Method, "path", r.URL.Path, "duration", time.Since(start))
	}()
	_, pretty := r.URL.Query()["pretty"]
	if h.writeAnswer(w, answerOf{method: r.Method, path: r.URL.Path, pretty: pretty}, out, index, err) {
		h.agent.metrics.observeRequest(r.Method, time.Since(start))
	}
}

// answerOf is what writeAnswer needs of the request it answers.
type answerOf struct {
	method, path string
	pretty       bool // ?pretty: indented JSON
}

// writeAnswer writes a handler's (out, index, err) on w: the query meta
// headers, then the error's status and text, or out as JSON (with its
// statusCoder status). It reports whether a JSON body was written.
func (h *HTTPServer) writeAnswer(w http.ResponseWriter, req answerOf, out any, index uint64, err error) bool {
	h.setMeta(w, index)
	if err != nil {
		code, msg := errorResponse(err)
		if code >= 500 {
			h.logger.Error("request failed", "method", req.method, "path", req.path, "error", err)
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(code)
		_, _ = fmt.Fprint(w, msg)
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	if sc, ok := out.(statusCoder); ok {
		w.WriteHeader(sc.StatusCode())
		if sc.StatusCode() == http.StatusNoContent {
			return false
		}
	}
	enc := json.NewEncoder(w)
	if req.pretty {
		enc.SetIndent("", "    ")
	}
	if err := enc.Encode(out); err != nil {
		h.logger.Error("encode response", "path", req.path, "error", err)
	}
	return true
}

// reportZeroIndex, returned by a handler as its index, answers
// X-Nomad-Index 0 (a list of tables never written, as Nomad reports it);
// an index of 0 means "the store's latest".
const reportZeroIndex = ^uint64(0)

// setMeta sets the query meta headers Nomad sends on every response.
func (h *HTTPServer) setMeta(w http.ResponseWriter, index uint64) {
	switch index {
	case reportZeroIndex:
		index = 0
	case 0:
		index = max(h.srv.LatestIndex(), 1)
	}
	w.Header().Set("X-Nomad-Index", strconv.FormatUint(index, 10))
	known := h.srv.Leader() != ""
	w.Header().Set("X-Nomad-KnownLeader", strconv.FormatBool(known))
	w.Header().Set("X-Nomad-LastContact", strconv.FormatInt(h.srv.LastContact().Milliseconds(), 10))
}

// errorResponse maps an error to a status code and client-facing text.
func errorResponse(err error) (int, string) {
	var re *structs.RequestError
	var he *httpError
	switch {
	case errors.As(err, &he):
		return he.code, he.msg
	case errors.As(err, &re) && errors.Is(re.Kind, structs.ErrForbidden):
		return http.StatusForbidden, re.Msg
	case errors.As(err, &re) && errors.Is(re.Kind, structs.ErrNotFound):
		return http.StatusNotFound, re.Msg
	case errors.As(err, &re):
		return http.StatusBadRequest, re.Msg
	case errors.Is(err, structs.ErrBadRequest): // a structs.ValidationError
		return http.StatusBadRequest, err.Error()
	case errors.Is(err, nomad.ErrStateNotFound):
		return http.StatusNotFound, err.Error()
	case errors.Is(err, nomad.ErrStateConflict):
		return http.StatusBadRequest, err.Error()
	}
	return http.StatusInternalServerError, err.Error()
}

// statusCoder is a response value sent with a status other than 200.
type statusCoder interface{ StatusCode() int }

// httpError is an error with an explicit status code.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &httpError{code: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

func notFound(msg string) error { return &httpError{code: http.StatusNotFound, msg: msg} }

// queryParams are the blocking-query parameters of a read.
type queryParams struct {
	minIndex uint64
	wait     time.Duration
}

// parseQuery validates index, wait and stale as Nomad does.
func parseQuery(r *http.Request) (queryParams, error) {
	q := r.URL.Query()
	var opts queryParams
	if v := q.Get("index"); v != "" {
		idx, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return opts, badRequest("Invalid index")
		}
		opts.minIndex = idx
	}
	opts.wait = defaultQueryWait
	if v := q.Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return opts, badRequest("Invalid wait time")
		}
		if d > 0 {
			opts.wait = min(d, maxQueryWait)
		}
	}
	if v, ok := q["stale"]; ok && len(v) > 0 && v[0] != "" {
		if _, err := strconv.ParseBool(v[0]); err != nil {
			return opts, badRequest("Expected bool for stale, got %q", v[0])
		}
	}
	return opts, nil
}

// queryOptions parses the request's read options for the server: index,
// wait and stale (see parseQuery), the namespace, and the ACL the request
// was authorized with. Prefix, filter and paging are the handler's to add.
func queryOptions(r *http.Request) (nomad.QueryOptions, error) {
	q, err := parseQuery(r)
	if err != nil {
		return nomad.QueryOptions{}, err
	}
	return nomad.QueryOptions{
		Namespace: namespace(r), MinIndex: q.minIndex, MaxWait: q.wait,
		AllowStale: staleAllowed(r), ACL: aclOf(r), Identity: identityOf(r),
	}, nil
}

// metaIndex is the index a handler returns for the server's meta (its
// index 0 is reported as 0, not as the store's latest).
// readByID is a read of the object the path's {id} names, with the
// request's query options; the index is the one the server reported,
// also on an error.
func readByID[T any](r *http.Request, read func(context.Context, nomad.QueryOptions, string) (T, nomad.QueryMeta, error)) (T, uint64, error) {
	var zero T
	opts, err := queryOptions(r)
	if err != nil {
		return zero, 0, err
	}
	out, meta, err := read(r.Context(), opts, r.PathValue("id"))
	return out, metaIndex(meta), err
}

// serveByID answers with conv of what readByID reads.
func serveByID[T, U any](r *http.Request, read func(context.Context, nomad.QueryOptions, string) (T, nomad.QueryMeta, error), conv func(T) U) (any, uint64, error) {
	out, index, err := readByID(r, read)
	if err != nil {
		return nil, index, err
	}
	return conv(out), index, nil
}

func metaIndex(m nomad.QueryMeta) uint64 {
	if m.Index == 0 {
		return reportZeroIndex
	}
	return m.Index
}

// namespace returns the request's namespace: ?namespace=, else the
// X-Nomad-Namespace header, else "default".
func namespace(r *http.Request) string {
	if ns := r.URL.Query().Get("namespace"); ns != "" {
		return ns
	}
	if ns := r.Header.Get("X-Nomad-Namespace"); ns != "" {
		return ns
	}
	return structs.DefaultNamespace
}

// decodeBody decodes the JSON body into out, refusing malformed JSON with 400.
func decodeBody(r *http.Request, out any) error {
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(out); err != nil {
		return badRequest("Request decode failed: %v", err)
	}
	return nil
}

// boolParam parses a boolean query parameter; absent means def.
func boolParam(r *http.Request, name string, def bool) (bool, error) {
	v, ok := r.URL.Query()[name]
	if !ok {
		return def, nil
	}
	if len(v) == 0 || v[0] == "" {
		return true, nil
	}
	b, err := strconv.ParseBool(v[0])
	if err != nil {
		return false, badRequest("Failed to parse value of %q (%v) as a bool: %v", name, v[0], err)
	}
	return b, nil
}

// prefixParam returns the prefix query parameter.
func prefixParam(r *http.Request) string { return strings.TrimSpace(r.URL.Query().Get("prefix")) }
