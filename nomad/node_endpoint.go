package nomad

import (
	"context"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// NodeRegister registers (or re-registers) a client node and creates an
// evaluation of every system and sysbatch job so the node gets its
// allocations. A re-registration must present the node's secret; a first
// registration is checked against the client_introduction enforcement with
// introToken (see checkIntroduction). It returns the raft index, the
// evaluations and the heartbeat TTL.
func (s *Server) NodeRegister(node *structs.Node, introToken string) (uint64, []string, time.Duration, error) {
	if err := validateNode(node); err != nil {
		return 0, nil, 0, err
	}
	existing, err := s.State().NodeByID(nil, node.ID)
	if err != nil {
		return 0, nil, 0, err
	}
	if existing != nil && existing.SecretID != "" && existing.SecretID != node.SecretID {
		return 0, nil, 0, structs.BadRequestf("node secret ID does not match")
	}
	if err := s.checkIntroduction(node, introToken, existing == nil); err != nil {
		return 0, nil, 0, err
	}
	if node.Status == "" || node.Status == structs.NodeStatusDown || node.Status == structs.NodeStatusDisconnected {
		node.Status = structs.NodeStatusReady
	}
	if node.SchedulingEligibility == "" {
		node.SchedulingEligibility = structs.NodeSchedulingEligible
	}
	node.StatusUpdatedAt = s.now().Unix()
	if existing == nil {
		node.Events = append(node.Events, &structs.NodeEvent{Message: "Node registered", Subsystem: "Cluster",
			Timestamp: s.now().UTC()})
	}
	evals, err := s.nodeEvals(node.ID)
	if err != nil {
		return 0, nil, 0, err
	}
	_, index, err := s.raftApply(structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node})
	if err != nil {
		return 0, nil, 0, err
	}
	ttl := s.resetHeartbeat(node.ID)
	ids, err := s.createEvals(evals)
	return index, ids, ttl, err
}

// NodeHeartbeat records that a client is alive and reports status (ready or
// initializing). A node that was down or disconnected comes back. It returns the TTL within
// which the client must heartbeat again.
func (s *Server) NodeHeartbeat(caller NodeCaller, status string) (time.Duration, uint64, error) {
	node, err := s.authenticateNode(caller)
	if err != nil {
		return 0, 0, err
	}
	nodeID := node.ID
	switch status {
	case "":
		status = structs.NodeStatusReady
	case structs.NodeStatusReady, structs.NodeStatusInit:
	default:
		return 0, 0, structs.BadRequestf("a client may report status %q or %q, got %q", structs.NodeStatusReady, structs.NodeStatusInit, status)
	}
	var index uint64
	if status != node.Status {
		if index, err = s.updateNodeStatus(nodeID, status, "Node heartbeat received; status "+status); err != nil {
			return 0, 0, err
		}
	}
	return s.resetHeartbeat(nodeID), max(index, s.State().LatestIndex()), nil
}

// NodeUpdateEligibility marks a node eligible or ineligible for placements.
// caller needs node:write (nil: ACLs disabled, or an internal caller).
func (s *Server) NodeUpdateEligibility(caller *acl.ACL, nodeID, eligibility string) (uint64, []string, error) {
	if err := permit(caller.AllowNodeWrite()); err != nil {
		return 0, nil, err
	}
	node, err := s.State().NodeByID(nil, nodeID)
	if err != nil {
		return 0, nil, err
	}
	if node == nil {
		return 0, nil, structs.NotFoundf("node not found")
	}
	switch eligibility {
	case structs.NodeSchedulingEligible, structs.NodeSchedulingIneligible:
	default:
		return 0, nil, structs.BadRequestf("invalid scheduling eligibility %q", eligibility)
	}
	if node.Drain && eligibility == structs.NodeSchedulingEligible {
		return 0, nil, structs.BadRequestf("can not set node's scheduling eligibility to eligible while it is draining")
	}
	req := &structs.NodeUpdateEligibilityRequest{NodeID: nodeID, Eligibility: eligibility, UpdatedAt: s.now().Unix()}
	if eligibility == structs.NodeSchedulingEligible {
		if req.Evals, err = s.nodeEvals(nodeID); err != nil {
			return 0, nil, err
		}
	}
	_, index, err := s.raftApply(structs.NodeUpdateEligibilityRequestType, req)
	return index, evalIDs(req.Evals), err
}

// NodeUpdateDrain starts or ends a drain. Draining stops the node's system
// allocations (the evaluations it creates do) and the drain completes once
// none is left; the node then stays ineligible. Ending a drain early with
// markEligible makes the node eligible again. caller needs node:write.
func (s *Server) NodeUpdateDrain(caller *acl.ACL, nodeID string, drain, markEligible bool) (uint64, []string, error) {
	return s.NodeDrain(caller, &structs.NodeUpdateDrainRequest{NodeID: nodeID, Drain: drain, MarkEligible: markEligible})
}

// NodeDrain applies req (NodeID, Drain, MarkEligible, Spec, Meta,
// Complete), as NodeUpdateDrain describes; the leader stamps the times.
// caller needs node:write (nil: ACLs disabled, or the drainer itself).
func (s *Server) NodeDrain(caller *acl.ACL, in *structs.NodeUpdateDrainRequest) (uint64, []string, error) {
	if err := permit(caller.AllowNodeWrite()); err != nil {
		return 0, nil, err
	}
	nodeID := in.NodeID
	node, err := s.State().NodeByID(nil, nodeID)
	if err != nil {
		return 0, nil, err
	}
	if node == nil {
		return 0, nil, structs.NotFoundf("node not found")
	}
	req := *in
	now := s.now()
	req.UpdatedAt, req.Time = now.Unix(), now.UTC()
	if req.Evals, err = s.nodeEvals(nodeID); err != nil {
		return 0, nil, err
	}
	_, index, err := s.raftApply(structs.NodeUpdateDrainRequestType, &req)
	return index, evalIDs(req.Evals), err
}

func evalIDs(evals []*structs.Evaluation) []string {
	ids := make([]string, len(evals))
	for i, e := range evals {
		ids[i] = e.ID
	}
	return ids
}

// validateNode refuses registrations that name no ID, secret or datacenter.
func validateNode(n *structs.Node) error {
	var missing []string
	if n.ID == "" {
		missing = append(missing, "ID")
	}
	if n.SecretID == "" {
		missing = append(missing, "SecretID")
	}
	if n.Datacenter == "" {
		missing = append(missing, "Datacenter")
	}
	if len(missing) > 0 {
		return structs.BadRequestf("node registration is missing %v", missing)
	}
	if err := structs.ValidatePortSpec(n.ReservedResources.Networks.ReservedHostPorts); err != nil {
		return structs.BadRequestf("ReservedResources.Networks.ReservedHostPorts: %v", err)
	}
	return structs.ValidateNodeNetworks(n.NodeResources.NodeNetworks)
}

// nodeEvals returns one pending evaluation per live job, triggered by a
// change of nodeID, plus the blocked evaluations of those jobs made pending
// again (the node may be the capacity they wait for).
func (s *Server) nodeEvals(nodeID string) ([]*structs.Evaluation, error) {
	jobs, err := s.State().Jobs(nil, "*")
	if err != nil {
		return nil, err
	}
	evals, err := s.blockedEvals(nil)
	if err != nil {
		return nil, err
	}
	for _, j := range jobs {
		if j.Stop {
			continue
		}
		e := s.newEval(j, structs.EvalTriggerNodeUpdate)
		e.NodeID = nodeID
		e.JobModifyIndex = j.JobModifyIndex
		evals = append(evals, e)
	}
	return evals, nil
}

// createEvals commits evals and returns their IDs.
func (s *Server) createEvals(evals []*structs.Evaluation) ([]string, error) {
	if len(evals) == 0 {
		return nil, nil
	}
	if _, _, err := s.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: evals}); err != nil {
		return nil, err
	}
	ids := make([]string, len(evals))
	for i, e := range evals {
		ids[i] = e.ID
	}
	return ids, nil
}

// updateNodeStatus sets a node's status with an event; a change creates
// evaluations of the system jobs.
func (s *Server) updateNodeStatus(nodeID, status, message string) (uint64, error) {
	node, err := s.State().NodeByID(nil, nodeID)
	if err != nil {
		return 0, err
	}
	if node == nil {
		return 0, structs.NotFoundf("node not found")
	}
	switch status {
	case structs.NodeStatusInit, structs.NodeStatusReady, structs.NodeStatusDown, structs.NodeStatusDisconnected:
	default:
		return 0, structs.BadRequestf("invalid node status %q", status)
	}
	now := s.now()
	req := &structs.NodeUpdateStatusRequest{NodeID: nodeID, Status: status, UpdatedAt: now.Unix(),
		Event: &structs.NodeEvent{Message: message, Subsystem: "Cluster", Timestamp: now}}
	if status != node.Status {
		if req.Evals, err = s.nodeEvals(nodeID); err != nil {
			return 0, err
		}
	}
	_, index, err := s.raftApply(structs.NodeUpdateStatusRequestType, req)
	return index, err
}

// AllocClientUpdate records client-reported allocation status, then
// creates the evaluations the updates call for (allocUpdateEvals). Updates
// from many clients are committed together (allocUpdateBatcher); it
// returns once the batch carrying allocs is applied.
func (s *Server) AllocClientUpdate(allocs []*structs.Allocation) (uint64, error) {
	return s.allocUpdates.submit(allocs, s.anyDecisiveUpdate(allocs))
}

// anyDecisiveUpdate reports whether an update of allocs decides something
// (decisiveUpdate) against the local state: such a batch is not held back
// by the window.
func (s *Server) anyDecisiveUpdate(allocs []*structs.Allocation) bool {
	snap := s.State()
	for _, a := range allocs {
		stored, err := snap.AllocByID(nil, a.ID)
		if err != nil || decisiveUpdate(a, stored) {
			return true
		}
	}
	return false
}

// applyAllocClientUpdates commits one batch of client updates.
func (s *Server) applyAllocClientUpdates(allocs []*structs.Allocation) (uint64, error) {
	evals, err := s.allocUpdateEvals(allocs)
	if err != nil {
		return 0, err
	}
	_, index, err := s.raftApply(structs.AllocClientUpdateRequestType,
		&structs.AllocClientUpdateRequest{Allocs: allocs, UpdatedAt: s.now().UnixNano()})
	if err != nil {
		return index, err
	}
	_, err = s.createEvals(evals)
	return index, err
}

// The reads of nodes: each needs node read.

// NodeList lists the nodes whose ID starts with opts.Prefix and that
// opts.Filter accepts (it receives each *structs.Node).
func (s *Server) NodeList(ctx context.Context, opts QueryOptions) ([]*structs.Node, QueryMeta, error) {
	if !opts.ACL.AllowNodeRead() {
		return nil, s.refusedMeta(), structs.ErrPermissionDenied
	}
	var out []*structs.Node
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		out = nil
		var nodes []*structs.Node
		var err error
		if opts.Prefix != "" {
			nodes, err = snap.NodesByIDPrefix(ws, opts.Prefix)
		} else {
			nodes, err = snap.Nodes(ws)
		}
		if err != nil {
			return 0, err
		}
		nodes, err = applyFilter(&opts, nodes, func(n *structs.Node) any { return n })
		out = nodes
		return tableIndex(snap, state.TableNodes), err
	})
	return out, meta, err
}

// NodeGet returns node id (404 "node not found").
func (s *Server) NodeGet(ctx context.Context, opts QueryOptions, id string) (*structs.Node, QueryMeta, error) {
	if !opts.ACL.AllowNodeRead() {
		return nil, s.refusedMeta(), structs.ErrPermissionDenied
	}
	var out *structs.Node
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		n, err := snap.NodeByID(ws, id)
		if err != nil {
			return 0, err
		}
		out = n
		if n == nil {
			return tableIndex(snap, state.TableNodes), structs.NotFoundf("node not found")
		}
		return n.ModifyIndex, nil
	})
	return out, meta, err
}

// NodeAllocations lists the allocations of node id in the namespaces where
// the caller may read jobs.
func (s *Server) NodeAllocations(ctx context.Context, opts QueryOptions, id string) ([]*structs.Allocation, QueryMeta, error) {
	if !opts.ACL.AllowNodeRead() {
		return nil, s.refusedMeta(), structs.ErrPermissionDenied
	}
	var out []*structs.Allocation
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		allocs, err := snap.AllocsByNode(ws, id)
		if err != nil {
			return 0, err
		}
		out = filterByNamespace(opts.ACL, acl.NamespaceCapabilityReadJob, allocs, allocNamespace)
		return tableIndex(snap, state.TableAllocs), nil
	})
	return out, meta, err
}

// The client protocol's reads and checks. Every method a client agent
// calls takes its NodeCaller and authenticates it first.

// NodeCaller is a client agent on the client protocol: the node it speaks
// for and that node's secret ID (sent as X-Nomad-Token).
type NodeCaller struct {
	NodeID, SecretID string
}

// authenticateNode returns the caller's node when the secret is that
// node's (404 "node not found", 403 "Permission denied").
func (s *Server) authenticateNode(c NodeCaller) (*structs.Node, error) {
	node, err := s.State().NodeByID(nil, c.NodeID)
	if err != nil {
		return nil, err
	}
	if node == nil {
		return nil, structs.NotFoundf("node not found")
	}
	if node.SecretID != c.SecretID {
		return nil, structs.ErrPermissionDenied
	}
	return node, nil
}

// NodeAllocUpdate applies a client's reports of its allocations (see
// AllocClientUpdate): every allocation must be the caller's node's, with a
// client status a client may report.
func (s *Server) NodeAllocUpdate(caller NodeCaller, allocs []*structs.Allocation) (uint64, error) {
	if _, err := s.authenticateNode(caller); err != nil {
		return 0, err
	}
	for _, a := range allocs {
		switch a.ClientStatus {
		case structs.AllocClientStatusPending, structs.AllocClientStatusRunning, structs.AllocClientStatusComplete,
			structs.AllocClientStatusFailed, structs.AllocClientStatusLost, structs.AllocClientStatusUnknown:
		default:
			return 0, structs.BadRequestf("allocation %q: invalid ClientStatus %q", a.ID, a.ClientStatus)
		}
		if err := s.checkAllocOfNode(caller.NodeID, a.ID); err != nil {
			return 0, err
		}
	}
	return s.AllocClientUpdate(allocs)
}

// checkAllocOfNode refuses an allocation update a client sends for an
// allocation that is not its node's.
func (s *Server) checkAllocOfNode(nodeID, allocID string) error {
	existing, err := s.State().AllocByID(nil, allocID)
	if err != nil {
		return err
	}
	if existing == nil || existing.NodeID != nodeID {
		return structs.BadRequestf("allocation %q does not belong to node %q", allocID, nodeID)
	}
	return nil
}

// NodeClientAlloc is an allocation a client runs, with where its
// replacement fetches the previous allocation's ephemeral data
// (ephemeral_disk migrate; empty when there is nothing to fetch).
type NodeClientAlloc struct {
	Alloc            *structs.Allocation
	PreviousNodeAddr string
	MigrateToken     string
}

// NodeClientAllocs answers a client's blocking query for the allocations of
// its node, with their jobs. Its index is state.NodeAllocsIndex: the
// client's own status reports wake the query but do not answer it, so a
// fleet's reports do not send every node its list again.
func (s *Server) NodeClientAllocs(ctx context.Context, caller NodeCaller, opts QueryOptions) ([]NodeClientAlloc, QueryMeta, error) {
	if _, err := s.authenticateNode(caller); err != nil {
		return nil, QueryMeta{}, err
	}
	nodeID := caller.NodeID
	var out []NodeClientAlloc
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		out = nil
		allocs, err := snap.AllocsByNode(ws, nodeID)
		if err != nil {
			return 0, err
		}
		peers, err := migrationPeers(snap, nodeID, allocs)
		if err != nil {
			return 0, err
		}
		out = make([]NodeClientAlloc, 0, len(allocs))
		for _, a := range allocs {
			p := peers[a.ID]
			out = append(out, NodeClientAlloc{Alloc: a, PreviousNodeAddr: p.addr, MigrateToken: p.token})
		}
		return snap.NodeAllocsIndex(allocs), nil
	})
	return out, meta, err
}

// migrationPeer is where a replacement's client fetches its previous
// allocation's ephemeral data: the HTTP address of the node that ran it
// and the token that node accepts for it.
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
