package agent

import (
	"net/http"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/helper/apiconv"
	"github.com/drover-project/drover/nomad"
	"github.com/drover-project/drover/nomad/structs"
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
	index, err := h.srv.DeleteEvals(aclOf(r), req.EvalIDs)
	if err != nil {
		return nil, 0, err
	}
	return &api.EvalDeleteResponse{Count: len(req.EvalIDs)}, index, nil
}

// evalsCount serves GET /v1/evaluations/count: the number of evaluations
// of the namespace ("*": all) the filter parameter selects.
func (h *HTTPServer) evalsCount(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	f, err := parseFilter(r)
	if err != nil {
		return nil, 0, err
	}
	opts, err := queryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	opts.Filter = filterOf(f, evalFilterForm)
	count, meta, err := h.srv.EvalCount(r.Context(), opts)
	if err != nil {
		return nil, metaIndex(meta), err
	}
	return &api.EvalCountResponse{Count: count}, metaIndex(meta), nil
}

func evalFilterForm(e *structs.Evaluation) any { return apiconv.EvalToAPI(e) }

// evalsList serves GET /v1/evaluations: prefix, filter, then the page
// (per_page, next_token, reverse; see the server's EvalList).
func (h *HTTPServer) evalsList(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	f, err := parseFilter(r)
	if err != nil {
		return nil, 0, err
	}
	opts, err := queryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	if err := pagingOptions(r, &opts); err != nil {
		return nil, 0, err
	}
	opts.Prefix = prefixParam(r)
	opts.Filter = filterOf(f, evalFilterForm)
	evals, meta, err := h.srv.EvalList(r.Context(), opts)
	if err != nil {
		return nil, metaIndex(meta), err
	}
	setNextToken(w, meta.NextToken)
	out := make([]*api.Evaluation, 0, len(evals))
	for _, e := range evals {
		out = append(out, apiconv.EvalToAPI(e))
	}
	return out, metaIndex(meta), nil
}

// pagingOptions adds per_page, next_token and reverse to opts.
func pagingOptions(r *http.Request, opts *nomad.QueryOptions) error {
	reverse, err := boolParam(r, "reverse", false)
	if err != nil {
		return err
	}
	opts.Reverse = reverse
	return pageParams(r, opts)
}

func (h *HTTPServer) evalGet(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	opts, err := queryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	reply, meta, err := h.srv.EvalGet(r.Context(), opts, r.PathValue("id"), r.URL.Query().Get("related") == "true")
	if err != nil {
		return nil, metaIndex(meta), err
	}
	out := apiconv.EvalToAPI(reply.Eval)
	if reply.Related != nil {
		out.RelatedEvals = make([]*api.EvaluationStub, 0, len(reply.Related))
		for _, x := range reply.Related {
			out.RelatedEvals = append(out.RelatedEvals, evalStub(x))
		}
	}
	return out, metaIndex(meta), nil
}

func evalStub(x *structs.Evaluation) *api.EvaluationStub {
	return &api.EvaluationStub{
		ID: x.ID, Priority: x.Priority, Type: x.Type, TriggeredBy: x.TriggeredBy, Namespace: x.Namespace,
		JobID: x.JobID, NodeID: x.NodeID, DeploymentID: x.DeploymentID, Status: x.Status,
		StatusDescription: x.StatusDescription, WaitUntil: x.WaitUntil, NextEval: x.NextEval,
		PreviousEval: x.PreviousEval, BlockedEval: x.BlockedEval, CreateIndex: x.CreateIndex,
		ModifyIndex: x.ModifyIndex, CreateTime: x.CreateTime, ModifyTime: x.ModifyTime,
	}
}

func (h *HTTPServer) evalAllocations(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	return serveByID(r, h.srv.EvalAllocations, allocStubs)
}
