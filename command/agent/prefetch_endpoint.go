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
	opts, err := parseQuery(r)
	if err != nil {
		return nil, 0, err
	}
	dirs, index, err := h.srv.PrefetchDirectives(r.Context(), nodeCaller(r), opts.minIndex, opts.wait)
	if err != nil {
		return nil, 0, err
	}
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
	if err := h.srv.PrefetchReport(nodeCaller(r), req.Reports); err != nil {
		return nil, 0, err
	}
	return struct{}{}, 0, nil
}
