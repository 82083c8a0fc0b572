package agent

import (
	"context"
	"net/http"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/helper/apiconv"
	"github.com/drover-project/drover/nomad"
	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/wire"
)

// Nodes: the list (with prefix look-ups), single reads and the operator's
// actions, and the client agents' protocol (register, heartbeat, the
// allocation query and updates, authenticated by the node's secret), all
// answered by the server (nomad/node_endpoint.go).

func (h *HTTPServer) nodesList(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	withResources, err := boolParam(r, "resources", false)
	if err != nil {
		return nil, 0, err
	}
	withOS, err := boolParam(r, "os", false)
	if err != nil {
		return nil, 0, err
	}
	f, err := parseFilter(r)
	if err != nil {
		return nil, 0, err
	}
	opts, err := queryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	stub := func(n *structs.Node) *api.NodeListStub {
		st := apiconv.NodeStubToAPI(n)
		if withResources || withOS {
			full := apiconv.NodeToAPI(n)
			if withResources {
				st.NodeResources, st.ReservedResources = full.NodeResources, full.ReservedResources
			}
			if withOS {
				st.Attributes = map[string]string{"os.name": n.Attributes["os.name"]}
			}
		}
		return st
	}
	opts.Prefix = prefixParam(r)
	opts.Filter = filterOf(f, func(n *structs.Node) any { return stub(n) })
	nodes, meta, err := h.srv.NodeList(r.Context(), opts)
	if err != nil {
		return nil, metaIndex(meta), err
	}
	out := make([]*api.NodeListStub, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, stub(n))
	}
	return out, metaIndex(meta), nil
}

func (h *HTTPServer) nodeGet(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	return serveByID(r, h.srv.NodeGet, nodeToWire)
}

func (h *HTTPServer) nodeAllocations(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	return serveByID(r, h.srv.NodeAllocations, func(allocs []*structs.Allocation) []*api.Allocation {
		out := make([]*api.Allocation, 0, len(allocs))
		for _, a := range allocs {
			out = append(out, apiconv.AllocToAPI(a))
		}
		return out
	})
}

func (h *HTTPServer) internalNodeRegister(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req wire.NodeRegisterRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, 0, err
	}
	if req.Node == nil {
		return nil, 0, badRequest("Node must be specified")
	}
	node := apiconv.NodeFromAPI(req.Node)
	node.SecretID = req.SecretID
	node.NodeResources.NodeNetworks = req.NodeNetworks
	index, evals, ttl, err := h.srv.NodeRegister(node, req.IntroToken)
	if err != nil {
		return nil, 0, err
	}
	return &wire.NodeRegisterResponse{EvalIDs: evals, Index: index, HeartbeatTTL: ttl}, index, nil
}

func (h *HTTPServer) internalNodeHeartbeat(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req wire.NodeHeartbeatRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, 0, err
	}
	ttl, index, err := h.srv.NodeHeartbeat(nodeCaller(r), req.Status)
	if err != nil {
		return nil, 0, err
	}
	return &wire.NodeHeartbeatResponse{HeartbeatTTL: ttl, Index: index}, index, nil
}

func (h *HTTPServer) nodeEligibility(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req api.NodeUpdateEligibilityRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, 0, err
	}
	if req.NodeID != "" && req.NodeID != r.PathValue("id") {
		return nil, 0, badRequest("Node ID does not match")
	}
	index, evals, err := h.srv.NodeUpdateEligibility(aclOf(r), r.PathValue("id"), req.Eligibility)
	if err != nil {
		return nil, 0, err
	}
	return &api.NodeEligibilityUpdateResponse{NodeModifyIndex: index, EvalIDs: evals, EvalCreateIndex: index,
		WriteMeta: api.WriteMeta{LastIndex: index}}, index, nil
}

func (h *HTTPServer) nodeDrain(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req api.NodeUpdateDrainRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, 0, err
	}
	if req.NodeID != "" && req.NodeID != r.PathValue("id") {
		return nil, 0, badRequest("Node ID does not match")
	}
	in := &structs.NodeUpdateDrainRequest{NodeID: r.PathValue("id"), Drain: req.DrainSpec != nil,
		MarkEligible: req.MarkEligible, Meta: req.Meta}
	if req.DrainSpec != nil {
		in.Spec = structs.DrainSpec{Deadline: req.DrainSpec.Deadline, IgnoreSystemJobs: req.DrainSpec.IgnoreSystemJobs}
	}
	index, evals, err := h.srv.NodeDrain(aclOf(r), in)
	if err != nil {
		return nil, 0, err
	}
	return &api.NodeDrainUpdateResponse{NodeModifyIndex: index, EvalIDs: evals, EvalCreateIndex: index,
		WriteMeta: api.WriteMeta{LastIndex: index}}, index, nil
}

// internalNodeAllocs answers a client's blocking query for the
// allocations of its node, with their jobs (see the server's
// NodeClientAllocs).
func (h *HTTPServer) internalNodeAllocs(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	opts, err := queryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	opts.AllowStale = true // answered by the server the client reaches
	caller := nodeCaller(r)
	if opts.MinIndex > 0 && h.polls.canPark(r) {
		// Ask without waiting first: an answer due now, or an error, is
		// answered here; a poll that would wait parks (parked_poll.go).
		now := opts
		now.MinIndex = 0
		allocs, meta, err := h.srv.NodeClientAllocs(r.Context(), caller, now)
		if err != nil || meta.Index > opts.MinIndex {
			return nodeAllocsAnswer(allocs, meta, err)
		}
		if h.park(w, r, func(ctx context.Context) (any, uint64, error) {
			return nodeAllocsAnswer(h.srv.NodeClientAllocs(ctx, caller, opts))
		}) {
			return parkedAnswer{}, 0, nil
		}
	}
	return nodeAllocsAnswer(h.srv.NodeClientAllocs(r.Context(), caller, opts))
}

// nodeAllocsAnswer is internalNodeAllocs' answer for a NodeClientAllocs
// result.
func nodeAllocsAnswer(allocs []nomad.NodeClientAlloc, meta nomad.QueryMeta, err error) (any, uint64, error) {
	if err != nil {
		return nil, 0, err
	}
	out := make([]*wire.NodeAlloc, 0, len(allocs))
	for _, na := range allocs {
		job, err := apiconv.JobJSON(na.Alloc.Job)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, &wire.NodeAlloc{Allocation: apiconv.AllocToAPIWithoutJob(na.Alloc), Job: job, SignedIdentities: na.Alloc.SignedIdentities,
			PreviousNodeAddr: na.PreviousNodeAddr, MigrateToken: na.MigrateToken})
	}
	return out, metaIndex(meta), nil
}

func (h *HTTPServer) internalAllocUpdate(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req wire.AllocUpdateRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, 0, err
	}
	updates := make([]*structs.Allocation, 0, len(req.Allocs))
	for _, a := range req.Allocs {
		if a == nil {
			return nil, 0, badRequest("null allocation in the request")
		}
		updates = append(updates, apiconv.AllocUpdateFromAPI(a))
	}
	index, err := h.srv.NodeAllocUpdate(nodeCaller(r), updates)
	if err != nil {
		return nil, 0, err
	}
	return &api.WriteMeta{LastIndex: index}, index, nil
}

// internalIdentityRenew signs again workload identities of a task the
// node runs (see the server's RenewIdentities).
func (h *HTTPServer) internalIdentityRenew(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req wire.IdentityRenewRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, 0, err
	}
	tokens, err := h.srv.RenewIdentities(nodeCaller(r), req.AllocID, req.Task, req.Identities)
	if err != nil {
		return nil, 0, err
	}
	return &wire.IdentityRenewResponse{Tokens: tokens}, 0, nil
}

// nodeCaller is the client agent a client-protocol request comes from:
// the node of its path and the node's secret ID, sent as X-Nomad-Token
// (the server authenticates it).
func nodeCaller(r *http.Request) nomad.NodeCaller {
	return nomad.NodeCaller{NodeID: r.PathValue("id"), SecretID: r.Header.Get("X-Nomad-Token")}
}
