package agent

import (
	"net/http"
	"strconv"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/nomad/structs"
)

// operatorSchedulerGet serves GET /v1/operator/scheduler/configuration.
func (h *HTTPServer) operatorSchedulerGet(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	cfg, index, err := h.srv.SchedulerConfig(aclOf(r))
	if err != nil {
		return nil, 0, err
	}
	return &api.SchedulerConfigurationResponse{SchedulerConfig: schedulerConfigToAPI(cfg)}, index, nil
}

// operatorSchedulerSet serves PUT /v1/operator/scheduler/configuration
// [?cas=<modify index>].
func (h *HTTPServer) operatorSchedulerSet(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var in api.SchedulerConfiguration
	if err := decodeBody(r, &in); err != nil {
		return nil, 0, err
	}
	cfg := &structs.SchedulerConfiguration{
		SchedulerAlgorithm: string(in.SchedulerAlgorithm),
		PreemptionConfig: structs.PreemptionConfig{
			SystemSchedulerEnabled:   in.PreemptionConfig.SystemSchedulerEnabled,
			SysBatchSchedulerEnabled: in.PreemptionConfig.SysBatchSchedulerEnabled,
			BatchSchedulerEnabled:    in.PreemptionConfig.BatchSchedulerEnabled,
			ServiceSchedulerEnabled:  in.PreemptionConfig.ServiceSchedulerEnabled,
		},
		MemoryOversubscriptionEnabled: in.MemoryOversubscriptionEnabled,
		RejectJobRegistration:         in.RejectJobRegistration,
		PauseEvalBroker:               in.PauseEvalBroker,
		NodeLimitForFeasibilityChecks: in.NodeLimitForFeasibilityChecks,
	}
	cas := false
	if v := r.URL.Query().Get("cas"); v != "" {
		idx, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, 0, badRequest("Error parsing cas value: %v", err)
		}
		cfg.ModifyIndex, cas = idx, true
	}
	updated, index, err := h.srv.SetSchedulerConfig(aclOf(r), cfg, cas)
	if err != nil {
		return nil, 0, err
	}
	return &api.SchedulerSetConfigurationResponse{Updated: updated, WriteMeta: api.WriteMeta{LastIndex: index}}, index, nil
}

func schedulerConfigToAPI(c *structs.SchedulerConfiguration) *api.SchedulerConfiguration {
	return &api.SchedulerConfiguration{
		SchedulerAlgorithm: api.SchedulerAlgorithm(c.SchedulerAlgorithm),
		PreemptionConfig: api.PreemptionConfig{
			SystemSchedulerEnabled:   c.PreemptionConfig.SystemSchedulerEnabled,
			SysBatchSchedulerEnabled: c.PreemptionConfig.SysBatchSchedulerEnabled,
			BatchSchedulerEnabled:    c.PreemptionConfig.BatchSchedulerEnabled,
			ServiceSchedulerEnabled:  c.PreemptionConfig.ServiceSchedulerEnabled,
		},
		MemoryOversubscriptionEnabled: c.MemoryOversubscriptionEnabled,
		RejectJobRegistration:         c.RejectJobRegistration,
		PauseEvalBroker:               c.PauseEvalBroker,
		NodeLimitForFeasibilityChecks: c.NodeLimitForFeasibilityChecks,
		CreateIndex:                   c.CreateIndex,
		ModifyIndex:                   c.ModifyIndex,
	}
}
