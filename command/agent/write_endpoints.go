package agent

import (
	"net/http"

	"github.com/hashicorp/go-memdb"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/helper/apiconv"
	"github.com/drover-project/drover/nomad"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/wire"
)

func deploymentResponse(reply *nomad.DeploymentUpdateReply) (any, uint64, error) {
	return &api.DeploymentUpdateResponse{
		EvalID: reply.EvalID, EvalCreateIndex: reply.EvalCreateIndex,
		DeploymentModifyIndex: reply.DeploymentModifyIndex, RevertedJobVersion: reply.RevertedJobVersion,
		WriteMeta: api.WriteMeta{LastIndex: reply.Index},
	}, reply.Index, nil
}

// checkDeploymentID refuses bodies naming another deployment than the path.
func checkDeploymentID(r *http.Request, bodyID string) error {
	if bodyID != "" && bodyID != r.PathValue("id") {
		return badRequest("Deployment ID does not match")
	}
	return nil
}

func (h *HTTPServer) deploymentPromote(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req api.DeploymentPromoteRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, 0, err
	}
	if err := checkDeploymentID(r, req.DeploymentID); err != nil {
		return nil, 0, err
	}
	reply, err := h.srv.DeploymentPromote(r.PathValue("id"), req.All, req.Groups)
	if err != nil {
		return nil, 0, err
	}
	return deploymentResponse(reply)
}

func (h *HTTPServer) deploymentFail(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	reply, err := h.srv.DeploymentFail(r.PathValue("id"))
	if err != nil {
		return nil, 0, err
	}
	return deploymentResponse(reply)
}

func (h *HTTPServer) deploymentPause(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req api.DeploymentPauseRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, 0, err
	}
	if err := checkDeploymentID(r, req.DeploymentID); err != nil {
		return nil, 0, err
	}
	reply, err := h.srv.DeploymentPause(r.PathValue("id"), req.Pause)
	if err != nil {
		return nil, 0, err
	}
	return deploymentResponse(reply)
}

func (h *HTTPServer) deploymentAllocHealth(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req api.DeploymentAllocHealthRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, 0, err
	}
	if err := checkDeploymentID(r, req.DeploymentID); err != nil {
		return nil, 0, err
	}
	reply, err := h.srv.DeploymentAllocHealth(r.PathValue("id"), req.HealthyAllocationIDs, req.UnhealthyAllocationIDs)
	if err != nil {
		return nil, 0, err
	}
	return deploymentResponse(reply)
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
	if err := h.checkNodeSecret(r); err != nil {
		return nil, 0, err
	}
	ttl, index, err := h.srv.NodeHeartbeat(r.PathValue("id"), req.Status)
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
	index, evals, err := h.srv.NodeUpdateEligibility(r.PathValue("id"), req.Eligibility)
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
	index, evals, err := h.srv.NodeDrain(in)
	if err != nil {
		return nil, 0, err
	}
	return &api.NodeDrainUpdateResponse{NodeModifyIndex: index, EvalIDs: evals, EvalCreateIndex: index,
		WriteMeta: api.WriteMeta{LastIndex: index}}, index, nil
}

// internalNodeAllocs answers a client's blocking query for the allocations
// of its node, with their jobs. Its index is state.NodeAllocsIndex: the
// client's own status reports wake the query but do not answer it, so a
// fleet's reports do not send every node its list again.
func (h *HTTPServer) internalNodeAllocs(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	if err := h.checkNodeSecret(r); err != nil {
		return nil, 0, err
	}
	id := r.PathValue("id")
	type answer struct {
		allocs []*structs.Allocation
		peers  map[string]migrationPeer // by allocation ID
	}
	res, index, err := h.blockingQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
		allocs, err := snap.AllocsByNode(ws, id)
		if err != nil {
			return nil, 0, err
		}
		peers, err := migrationPeers(snap, id, allocs)
		if err != nil {
			return nil, 0, err
		}
		return answer{allocs, peers}, snap.NodeAllocsIndex(allocs), nil
	})
	if err != nil {
		return nil, 0, err
	}
	ans, _ := res.(answer)
	out := make([]*wire.NodeAlloc, 0, len(ans.allocs))
	for _, a := range ans.allocs {
		job, err := apiconv.JobJSON(a.Job)
		if err != nil {
			return nil, 0, err
		}
		peer := ans.peers[a.ID]
		out = append(out, &wire.NodeAlloc{Allocation: apiconv.AllocToAPIWithoutJob(a), Job: job, SignedIdentities: a.SignedIdentities,
			PreviousNodeAddr: peer.addr, MigrateToken: peer.token})
	}
	return out, index, nil
}

// migrationPeer is where a replacement's client fetches its previous
// allocation's ephemeral data (ephemeral_disk migrate): the HTTP address
// of the node that ran it and the token that node accepts for it.
type migrationPeer struct{ addr, token string }

// migrationPeers returns the peers of node's live allocations whose group's
// ephemeral disk migrates and whose previous allocation ran on another node
// that is still known and not down (a lost allocation's data cannot be
// had: its replacement starts at once without it, as in Nomad). The
// previous allocation is read without a watch: its changes do not answer
// the node's query.
func migrationPeers(snap *state.Snapshot, node string, allocs []*structs.Allocation) (map[string]migrationPeer, error) {
	var peers map[string]migrationPeer
	for _, a := range allocs {
		if a.PreviousAllocation == "" || a.ServerTerminal() || a.Job == nil {
			continue
		}
		if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg == nil || tg.EphemeralDisk == nil || !tg.EphemeralDisk.Migrate {
			continue
		}
		prev, err := snap.AllocByID(nil, a.PreviousAllocation)
		if err != nil {
			return nil, err
		}
		if prev == nil || prev.NodeID == node || prev.ClientStatus == structs.AllocClientStatusLost {
			continue
		}
		n, err := snap.NodeByID(nil, prev.NodeID)
		if err != nil {
			return nil, err
		}
		if n == nil || n.HTTPAddr == "" || n.Status == structs.NodeStatusDown {
			continue
		}
		if peers == nil {
			peers = map[string]migrationPeer{}
		}
		peers[a.ID] = migrationPeer{addr: n.HTTPAddr, token: structs.MigrateToken(prev.ID, n.SecretID)}
	}
	return peers, nil
}

func (h *HTTPServer) internalAllocUpdate(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req wire.AllocUpdateRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, 0, err
	}
	if err := h.checkNodeSecret(r); err != nil {
		return nil, 0, err
	}
	nodeID := r.PathValue("id")
	var updates []*structs.Allocation
	for _, a := range req.Allocs {
		u, err := allocClientUpdateFromAPI(a)
		if err != nil {
			return nil, 0, err
		}
		existing, err := h.srv.State().AllocByID(nil, u.ID)
		if err != nil {
			return nil, 0, err
		}
		if existing == nil || existing.NodeID != nodeID {
			return nil, 0, badRequest("allocation %q does not belong to node %q", u.ID, nodeID)
		}
		updates = append(updates, u)
	}
	index, err := h.srv.AllocClientUpdate(updates)
	if err != nil {
		return nil, 0, err
	}
	return &api.WriteMeta{LastIndex: index}, index, nil
}

// checkNodeSecret authenticates a client request by the node's secret ID,
// sent as X-Nomad-Token.
func (h *HTTPServer) checkNodeSecret(r *http.Request) error {
	node, err := h.srv.State().NodeByID(nil, r.PathValue("id"))
	if err != nil {
		return err
	}
	if node == nil {
		return notFound("node not found")
	}
	if node.SecretID != r.Header.Get("X-Nomad-Token") {
		return &httpError{code: http.StatusForbidden, msg: "Permission denied"}
	}
	return nil
}

// allocClientUpdateFromAPI keeps the fields a client may report (status,
// description, task states, deployment health, network status) after
// checking its ClientStatus.
func allocClientUpdateFromAPI(a *api.Allocation) (*structs.Allocation, error) {
	switch a.ClientStatus {
	case structs.AllocClientStatusPending, structs.AllocClientStatusRunning, structs.AllocClientStatusComplete,
		structs.AllocClientStatusFailed, structs.AllocClientStatusLost, structs.AllocClientStatusUnknown:
	default:
		return nil, badRequest("allocation %q: invalid ClientStatus %q", a.ID, a.ClientStatus)
	}
	return apiconv.AllocUpdateFromAPI(a), nil
}
