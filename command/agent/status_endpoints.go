package agent

import (
	"net/http"
	"runtime"
	"strconv"
)

// agentSelf is the body of /v1/agent/self. The CLI reads config.UI to decide
// whether to print web UI hints; Drover has no web UI, so hints are off.
type agentSelf struct {
	Config agentSelfConfig              `json:"config"`
	Member agentMember                  `json:"member"`
	Stats  map[string]map[string]string `json:"stats"`
}

type agentSelfConfig struct {
	Region     string
	Datacenter string
	NodeName   string
	DataDir    string
	Version    map[string]string
	UI         struct{ Enabled, ShowCLIHints bool }
	Server     struct{ Enabled bool }
	Client     struct{ Enabled bool }
}

type agentMember struct {
	Name   string
	Addr   string
	Port   uint16
	Tags   map[string]string
	Status string
}

func (h *HTTPServer) agentSelf(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	cfg := h.agent.config
	out := &agentSelf{Stats: map[string]map[string]string{}}
	out.Config.Region, out.Config.Datacenter, out.Config.NodeName, out.Config.DataDir = cfg.Region, cfg.Datacenter, cfg.Name, cfg.DataDir
	out.Config.Version = map[string]string{"Version": Version}
	out.Config.Server.Enabled, out.Config.Client.Enabled = cfg.Server.Enabled, cfg.Client.Enabled
	out.Member = agentMember{Name: cfg.Name + "." + cfg.Region, Addr: h.agent.rpcHost(), Port: uint16(cfg.Ports.RPC), Status: "alive",
		Tags: map[string]string{"region": cfg.Region, "dc": cfg.Datacenter, "role": "nomad", "build": Version}}
	raftStats, brokerStats := h.srv.Stats()
	out.Stats["raft"] = raftStats
	out.Stats["broker"] = map[string]string{
		"total_ready": strconv.Itoa(brokerStats.TotalReady), "total_unacked": strconv.Itoa(brokerStats.TotalUnacked),
	}
	if c := h.agent.client; c != nil {
		out.Stats["client"] = map[string]string{"node_id": c.NodeID()}
	}
	out.Stats["runtime"] = map[string]string{"goroutines": strconv.Itoa(runtime.NumGoroutine()), "version": runtime.Version()}
	return out, 0, nil
}

func (h *HTTPServer) statusLeader(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	return h.srv.Leader(), 0, nil
}

func (h *HTTPServer) statusPeers(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	peers := h.srv.Peers()
	if peers == nil {
		peers = []string{}
	}
	return peers, 0, nil
}

// regions serves GET /v1/regions: this server's region and every region
// with an alive server, sorted.
func (h *HTTPServer) regions(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	return h.srv.Regions(), 0, nil
}

// metricsHandler serves the agent's metrics as JSON, or in Prometheus text
// format with ?format=prometheus.
func (h *HTTPServer) metricsHandler(w http.ResponseWriter, r *http.Request) {
	h.agent.metrics.refresh(h.srv)
	if r.URL.Query().Get("format") == "prometheus" {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		if err := h.agent.metrics.registry.WritePrometheus(w); err != nil {
			h.logger.Error("write metrics", "error", err)
		}
		return
	}
	h.serve(w, r, func(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
		return h.agent.metrics.registry.Snapshot(), 0, nil
	})
}
