package agent

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"
)

// monitorBuffer is how many log lines a slow monitor reader may fall
// behind before lines are dropped (and the drop reported in the stream).
const monitorBuffer = 512

// logWriter is an hclog sink's output: it hands each formatted line to the
// streaming request without ever blocking the logger.
type logWriter struct {
	ch      chan []byte
	dropped atomic.Int64
}

func (lw *logWriter) Write(p []byte) (int, error) {
	select {
	case lw.ch <- append([]byte(nil), p...):
	default:
		lw.dropped.Add(1)
	}
	return len(p), nil
}

// agentMonitor serves GET /v1/agent/monitor on a server agent: with a
// node_id of another node the request goes to that node's agent; otherwise
// this agent streams its own log.
func (h *HTTPServer) agentMonitor(w http.ResponseWriter, r *http.Request) {
	if id := r.URL.Query().Get("node_id"); id != "" && (h.agent.client == nil || h.agent.client.NodeID() != id) {
		node, err := h.srv.State().NodeByID(nil, id)
		if err == nil && node == nil {
			err = notFound("Unknown node " + id)
		}
		if err == nil && node.HTTPAddr == "" {
			err = notFound("node " + id + " has no HTTP address")
		}
		if err != nil {
			h.serve(w, r, func(http.ResponseWriter, *http.Request) (any, uint64, error) { return nil, 0, err })
			return
		}
		httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: node.HTTPAddr}).ServeHTTP(w, r)
		return
	}
	h.agent.serveMonitor(w, r)
}

// serveMonitor streams this agent's log from now on, at log_level (default
// info), as text (log_json=true: JSON lines), in api.StreamFrame objects
// ({"Data": base64}) or, with plain=true, as the raw lines. An idle stream
// sends an empty frame every 10s; the stream ends when the client leaves or
// the agent shuts down.
func (a *Agent) serveMonitor(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	levelName := q.Get("log_level")
	if levelName == "" {
		levelName = "INFO"
	}
	level := hclog.LevelFromString(levelName)
	if level == hclog.NoLevel {
		http.Error(w, "Unknown log level: "+levelName, http.StatusBadRequest)
		return
	}
	var flags [2]bool
	for i, name := range []string{"log_json", "plain"} {
		v := q.Get(name)
		switch strings.ToLower(v) {
		case "", "false", "0":
		case "true", "1":
			flags[i] = true
		default:
			http.Error(w, "Unknown option "+name+": "+v, http.StatusBadRequest)
			return
		}
	}
	logJSON, plain := flags[0], flags[1]
	if a.logs == nil {
		http.Error(w, "log streaming is not available on this agent", http.StatusNotImplemented)
		return
	}
	lw := &logWriter{ch: make(chan []byte, monitorBuffer)}
	sink := hclog.NewSinkAdapter(&hclog.LoggerOptions{Level: level, Output: lw, JSONFormat: logJSON})
	a.logs.RegisterSink(sink)
	defer a.logs.DeregisterSink(sink)

	flusher, _ := w.(http.Flusher)
	if plain {
		w.Header().Set("Content-Type", "text/plain")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	enc := json.NewEncoder(w)
	send := func(data []byte) error {
		var err error
		if plain {
			_, err = w.Write(data)
		} else {
			err = enc.Encode(&api.StreamFrame{Data: data})
		}
		if flusher != nil {
			flusher.Flush()
		}
		return err
	}
	heartbeat := time.NewTicker(10 * time.Second)
	defer heartbeat.Stop()
	for {
		var data []byte
		select {
		case <-r.Context().Done():
			return
		case line := <-lw.ch:
			data = line
			if n := lw.dropped.Swap(0); n > 0 {
				data = append(fmt.Appendf(nil, "[WARN]  monitor: dropped log lines: count=%d\n", n), data...)
			}
		case <-heartbeat.C:
			if plain {
				continue
			}
			if err := enc.Encode(&api.StreamFrame{}); err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
			continue
		}
		if err := send(data); err != nil {
			return
		}
	}
}
