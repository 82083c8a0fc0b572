package agent

import (
	"net/http"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/nomad/structs"
)

// nodePurge serves PUT /v1/node/:id/purge.
func (h *HTTPServer) nodePurge(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	evals, index, err := h.srv.NodePurge(aclOf(r), r.PathValue("id"))
	if err != nil {
		return nil, 0, err
	}
	return &api.NodePurgeResponse{EvalIDs: evals, EvalCreateIndex: index, NodeModifyIndex: index}, index, nil
}

// nodeEvalResponse is the body of /v1/node/:id/evaluate (Nomad's shape).
type nodeEvalResponse struct {
	EvalIDs         []string
	EvalCreateIndex uint64
	NodeModifyIndex uint64
	api.WriteMeta
}

// nodeEvaluate serves PUT /v1/node/:id/evaluate.
func (h *HTTPServer) nodeEvaluate(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	evals, index, err := h.srv.NodeEvaluate(aclOf(r), r.PathValue("id"))
	if err != nil {
		return nil, 0, err
	}
	return &nodeEvalResponse{EvalIDs: evals, EvalCreateIndex: index, NodeModifyIndex: index,
		WriteMeta: api.WriteMeta{LastIndex: index}}, index, nil
}

// allocStop serves PUT /v1/allocation/:id/stop. no_shutdown_delay is
// accepted (validated) but the task's shutdown_delay is always honoured.
func (h *HTTPServer) allocStop(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	tr := structs.DesiredTransition{Migrate: true}
	var err error
	if tr.NoShutdownDelay, err = boolParam(r, "no_shutdown_delay", false); err != nil {
		return nil, 0, err
	}
	if tr.Reschedule, err = boolParam(r, "reschedule", false); err != nil {
		return nil, 0, err
	}
	evalID, index, err := h.srv.AllocStop(aclOf(r), r.PathValue("id"), tr)
	if err != nil {
		return nil, 0, err
	}
	return &api.AllocStopResponse{EvalID: evalID, WriteMeta: api.WriteMeta{LastIndex: index}}, index, nil
}
