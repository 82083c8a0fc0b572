package agent

import (
	"fmt"
	"net/http"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"time"
)

// maxProfileSeconds bounds a CPU profile or trace asked for through the API.
const maxProfileSeconds = 300

// agentPprof serves GET /v1/agent/pprof/{profile} (Nomad's path, as the api
// client's Agent().CPUProfile, Trace and Lookup call it): "profile" is a
// CPU profile and "trace" an execution trace of ?seconds (default 1);
// any other name is a runtime/pprof profile (heap, goroutine, ...;
// ?debug=N for text, ?gc=1 to collect garbage before a heap profile), 404
// when there is no such profile. It profiles the agent the request reaches:
// ?server_id naming another server, or ?node_id naming another node, is a
// 500 naming it. With ACLs on the route needs agent write; with ACLs off
// the agent must run with enable_debug, as in Nomad.
func (h *HTTPServer) agentPprof(w http.ResponseWriter, r *http.Request) {
	if !h.aclEnabled() && !h.agent.config.EnableDebug {
		http.Error(w, "Permission denied", http.StatusForbidden)
		return
	}
	q := r.URL.Query()
	if id := q.Get("server_id"); id != "" && !h.isThisServer(id) {
		http.Error(w, fmt.Sprintf("unknown Nomad server %s", id), http.StatusInternalServerError)
		return
	}
	if id := q.Get("node_id"); id != "" && (h.agent.Client() == nil || h.agent.Client().NodeID() != id) {
		http.Error(w, fmt.Sprintf("unknown Nomad client node %s: profiles are taken on the agent the request reaches", id), http.StatusInternalServerError)
		return
	}
	seconds := 1
	if v := q.Get("seconds"); v != "" && v != "0" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxProfileSeconds {
			http.Error(w, fmt.Sprintf("seconds must be a whole number from 0 to %d, got %q", maxProfileSeconds, v), http.StatusBadRequest)
			return
		}
		seconds = n
	}
	debug, _ := strconv.Atoi(q.Get("debug"))
	name := r.PathValue("profile")
	w.Header().Set("Content-Type", "application/octet-stream")
	switch name {
	case "profile":
		if err := pprof.StartCPUProfile(w); err != nil {
			http.Error(w, "Could not enable CPU profiling: "+err.Error(), http.StatusInternalServerError)
			return
		}
		sleepCtx(r, time.Duration(seconds)*time.Second)
		pprof.StopCPUProfile()
	case "trace":
		if err := trace.Start(w); err != nil {
			http.Error(w, "Could not enable tracing: "+err.Error(), http.StatusInternalServerError)
			return
		}
		sleepCtx(r, time.Duration(seconds)*time.Second)
		trace.Stop()
	default:
		p := pprof.Lookup(name)
		if p == nil {
			http.Error(w, fmt.Sprintf("Unknown profile: %s", name), http.StatusNotFound)
			return
		}
		if name == "heap" && q.Get("gc") == "1" {
			runtime.GC()
		}
		if debug > 0 {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		}
		_ = p.WriteTo(w, debug)
	}
}

// sleepCtx waits d or until the request ends.
func sleepCtx(r *http.Request, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	}
}

// isThisServer reports whether id names this agent's server: its name,
// with or without the region.
func (h *HTTPServer) isThisServer(id string) bool {
	cfg := h.agent.config
	return h.srv != nil && (id == cfg.Name || id == cfg.Name+"."+cfg.Region)
}

// aclEnabled reports whether this agent enforces ACLs.
func (h *HTTPServer) aclEnabled() bool { return h.agent.config.ACL.Enabled }
