package agent

import (
	"net/http"

	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/wire"
)

// Ahead-of-wave prefetch (nomad/prefetch): the leader keeps the record in
// memory, so both endpoints are forwarded to the leader.

// internalNodePrefetch answers a client's blocking query for its node's
// prefetch directives: GET /v1/internal/node/{id}/prefetch?index=&wait=.
func (h *HTTPServer) internalNodePrefetch(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	if err := h.checkNodeSecret(r); err != nil {
		return nil, 0, err
	}
	opts, err := parseQuery(r)
	if err != nil {
		return nil, 0, err
	}
	dirs, index := h.srv.PrefetchDirectives(r.Context(), r.PathValue("id"), opts.minIndex, opts.wait)
	out := &wire.PrefetchDirectives{Directives: dirs, Index: index}
	if out.Directives == nil {
		out.Directives = []*structs.PrefetchDirective{}
	}
	return out, out.Index, nil
}

// internalNodePrefetchReport takes a client's prefetch reports:
// PUT /v1/internal/node/{id}/prefetch with a wire.PrefetchReportRequest.
func (h *HTTPServer) internalNodePrefetchReport(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req wire.PrefetchReportRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, 0, err
	}
	if err := h.checkNodeSecret(r); err != nil {
		return nil, 0, err
	}
	for i, rep := range req.Reports {
		switch {
		case rep == nil || rep.DeploymentID == "":
			return nil, 0, badRequest("Reports[%d].DeploymentID must be specified", i)
		case rep.State != structs.PrefetchStateDone && rep.State != structs.PrefetchStateFailed:
			return nil, 0, badRequest("Reports[%d].State must be %q or %q, got %q", i, structs.PrefetchStateDone, structs.PrefetchStateFailed, rep.State)
		}
	}
	h.srv.PrefetchReport(r.PathValue("id"), req.Reports)
	return struct{}{}, 0, nil
}
