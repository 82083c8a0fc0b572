package nomad

import (
	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/structs"
)

// NodePurge removes a node from the cluster's state and evaluates every
// job, so that the node's allocations are accounted for; a client still
// running on it registers again with its next heartbeat. It returns the
// evaluations' IDs and the raft index. caller needs node:write (nil: ACLs
// disabled, or an internal caller).
func (s *Server) NodePurge(caller *acl.ACL, nodeID string) ([]string, uint64, error) {
	if err := permit(caller.AllowNodeWrite()); err != nil {
		return nil, 0, err
	}
	node, err := s.State().NodeByID(nil, nodeID)
	if err != nil {
		return nil, 0, err
	}
	if node == nil {
		return nil, 0, structs.NotFoundf("node not found")
	}
	evals, err := s.nodeEvals(nodeID)
	if err != nil {
		return nil, 0, err
	}
	resp, index, err := s.raftApply(structs.NodeDeregisterRequestType,
		&structs.NodeDeregisterRequest{NodeIDs: []string{nodeID}, Evals: evals})
	if err != nil {
		return nil, 0, err
	}
	if rerr, ok := resp.(error); ok {
		return nil, 0, rerr
	}
	s.heartbeats.forget(nodeID)
	return evalIDs(evals), index, nil
}

// NodeEvaluate creates an evaluation of every job for the node (Nomad's
// node-update trigger) and returns their IDs and raft index (0 when there
// was no job to evaluate). caller needs node:write.
func (s *Server) NodeEvaluate(caller *acl.ACL, nodeID string) ([]string, uint64, error) {
	if err := permit(caller.AllowNodeWrite()); err != nil {
		return nil, 0, err
	}
	node, err := s.State().NodeByID(nil, nodeID)
	if err != nil {
		return nil, 0, err
	}
	if node == nil {
		return nil, 0, structs.NotFoundf("node not found")
	}
	evals, err := s.nodeEvals(nodeID)
	if err != nil || len(evals) == 0 {
		return nil, 0, err
	}
	_, index, err := s.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: evals})
	if err != nil {
		return nil, 0, err
	}
	return evalIDs(evals), index, nil
}
