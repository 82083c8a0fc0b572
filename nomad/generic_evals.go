package nomad

import (
	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/scheduler"
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
// failed (its reschedule policy decides), one per job whose replacement of
// a migrated allocation just became healthy or running (the drain's next
// migrate.max_parallel wave), one per job with an unknown allocation its
// client reports again (reconnects), and every blocked evaluation when an
// allocation just finished (it freed capacity).
func (s *Server) allocUpdateEvals(updates []*structs.Allocation) ([]*structs.Evaluation, error) {
	var evals []*structs.Evaluation
	seen := map[structs.NamespacedID]bool{}
	addJobEval := func(ns, jobID, trigger string) error {
		job, err := s.State().JobByID(nil, ns, jobID)
		if err != nil {
			return err
		}
		if job == nil || job.Stop || (job.Type != structs.JobTypeService && job.Type != structs.JobTypeBatch) || seen[job.NamespacedID()] {
			return nil
		}
		seen[job.NamespacedID()] = true
		e := s.newEval(job, trigger)
		e.JobModifyIndex = job.JobModifyIndex
		evals = append(evals, e)
		return nil
	}
	freed := false
	for _, u := range updates {
		prev, err := s.State().AllocByID(nil, u.ID)
		if err != nil {
			return nil, err
		}
		if prev == nil || prev.ClientTerminal() {
			continue
		}
		if !isTerminalClientStatus(u.ClientStatus) {
			if reconnects(prev, u) {
				if err := addJobEval(prev.Namespace, prev.JobID, structs.EvalTriggerReconnect); err != nil {
					return nil, err
				}
				continue
			}
			done, err := s.migrationJustDone(prev, u)
			if err != nil {
				return nil, err
			}
			if done {
				if err := addJobEval(prev.Namespace, prev.JobID, structs.EvalTriggerNodeDrain); err != nil {
					return nil, err
				}
			}
			continue
		}
		freed = true
		if u.ClientStatus != structs.AllocClientStatusFailed || prev.Job == nil || prev.ServerTerminal() {
			continue
		}
		if err := addJobEval(prev.Namespace, prev.JobID, structs.EvalTriggerRetryFailedAlloc); err != nil {
			return nil, err
		}
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

// migrationJustDone reports whether the client update u makes prev, the
// replacement of an allocation migrated off a draining node, healthy (or
// running) for the first time.
func (s *Server) migrationJustDone(prev, u *structs.Allocation) (bool, error) {
	if prev.PreviousAllocation == "" || prev.ServerTerminal() || scheduler.MigrationDone(prev) {
		return false, nil
	}
	next := prev.Copy()
	if u.ClientStatus != "" {
		next.ClientStatus = u.ClientStatus
	}
	if u.DeploymentStatus != nil {
		next.DeploymentStatus = u.DeploymentStatus
	}
	if !scheduler.MigrationDone(next) {
		return false, nil
	}
	migrated, err := s.State().AllocByID(nil, prev.PreviousAllocation)
	if err != nil || migrated == nil {
		return false, err
	}
	return migrated.DesiredDescription == scheduler.DescMigrating, nil
}

// reconnects reports whether the client update u reports prev, an
// allocation the server marked unknown, alive again: the reconciler then
// decides between it and its replacement.
func reconnects(prev, u *structs.Allocation) bool {
	return prev.ClientStatus == structs.AllocClientStatusUnknown && u.ClientStatus != "" &&
		u.ClientStatus != structs.AllocClientStatusUnknown
}

func isTerminalClientStatus(status string) bool {
	switch status {
	case structs.AllocClientStatusComplete, structs.AllocClientStatusFailed, structs.AllocClientStatusLost:
		return true
	}
	return false
}
