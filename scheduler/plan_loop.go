package scheduler

import (
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/nomad/structs"
)

// maxPlanAttempts bounds how often one evaluation re-plans after a partial
// commit before it fails.
const maxPlanAttempts = 5

// descMaxAttempts is the status description of an evaluation whose plans
// kept being partly rejected.
var descMaxAttempts = fmt.Sprintf("maximum attempts reached (%d)", maxPlanAttempts)

// planLoop is a scheduler as runPlanLoop drives it: it plans an evaluation
// against its current state, takes a fresher state after a partial commit,
// and records the evaluation's outcome.
type planLoop interface {
	computePlan(eval *structs.Evaluation) (planOutcome, error)
	refresh(fresh State)
	finish(eval *structs.Evaluation, out planOutcome, status, desc string) error
}

// runPlanLoop plans eval, submits the plan (re-planning against the fresher
// state the planner returns after a partial commit, at most
// maxPlanAttempts times) and records the outcome: complete when a plan
// committed in full or there was nothing to do, failed with
// descMaxAttempts otherwise. It returns an error only when state cannot be
// read or the planner fails; the caller then retries the evaluation.
func runPlanLoop(l planLoop, planner Planner, logger hclog.Logger, eval *structs.Evaluation) error {
	var out planOutcome
	for attempt := 0; attempt < maxPlanAttempts; attempt++ {
		var err error
		out, err = l.computePlan(eval)
		if err != nil {
			return err
		}
		if out.plan.IsNoOp() {
			return l.finish(eval, out, structs.EvalStatusComplete, "")
		}
		result, fresh, err := planner.SubmitPlan(out.plan)
		if err != nil {
			return fmt.Errorf("scheduler: submit plan of eval %q: %w", eval.ID, err)
		}
		if result.RefreshIndex == 0 && result.FullCommit(out.plan) {
			return l.finish(eval, out, structs.EvalStatusComplete, "")
		}
		logger.Debug("plan partly committed, re-planning", "eval_id", eval.ID,
			"attempt", attempt+1, "refresh_index", result.RefreshIndex)
		if fresh != nil {
			l.refresh(fresh)
		}
	}
	return l.finish(eval, out, structs.EvalStatusFailed, descMaxAttempts)
}

// planOutcome is a built plan and what the evaluation reports about it.
type planOutcome struct {
	plan *structs.Plan
	// failed holds a coalesced metric per group with placements that did
	// not fit (eval.FailedTGAllocs); nil when every placement fit.
	failed map[string]*structs.AllocationMetric
	// queued counts the failed placements per group of the job.
	queued map[string]int
	// deploymentID is the deployment the plan creates or that new
	// allocations of this version join, or "".
	deploymentID string
	// followupAt is the reconciler's FollowupAt: when the system
	// scheduler's next wave may start, or the generic scheduler's earliest
	// reschedule due later; or zero.
	followupAt time.Time
}

// recordOutcome gives upd, the copy of an evaluation its scheduler
// finishes, status and desc and what out reports (annotations, failed and
// queued placements, deployment, snapshot index), and stores it through
// planner.
func recordOutcome(planner Planner, upd *structs.Evaluation, out planOutcome, status, desc string) error {
	upd.Status = status
	upd.StatusDescription = desc
	upd.PlanAnnotations = out.plan.Annotations
	upd.FailedTGAllocs = out.failed
	upd.QueuedAllocations = out.queued
	upd.DeploymentID = out.deploymentID
	upd.SnapshotIndex = out.plan.SnapshotIndex
	if err := planner.UpdateEval(upd); err != nil {
		return fmt.Errorf("scheduler: update eval %q: %w", upd.ID, err)
	}
	return nil
}

// followupEval is evaluation id, a follow-up of eval for the same job, in
// status, triggered by trigger, not before waitUntil (zero: at once); its
// JobModifyIndex is that of the job out's plan carries, else eval's.
func followupEval(eval *structs.Evaluation, out planOutcome, id, status, trigger string, waitUntil time.Time) *structs.Evaluation {
	f := &structs.Evaluation{
		ID:             id,
		Namespace:      eval.Namespace,
		Priority:       eval.Priority,
		Type:           eval.Type,
		TriggeredBy:    trigger,
		JobID:          eval.JobID,
		JobModifyIndex: eval.JobModifyIndex,
		Status:         status,
		WaitUntil:      waitUntil,
		PreviousEval:   eval.ID,
	}
	if out.plan.Job != nil {
		f.JobModifyIndex = out.plan.Job.JobModifyIndex
	}
	return f
}

// storeFollowup creates f, a follow-up of eval, through planner and
// returns its ID.
func storeFollowup(planner Planner, eval, f *structs.Evaluation) (string, error) {
	if err := planner.CreateEval(f); err != nil {
		return "", fmt.Errorf("scheduler: create follow-up eval of eval %q: %w", eval.ID, err)
	}
	return f.ID, nil
}
