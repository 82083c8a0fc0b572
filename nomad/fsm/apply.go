package fsm

import (
	"fmt"

	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// upsertEvals stores evals (nil entries skipped) at index and hands the
// stored copies to the evals hook.
func (f *FSM) upsertEvals(index uint64, evals ...*structs.Evaluation) error {
	in := make([]*structs.Evaluation, 0, len(evals))
	for _, e := range evals {
		if e != nil {
			in = append(in, e)
		}
	}
	if len(in) == 0 {
		return nil
	}
	if err := f.state.UpsertEvals(index, in); err != nil {
		return err
	}
	stored := make([]*structs.Evaluation, 0, len(in))
	for _, e := range in {
		s, err := f.state.EvalByID(nil, e.ID)
		if err != nil {
			return err
		}
		if s != nil {
			stored = append(stored, s)
		}
	}
	f.notifyEvals(stored)
	return nil
}

// registerJob stores job as a new version at index, with submitTime (when
// not 0) as its SubmitTime, and returns the stored job.
func (f *FSM) registerJob(index uint64, sub *structs.JobSubmission, job *structs.Job, submitTime int64) (*structs.Job, error) {
	j := job.Copy()
	if submitTime != 0 {
		j.SubmitTime = submitTime
	}
	if err := f.state.UpsertJob(index, sub, j); err != nil {
		return nil, err
	}
	stored, err := f.state.JobByID(nil, j.Namespace, j.ID)
	if err != nil {
		return nil, err
	}
	if stored == nil {
		return nil, fmt.Errorf("fsm: job %q vanished after upsert", j.ID)
	}
	return stored, nil
}

// evalForJob returns a copy of eval (or nil) pointing at job's modify index.
func evalForJob(eval *structs.Evaluation, job *structs.Job) *structs.Evaluation {
	if eval == nil || job == nil {
		return eval
	}
	e := eval.Copy()
	e.JobModifyIndex = job.JobModifyIndex
	return e
}

// applyJobRegister registers a job version and its evaluation.
func (f *FSM) applyJobRegister(index uint64, buf []byte) any {
	var req structs.JobRegisterRequest
	decode(index, buf, &req)
	if req.Job == nil {
		return fmt.Errorf("fsm: job register at index %d without a job", index)
	}
	if req.EnforceIndex {
		cur, err := f.state.JobByID(nil, req.Job.Namespace, req.Job.ID)
		if err != nil {
			return err
		}
		if err := structs.CheckJobModifyIndex(cur, req.JobModifyIndex); err != nil {
			return err // refused: nothing written
		}
	}
	job, err := f.registerJob(index, req.Submission, req.Job, req.SubmitTime)
	if err != nil {
		return err
	}
	if err := f.upsertEvals(index, evalForJob(req.Eval, job)); err != nil {
		return err
	}
	return &RegisterResult{Version: job.Version, JobModifyIndex: job.JobModifyIndex}
}

// applyJobDeregister stops (or purges) a job and stores its evaluation.
func (f *FSM) applyJobDeregister(index uint64, buf []byte) error {
	var req structs.JobDeregisterRequest
	decode(index, buf, &req)
	eval := req.Eval
	if req.NoShutdownDelay {
		if err := f.skipShutdownDelay(index, req.Namespace, req.JobID); err != nil {
			return err
		}
	}
	if req.Purge {
		if err := f.state.DeleteJob(index, req.Namespace, req.JobID); err != nil {
			return err
		}
		if eval != nil {
			eval = eval.Copy()
			eval.JobModifyIndex = index
		}
	} else {
		cur, err := f.state.JobByID(nil, req.Namespace, req.JobID)
		if err != nil {
			return err
		}
		if cur == nil {
			return fmt.Errorf("stop job %q: %w", req.JobID, state.ErrNotFound)
		}
		stop := cur.Copy()
		stop.Stop = true
		job, err := f.registerJob(index, nil, stop, req.SubmitTime)
		if err != nil {
			return err
		}
		eval = evalForJob(eval, job)
	}
	return f.upsertEvals(index, eval)
}

// skipShutdownDelay marks the live allocations of a job to be killed
// without their shutdown_delay.
func (f *FSM) skipShutdownDelay(index uint64, ns, jobID string) error {
	allocs, err := f.state.AllocsByJob(nil, ns, jobID, true)
	if err != nil {
		return err
	}
	var ids []string
	for _, a := range allocs {
		if !a.Terminal() {
			ids = append(ids, a.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return f.state.UpdateAllocsDesired(index, ids, "", "", structs.DesiredTransition{NoShutdownDelay: true})
}

// applyEvalUpdate stores evaluations.
func (f *FSM) applyEvalUpdate(index uint64, buf []byte) error {
	var req structs.EvalUpdateRequest
	decode(index, buf, &req)
	return f.upsertEvals(index, req.Evals...)
}

// applyNodeRegister registers a node and stores its evaluation.
func (f *FSM) applyNodeRegister(index uint64, buf []byte) error {
	var req structs.NodeRegisterRequest
	decode(index, buf, &req)
	if req.Node == nil {
		return fmt.Errorf("fsm: node register at index %d without a node", index)
	}
	if err := f.state.UpsertNode(index, req.Node); err != nil {
		return err
	}
	return f.upsertEvals(index, req.Eval)
}

// applyNodeUpdateStatus changes a node's status.
func (f *FSM) applyNodeUpdateStatus(index uint64, buf []byte) error {
	var req structs.NodeUpdateStatusRequest
	decode(index, buf, &req)
	if err := f.state.UpdateNodeStatus(index, req.NodeID, req.Status, req.UpdatedAt, req.Event); err != nil {
		return err
	}
	return f.upsertEvals(index, req.Evals...)
}

// applyNodeUpdateEligibility changes a node's scheduling eligibility.
func (f *FSM) applyNodeUpdateEligibility(index uint64, buf []byte) error {
	var req structs.NodeUpdateEligibilityRequest
	decode(index, buf, &req)
	if err := f.state.UpdateNodeEligibility(index, req.NodeID, req.Eligibility, req.UpdatedAt); err != nil {
		return err
	}
	return f.upsertEvals(index, req.Evals...)
}

// applyNodeUpdateDrain starts or stops a node drain.
func (f *FSM) applyNodeUpdateDrain(index uint64, buf []byte) error {
	var req structs.NodeUpdateDrainRequest
	decode(index, buf, &req)
	if err := f.state.ApplyNodeDrain(index, &req); err != nil {
		return err
	}
	return f.upsertEvals(index, req.Evals...)
}

// applyNodeDeregister removes nodes.
func (f *FSM) applyNodeDeregister(index uint64, buf []byte) error {
	var req structs.NodeDeregisterRequest
	decode(index, buf, &req)
	if err := f.state.DeleteNodes(index, req.NodeIDs); err != nil {
		return err
	}
	return f.upsertEvals(index, req.Evals...)
}

// applyAllocClientUpdate records client-reported allocation status.
func (f *FSM) applyAllocClientUpdate(index uint64, buf []byte) error {
	var req structs.AllocClientUpdateRequest
	decode(index, buf, &req)
	if err := f.state.UpdateAllocsFromClient(index, req.Allocs, req.UpdatedAt); err != nil {
		return err
	}
	return f.upsertEvals(index, req.Evals...)
}

// applyPlanResults commits a plan.
func (f *FSM) applyPlanResults(index uint64, buf []byte) error {
	var req structs.ApplyPlanResultsRequest
	decode(index, buf, &req)
	return f.state.UpsertPlanResultsOwned(index, &req) // req was decoded for this call only
}

// applyPlanResultsCompact commits a plan sent in its wire form.
func (f *FSM) applyPlanResultsCompact(index uint64, buf []byte) error {
	var w structs.PlanResultsWire
	decode(index, buf, &w)
	return f.state.UpsertPlanResultsOwned(index, w.Expand())
}

// applyDeploymentStatusUpdate changes a deployment's status, then registers
// the job (an auto-revert) and stores the evaluation, each when present.
func (f *FSM) applyDeploymentStatusUpdate(index uint64, buf []byte) error {
	var req structs.DeploymentStatusUpdateRequest
	decode(index, buf, &req)
	if req.Update == nil {
		return fmt.Errorf("fsm: deployment status update at index %d without an update", index)
	}
	if err := f.state.UpdateDeploymentStatus(index, req.Update, req.UpdatedAt); err != nil {
		return err
	}
	return f.registerAndEval(index, req.Job, req.Eval, req.UpdatedAt)
}

// registerAndEval registers job (or nil) and stores eval (or nil), pointing
// eval at the registered version.
func (f *FSM) registerAndEval(index uint64, job *structs.Job, eval *structs.Evaluation, now int64) error {
	if job != nil {
		stored, err := f.registerJob(index, nil, job, now)
		if err != nil {
			return err
		}
		eval = evalForJob(eval, stored)
	}
	return f.upsertEvals(index, eval)
}

// applyDeploymentPromote promotes canaries and stores the evaluation.
func (f *FSM) applyDeploymentPromote(index uint64, buf []byte) error {
	var req structs.DeploymentPromoteRequest
	decode(index, buf, &req)
	if err := f.state.UpdateDeploymentPromotion(index, &req); err != nil {
		return err
	}
	return f.upsertEvals(index, req.Eval)
}

// applyDeploymentAllocHealth records allocation health, then registers the
// job (an auto-revert) and stores the evaluation, each when present.
func (f *FSM) applyDeploymentAllocHealth(index uint64, buf []byte) error {
	var req structs.DeploymentAllocHealthRequest
	decode(index, buf, &req)
	if err := f.state.UpdateDeploymentAllocHealth(index, &req); err != nil {
		return err
	}
	return f.registerAndEval(index, req.Job, req.Eval, req.Timestamp)
}

// applyJobStability marks a job version stable or not.
func (f *FSM) applyJobStability(index uint64, buf []byte) error {
	var req structs.JobStabilityRequest
	decode(index, buf, &req)
	return f.state.UpdateJobStability(index, req.Namespace, req.JobID, req.Version, req.Stable)
}

// applyAllocDesiredTransition stops allocations and stores the evaluations.
func (f *FSM) applyAllocDesiredTransition(index uint64, buf []byte) error {
	var req structs.AllocDesiredTransitionRequest
	decode(index, buf, &req)
	err := f.state.UpdateAllocsDesired(index, req.AllocIDs, structs.AllocDesiredStatusStop, req.Description, req.Transition)
	if err != nil {
		return err
	}
	return f.upsertEvals(index, req.Evals...)
}

// applyImageWatchUpdate records the image watcher's checks and decisions.
func (f *FSM) applyImageWatchUpdate(index uint64, buf []byte) error {
	var req structs.ImageWatchUpdateRequest
	decode(index, buf, &req)
	return f.state.UpsertImageWatch(index, &req)
}
