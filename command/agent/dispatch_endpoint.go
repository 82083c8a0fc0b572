package agent

import (
	"net/http"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/nomad"
)

// jobDispatchResponse is Nomad's body of /v1/job/:id/dispatch.
type jobDispatchResponse struct {
	DispatchedJobID string
	EvalID          string
	EvalCreateIndex uint64
	JobCreateIndex  uint64
	Index           uint64
}

func (h *HTTPServer) jobDispatch(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req api.JobDispatchRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, 0, err
	}
	id := r.PathValue("id")
	if req.JobID != "" && req.JobID != id {
		return nil, 0, badRequest("Job ID does not match")
	}
	reply, err := h.srv.JobDispatch(&nomad.JobDispatchArgs{
		Namespace: namespace(r), JobID: id, Payload: req.Payload, Meta: req.Meta,
		IdempotencyToken: r.URL.Query().Get("idempotency_token"),
		IDPrefixTemplate: req.IdPrefixTemplate, Priority: req.Priority, ACL: aclOf(r),
	})
	if err != nil {
		return nil, 0, err
	}
	return &jobDispatchResponse{DispatchedJobID: reply.DispatchedJobID, EvalID: reply.EvalID,
		EvalCreateIndex: reply.EvalCreateIndex, JobCreateIndex: reply.JobCreateIndex, Index: reply.Index}, reply.Index, nil
}
