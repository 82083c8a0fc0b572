package agent

import (
	"net/http"

	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/helper/apiconv"
	"github.com/drover-project/drover/nomad/state"
)

// evalsDelete serves DELETE /v1/evaluations: the evaluations named in the
// body are deleted, only while the scheduler configuration pauses the
// evaluation broker.
func (h *HTTPServer) evalsDelete(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req api.EvalDeleteRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, 0, err
	}
	if req.Filter != "" {
		return nil, 0, badRequest("Filter: deleting evaluations by filter is not supported; name them in EvalIDs")
	}
	index, err := h.srv.DeleteEvals(req.EvalIDs)
	if err != nil {
		return nil, 0, err
	}
	return &api.EvalDeleteResponse{Count: len(req.EvalIDs)}, index, nil
}

// evalsCount serves GET /v1/evaluations/count: the number of evaluations
// of the namespace ("*": all) the filter parameter selects.
func (h *HTTPServer) evalsCount(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	ns := namespace(r)
	f, err := parseFilter(r)
	if err != nil {
		return nil, 0, err
	}
	out, index, err := h.blockingQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
		evals, err := snap.Evals(ws, ns)
		if err != nil {
			return nil, 0, err
		}
		list := make([]*api.Evaluation, 0, len(evals))
		for _, e := range evals {
			list = append(list, apiconv.EvalToAPI(e))
		}
		list, err = applyFilter(f, list)
		if err != nil {
			return nil, 0, err
		}
		return &api.EvalCountResponse{Count: len(list)}, tableIndex(snap, state.TableEvals), nil
	})
	return out, h.listIndex(index, state.TableEvals), err
}
