package nomad

import (
	"github.com/drover-project/drover/nomad/structs"
)

// NodeRegister registers (or re-registers) a client node and creates an
// evaluation of every system and sysbatch job so the node gets its
// allocations. A re-registration must present the node's secret.
func (s *Server) NodeRegister(node *structs.Node) (uint64, []string, error) {
	if err := validateNode(node); err != nil {
		return 0, nil, err
	}
	existing, err := s.State().NodeByID(nil, node.ID)
	if err != nil {
		return 0, nil, err
	}
	if existing != nil && existing.SecretID != "" && existing.SecretID != node.SecretID {
		return 0, nil, structs.BadRequestf("node secret ID does not match")
	}
	if node.Status == "" {
		node.Status = structs.NodeStatusReady
	}
	if node.SchedulingEligibility == "" {
		node.SchedulingEligibility = structs.NodeSchedulingEligible
	}
	node.StatusUpdatedAt = s.now().Unix()
	evals, err := s.nodeEvals(node.ID)
	if err != nil {
		return 0, nil, err
	}
	_, index, err := s.raftApply(structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node})
	if err != nil {
		return 0, nil, err
	}
	ids, err := s.createEvals(evals)
	return index, ids, err
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
	return nil
}

// nodeEvals returns one pending evaluation per live system or sysbatch job,
// triggered by a change of nodeID.
func (s *Server) nodeEvals(nodeID string) ([]*structs.Evaluation, error) {
	jobs, err := s.State().Jobs(nil, "*")
	if err != nil {
		return nil, err
	}
	var evals []*structs.Evaluation
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

// NodeUpdateStatus sets a node's status; a change creates evaluations of the
// system jobs.
func (s *Server) NodeUpdateStatus(nodeID, status string) (uint64, error) {
	node, err := s.State().NodeByID(nil, nodeID)
	if err != nil {
		return 0, err
	}
	if node == nil {
		return 0, structs.NotFoundf("node not found")
	}
	switch status {
	case structs.NodeStatusInit, structs.NodeStatusReady, structs.NodeStatusDown:
	default:
		return 0, structs.BadRequestf("invalid node status %q", status)
	}
	req := &structs.NodeUpdateStatusRequest{NodeID: nodeID, Status: status, UpdatedAt: s.now().Unix()}
	if status != node.Status {
		if req.Evals, err = s.nodeEvals(nodeID); err != nil {
			return 0, err
		}
	}
	_, index, err := s.raftApply(structs.NodeUpdateStatusRequestType, req)
	return index, err
}

// AllocClientUpdate records client-reported allocation status.
func (s *Server) AllocClientUpdate(allocs []*structs.Allocation) (uint64, error) {
	_, index, err := s.raftApply(structs.AllocClientUpdateRequestType,
		&structs.AllocClientUpdateRequest{Allocs: allocs, UpdatedAt: s.now().UnixNano()})
	return index, err
}
