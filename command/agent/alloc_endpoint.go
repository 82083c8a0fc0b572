package agent

import (
	"net/http"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/helper/apiconv"
	"github.com/drover-project/drover/nomad/structs"
)

// Allocations: the list (with prefix look-ups) and single reads, answered
// by the server (nomad/alloc_endpoint.go). A single allocation is found by
// ID whatever the namespace parameter says (the CLI sends the user's
// namespace, not the object's).

// allocsList serves GET /v1/allocations: stubs, with AllocatedResources
// when resources=true and without TaskStates when task_states=false.
func (h *HTTPServer) allocsList(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	f, err := parseFilter(r)
	if err != nil {
		return nil, 0, err
	}
	withResources, err := boolParam(r, "resources", false)
	if err != nil {
		return nil, 0, err
	}
	withTaskStates, err := boolParam(r, "task_states", true)
	if err != nil {
		return nil, 0, err
	}
	opts, err := queryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	stub := func(a *structs.Allocation) *api.AllocationListStub {
		st := apiconv.AllocStubToAPI(a)
		if withResources {
			st.AllocatedResources = apiconv.AllocatedResourcesToAPI(a.AllocatedResources)
		}
		if !withTaskStates {
			st.TaskStates = nil
		}
		return st
	}
	opts.Prefix = prefixParam(r)
	opts.Filter = filterOf(f, func(a *structs.Allocation) any { return stub(a) })
	allocs, meta, err := h.srv.AllocList(r.Context(), opts)
	if err != nil {
		return nil, metaIndex(meta), err
	}
	out := make([]*api.AllocationListStub, 0, len(allocs))
	for _, a := range allocs {
		out = append(out, stub(a))
	}
	return out, metaIndex(meta), nil
}

func (h *HTTPServer) allocGet(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	return serveByID(r, h.srv.AllocGet, apiconv.AllocToAPI)
}
