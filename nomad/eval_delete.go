package nomad

import (
	"fmt"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/structs"
)

// ErrEvalBrokerEnabled refuses an evaluation delete while the broker runs
// (Nomad's wording).
var ErrEvalBrokerEnabled = &structs.RequestError{Kind: structs.ErrBadRequest,
	Msg: "eval broker is enabled; eval broker must be paused to delete evals"}

// DeleteEvals deletes evaluations while the scheduler configuration pauses
// the broker. Each must exist and be safe to delete: its job is gone,
// stopped or dead, or every allocation of the job is terminal (so nothing
// waits on the evaluation). The broker forgets them when the leadership
// next restores evaluations from state; a paused broker hands none out
// meanwhile, and a worker finding a deleted evaluation ignores it.
func (s *Server) DeleteEvals(caller *acl.ACL, ids []string) (uint64, error) {
	if err := permit(caller.IsManagement()); err != nil {
		return 0, err
	}
	paused, err := s.EvalBrokerPaused()
	if err != nil {
		return 0, err
	}
	if !paused {
		return 0, ErrEvalBrokerEnabled
	}
	if len(ids) == 0 {
		return 0, &structs.RequestError{Kind: structs.ErrBadRequest, Msg: "evals must be deleted by ID or filter: EvalIDs is empty"}
	}
	snap := s.State().Snapshot()
	for _, id := range ids {
		e, err := snap.EvalByID(nil, id)
		if err != nil {
			return 0, err
		}
		if e == nil {
			return 0, structs.NotFoundf("eval not found: %s", id)
		}
		job, err := snap.JobByID(nil, e.Namespace, e.JobID)
		if err != nil {
			return 0, err
		}
		if job == nil || job.Stop || job.Status == structs.JobStatusDead {
			continue
		}
		allocs, err := snap.AllocsByJob(nil, e.Namespace, e.JobID, true)
		if err != nil {
			return 0, err
		}
		for _, a := range allocs {
			if !a.ServerTerminal() && !a.ClientTerminal() {
				return 0, &structs.RequestError{Kind: structs.ErrBadRequest,
					Msg: fmt.Sprintf("eval %s is not safe to delete: job %q has allocations that are not terminal", id, e.JobID)}
			}
		}
	}
	resp, index, err := s.raftApply(structs.EvalDeleteRequestType, &structs.EvalDeleteRequest{EvalIDs: ids})
	if err != nil {
		return 0, err
	}
	if rerr, ok := resp.(error); ok {
		return 0, rerr
	}
	return index, nil
}
