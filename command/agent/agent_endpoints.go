package agent

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/nomad"
)

// Agent endpoints about the server membership, the agent's health, its
// client's server list and its scheduler workers. They are answered by the
// agent they reach (writes that change the raft configuration go to the
// leader inside the server).

// agentMembers serves GET /v1/agent/members: the servers of every known
// region, each tagged with its region.
func (h *HTTPServer) agentMembers(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	members, err := h.srv.Members(r.Context(), aclOf(r))
	if err != nil {
		return nil, 0, err
	}
	cfg := h.agent.config
	out := &api.ServerMembers{ServerName: cfg.Name, ServerRegion: cfg.Region, ServerDC: cfg.Datacenter}
	for _, m := range members {
		tags := map[string]string{"role": "nomad", "region": m.Region, "id": m.ID}
		if m.Datacenter != "" {
			tags["dc"] = m.Datacenter
		}
		if m.Build != "" {
			tags["build"] = m.Build
		}
		if m.Region == h.srv.Region() {
			role := "follower"
			if m.Leader {
				role = "leader"
			}
			tags["raft_role"], tags["voter"] = role, boolString(m.Voter)
		}
		if m.ID == cfg.Name && m.Region == h.srv.Region() {
			tags["dc"], tags["build"] = cfg.Datacenter, Version
		}
		out.Members = append(out.Members, &api.AgentMember{Name: m.Name, Addr: m.Addr, Port: uint16(m.Port),
			Tags: tags, Status: m.Status})
	}
	return out, 0, nil
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// joinResponse is the body of /v1/agent/join (Nomad's field names).
type joinResponse struct {
	NumJoined int    `json:"num_joined"`
	Error     string `json:"error"`
}

// agentJoin serves PUT /v1/agent/join?address=...: each address is another
// server's rpc (or serf) address.
func (h *HTTPServer) agentJoin(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	addrs := r.URL.Query()["address"]
	if len(addrs) == 0 {
		return nil, 0, badRequest("missing address to join")
	}
	n, err := h.srv.Join(aclOf(r), addrs)
	out := &joinResponse{NumJoined: n}
	if err != nil {
		out.Error = err.Error()
	}
	return out, 0, nil
}

// agentForceLeave serves PUT /v1/agent/force-leave?node=NAME[&prune]: the
// server leaves the raft configuration (Drover has no gossip layer, so a
// forced leave is always a prune).
func (h *HTTPServer) agentForceLeave(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	node := r.URL.Query().Get("node")
	if node == "" {
		return nil, 0, badRequest("missing node to force leave")
	}
	if _, err := boolParam(r, "prune", false); err != nil {
		return nil, 0, err
	}
	return nil, 0, h.srv.ForceLeave(aclOf(r), node)
}

// agentHealth serves GET /v1/agent/health: the server is ok when it knows a
// leader, the client when it is registered; 500 when either is not.
func (h *HTTPServer) agentHealth(w http.ResponseWriter, r *http.Request) {
	out := &api.AgentHealthResponse{}
	ok := true
	if h.srv != nil {
		out.Server = &api.AgentHealth{Ok: h.srv.Leader() != "", Message: "ok"}
		if !out.Server.Ok {
			out.Server.Message, ok = "No cluster leader", false
		}
	}
	if c := h.agent.client; c != nil {
		out.Client = &api.AgentHealth{Ok: true, Message: "ok"}
	}
	code := http.StatusOK
	if !ok {
		code = http.StatusInternalServerError
	}
	h.setMeta(w, 0)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(out)
}

// agentServers serves GET and PUT /v1/agent/servers: the server addresses
// of this agent's client.
func (h *HTTPServer) agentServers(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	c := h.agent.client
	if c == nil {
		return nil, 0, &httpError{code: http.StatusNotImplemented, msg: "Client not enabled"}
	}
	if r.Method == http.MethodGet {
		return c.Servers(), 0, nil
	}
	addrs := r.URL.Query()["address"]
	if len(addrs) == 0 {
		return nil, 0, badRequest("missing server address")
	}
	for _, a := range addrs {
		if strings.TrimSpace(a) == "" {
			return nil, 0, badRequest("server address must not be empty")
		}
	}
	return nil, 0, c.SetServers(addrs)
}

// agentSchedulers serves GET /v1/agent/schedulers.
func (h *HTTPServer) agentSchedulers(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	out := &api.AgentSchedulerWorkersInfo{ServerID: h.agent.config.Name + "." + h.agent.config.Region}
	for _, wi := range h.srv.WorkersInfo() {
		out.Schedulers = append(out.Schedulers, api.AgentSchedulerWorkerInfo{ID: wi.ID,
			EnabledSchedulers: wi.EnabledSchedulers, Started: wi.Started, Status: wi.Status,
			WorkloadStatus: wi.WorkloadStatus})
	}
	return out, 0, nil
}

// agentSchedulerConfig serves GET and PUT /v1/agent/schedulers/config.
func (h *HTTPServer) agentSchedulerConfig(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	if r.Method != http.MethodGet {
		var args api.AgentSchedulerWorkerConfigRequest
		if err := decodeBody(r, &args); err != nil {
			return nil, 0, err
		}
		err := h.srv.SetWorkerPoolConfig(aclOf(r), nomad.WorkerPoolConfig{NumSchedulers: args.NumSchedulers,
			EnabledSchedulers: args.EnabledSchedulers})
		if errors.Is(err, nomad.ErrInvalidWorkerConfig) {
			h.logger.Warn("refused scheduler worker configuration", "error", err)
			return nil, 0, badRequest("Invalid request")
		}
		if err != nil {
			return nil, 0, err
		}
	}
	cfg := h.srv.WorkerPoolConfig()
	return &api.AgentSchedulerWorkerConfigResponse{ServerID: h.agent.config.Name + "." + h.agent.config.Region,
		NumSchedulers: cfg.NumSchedulers, EnabledSchedulers: cfg.EnabledSchedulers}, 0, nil
}
