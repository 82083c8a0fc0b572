package agent

import (
	"net/http"
	"strconv"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/nomad/structs"
)

// operatorAutopilotGet serves GET /v1/operator/autopilot/configuration.
func (h *HTTPServer) operatorAutopilotGet(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	c, index, err := h.srv.AutopilotConfig(aclOf(r))
	if err != nil {
		return nil, 0, err
	}
	return &api.AutopilotConfiguration{
		CleanupDeadServers: c.CleanupDeadServers, LastContactThreshold: c.LastContactThreshold,
		MaxTrailingLogs: c.MaxTrailingLogs, MinQuorum: c.MinQuorum, ServerStabilizationTime: c.ServerStabilizationTime,
		EnableRedundancyZones: c.EnableRedundancyZones, DisableUpgradeMigration: c.DisableUpgradeMigration,
		EnableCustomUpgrades: c.EnableCustomUpgrades, CreateIndex: c.CreateIndex, ModifyIndex: c.ModifyIndex,
	}, index, nil
}

// operatorAutopilotSet serves PUT /v1/operator/autopilot/configuration
// [?cas=<modify index>]; the body of the answer is true or false.
func (h *HTTPServer) operatorAutopilotSet(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var in api.AutopilotConfiguration
	if err := decodeBody(r, &in); err != nil {
		return nil, 0, err
	}
	cfg := &structs.AutopilotConfiguration{
		CleanupDeadServers: in.CleanupDeadServers, LastContactThreshold: in.LastContactThreshold,
		MaxTrailingLogs: in.MaxTrailingLogs, MinQuorum: in.MinQuorum, ServerStabilizationTime: in.ServerStabilizationTime,
		EnableRedundancyZones: in.EnableRedundancyZones, DisableUpgradeMigration: in.DisableUpgradeMigration,
		EnableCustomUpgrades: in.EnableCustomUpgrades,
	}
	cas := false
	if v := r.URL.Query().Get("cas"); v != "" {
		idx, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, 0, badRequest("Error parsing cas value: %v", err)
		}
		cfg.ModifyIndex, cas = idx, true
	}
	updated, index, err := h.srv.SetAutopilotConfig(aclOf(r), cfg, cas)
	if err != nil {
		return nil, 0, err
	}
	return updated, index, nil
}

// operatorAutopilotHealth serves GET /v1/operator/autopilot/health (on the
// leader): 200 when every server is healthy, 429 otherwise, as Nomad does.
func (h *HTTPServer) operatorAutopilotHealth(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	ch, err := h.srv.AutopilotHealth(r.Context(), aclOf(r))
	if err != nil {
		return nil, 0, err
	}
	out := &api.OperatorHealthReply{Healthy: ch.Healthy, FailureTolerance: ch.FailureTolerance,
		Leader: ch.Leader, Voters: ch.Voters}
	for _, s := range ch.Servers {
		out.Servers = append(out.Servers, api.ServerHealth{ID: s.ID, Name: s.Name, Address: s.Address,
			SerfStatus: s.Status, Version: Version, Leader: s.Leader, LastContact: s.LastContact,
			LastTerm: s.LastTerm, LastIndex: s.LastIndex, Healthy: s.Healthy, Voter: s.Voter, StableSince: s.StableSince})
	}
	return &healthReply{OperatorHealthReply: out}, 0, nil
}

// healthReply is the health report, sent with 429 when unhealthy.
type healthReply struct {
	*api.OperatorHealthReply
}

// StatusCode implements statusCoder.
func (h *healthReply) StatusCode() int {
	if h.Healthy {
		return http.StatusOK
	}
	return http.StatusTooManyRequests
}
