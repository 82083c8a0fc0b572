package nomad

import "github.com/drover-project/drover/nomad/structs"

// allocStopDescription is the DesiredDescription of an allocation an
// operator stopped.
const allocStopDescription = "alloc was stopped by the operator"

// AllocStop stops an allocation (its client kills its tasks), records tr
// on it (alloc stop sets Migrate; Reschedule and NoShutdownDelay as the
// operator asked) and creates an evaluation of its job (trigger
// alloc-stop), which replaces it where the job still wants one: a system
// job's node gets a new allocation; a service or batch group gets one
// that names the stopped allocation as its previous one (with Reschedule,
// extending its reschedule history), preferring another node. It returns
// the evaluation's ID ("" when the job is gone) and the raft index.
func (s *Server) AllocStop(allocID string, tr structs.DesiredTransition) (string, uint64, error) {
	alloc, err := s.State().AllocByID(nil, allocID)
	if err != nil {
		return "", 0, err
	}
	if alloc == nil {
		return "", 0, structs.NotFoundf("alloc not found")
	}
	if alloc.ClientTerminal() {
		// It already finished: there is nothing to migrate.
		tr.Migrate = false
	}
	req := &structs.AllocDesiredTransitionRequest{AllocIDs: []string{allocID}, Description: allocStopDescription, Transition: tr}
	job, err := s.State().JobByID(nil, alloc.Namespace, alloc.JobID)
	if err != nil {
		return "", 0, err
	}
	evalID := ""
	if job != nil {
		e := s.newEval(job, structs.EvalTriggerAllocStop)
		e.JobModifyIndex = job.JobModifyIndex
		e.NodeID = alloc.NodeID
		req.Evals, evalID = []*structs.Evaluation{e}, e.ID
	}
	index, err := s.applyChecked(structs.AllocDesiredTransitionRequestType, req)
	if err != nil {
		return "", 0, err
	}
	return evalID, index, nil
}
