package nomad

import (
	"github.com/drover-project/drover/nomad/structs"
)

// blockedEvals returns pending copies of the blocked evaluations of jobs
// for which want returns true (every job when want is nil): re-running them
// retries the placements that found no node.
//
// Assumptions: blocked evaluations are few (at most about one per job whose
// placements failed), so scanning the evaluations table is cheap next to
// the raft write that follows.
func (s *Server) blockedEvals(want func(ns, jobID string) bool) ([]*structs.Evaluation, error) {
	all, err := s.State().Evals(nil, "*")
	if err != nil {
		return nil, err
	}
	var out []*structs.Evaluation
	now := s.now().UnixNano()
	for _, e := range all {
		if e.Status != structs.EvalStatusBlocked || (want != nil && !want(e.Namespace, e.JobID)) {
			continue
		}
		c := e.Copy()
		c.Status = structs.EvalStatusPending
		c.StatusDescription = ""
		c.ModifyTime = now
		out = append(out, c)
	}
	return out, nil
}

// allocUpdateEvals returns the evaluations a client's allocation updates
// call for: one per service or batch job with an allocation that just
// failed (its reschedule policy decides), and every blocked evaluation
// when an allocation just finished (it freed capacity).
func (s *Server) allocUpdateEvals(updates []*structs.Allocation) ([]*structs.Evaluation, error) {
	var evals []*structs.Evaluation
	seen := map[structs.NamespacedID]bool{}
	freed := false
	for _, u := range updates {
		prev, err := s.State().AllocByID(nil, u.ID)
		if err != nil {
			return nil, err
		}
		if prev == nil || prev.ClientTerminal() || !isTerminalClientStatus(u.ClientStatus) {
			continue
		}
		freed = true
		if u.ClientStatus != structs.AllocClientStatusFailed || prev.Job == nil || prev.ServerTerminal() {
			continue
		}
		job, err := s.State().JobByID(nil, prev.Namespace, prev.JobID)
		if err != nil {
			return nil, err
		}
		if job == nil || job.Stop || (job.Type != structs.JobTypeService && job.Type != structs.JobTypeBatch) || seen[job.NamespacedID()] {
			continue
		}
		seen[job.NamespacedID()] = true
		e := s.newEval(job, structs.EvalTriggerRetryFailedAlloc)
		e.JobModifyIndex = job.JobModifyIndex
		evals = append(evals, e)
	}
	if !freed {
		return evals, nil
	}
	blocked, err := s.blockedEvals(nil)
	if err != nil {
		return nil, err
	}
	return append(evals, blocked...), nil
}

func isTerminalClientStatus(status string) bool {
	switch status {
	case structs.AllocClientStatusComplete, structs.AllocClientStatusFailed, structs.AllocClientStatusLost:
		return true
	}
	return false
}
