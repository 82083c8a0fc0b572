package agent

import "net/http"

// periodicForceResponse is Nomad's body of /v1/job/:id/periodic/force.
type periodicForceResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	Index           uint64
}

func (h *HTTPServer) jobPeriodicForce(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	reply, err := h.srv.PeriodicForce(aclOf(r), namespace(r), r.PathValue("id"))
	if err != nil {
		return nil, 0, err
	}
	return &periodicForceResponse{EvalID: reply.EvalID, EvalCreateIndex: reply.EvalCreateIndex, Index: reply.Index}, reply.Index, nil
}
