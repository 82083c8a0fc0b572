package agent

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"

	"github.com/drover-project/drover/nomad/structs"
)

// clientRoute serves a /v1/client/* request on a server agent: locally when
// this agent's client runs the node, otherwise by proxying it to the node's
// client agent. nodeOf names the node from the request.
func (h *HTTPServer) clientRoute(nodeOf func(r *http.Request) (string, error)) http.HandlerFunc {
	return h.clientRouteWith(nodeOf, h.writeError)
}

// writeError answers err as an HTTP error.
func (h *HTTPServer) writeError(w http.ResponseWriter, r *http.Request, err error) {
	h.serve(w, r, func(http.ResponseWriter, *http.Request) (any, uint64, error) { return nil, 0, err })
}

// clientRouteWith is clientRoute with fail answering the errors found
// before the request reaches a client. A websocket upgrade is proxied
// both ways.
func (h *HTTPServer) clientRouteWith(nodeOf func(r *http.Request) (string, error), fail func(http.ResponseWriter, *http.Request, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		nodeID, err := nodeOf(r)
		if err == nil && nodeID == "" {
			err = badRequest("missing node ID")
		}
		var node *structs.Node
		if err == nil {
			node, err = h.srv.State().NodeByID(nil, nodeID)
			if err == nil && node == nil {
				err = notFound("Unknown node " + nodeID)
			}
		}
		if err != nil {
			fail(w, r, err)
			return
		}
		if c := h.agent.client; c != nil && c.NodeID() == nodeID {
			c.Handler().ServeHTTP(w, r)
			return
		}
		if node.HTTPAddr == "" {
			fail(w, r, notFound("node "+nodeID+" has no HTTP address"))
			return
		}
		proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: h.agent.tls.scheme(), Host: node.HTTPAddr})
		proxy.Transport = h.agent.tls.nodeTransport()
		proxy.ServeHTTP(w, r)
	}
}

// nodeOfAlloc names the node of the allocation in the path.
func (h *HTTPServer) nodeOfAlloc(name string) func(r *http.Request) (string, error) {
	return func(r *http.Request) (string, error) {
		a, err := h.srv.State().AllocByID(nil, r.PathValue(name))
		if err != nil {
			return "", err
		}
		if a == nil {
			return "", notFound("Unknown allocation \"" + r.PathValue(name) + "\"")
		}
		return a.NodeID, nil
	}
}

// nodeOfQuery names the node in the node_id parameter, or this agent's own
// client's node when absent.
func (h *HTTPServer) nodeOfQuery(r *http.Request) (string, error) {
	if id := r.URL.Query().Get("node_id"); id != "" {
		return id, nil
	}
	if c := h.agent.client; c != nil {
		return c.NodeID(), nil
	}
	return "", badRequest("missing node_id")
}

// clientOnlyHandler is the HTTP API of an agent without a server: its
// client's endpoints, and every other request proxied to a server.
type clientOnlyHandler struct {
	agent *Agent
	mux   *http.ServeMux
	next  atomic.Uint64 // round-robin over the configured servers
}

func newClientOnlyHandler(a *Agent) *clientOnlyHandler {
	h := &clientOnlyHandler{agent: a, mux: http.NewServeMux()}
	h.mux.Handle("/v1/client/", a.client.Handler())
	h.mux.HandleFunc("GET /v1/agent/monitor", a.serveMonitor)
	h.mux.HandleFunc("/", h.proxyToServer)
	return h
}

func (h *clientOnlyHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

func (h *clientOnlyHandler) proxyToServer(w http.ResponseWriter, r *http.Request) {
	servers := h.agent.config.Client.Servers
	if len(servers) == 0 {
		http.Error(w, "No known servers", http.StatusInternalServerError)
		return
	}
	target := servers[int(h.next.Add(1))%len(servers)]
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: h.agent.tls.scheme(), Host: target})
	proxy.Transport = h.agent.tls.serverTransport()
	proxy.ServeHTTP(w, r)
}

// nodeOfMetaRequest names the node of a /v1/client/metadata request: the
// body's NodeID (a write), else the node_id parameter, else this agent's
// own client's node. The body is left readable for the node's client.
func (h *HTTPServer) nodeOfMetaRequest(r *http.Request) (string, error) {
	if r.Method != http.MethodGet && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return "", badRequest("reading request body: %v", err)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req struct{ NodeID string }
		if err := json.Unmarshal(body, &req); err != nil {
			return "", badRequest("Request decode failed: %v", err)
		}
		if req.NodeID != "" {
			return req.NodeID, nil
		}
	}
	return h.nodeOfQuery(r)
}
