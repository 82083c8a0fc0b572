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

// systemScheduler schedules system and sysbatch jobs: read state, reconcile,
// build a plan, submit it, record the evaluation's outcome.
type systemScheduler struct {
	logger  hclog.Logger
	state   State // replaced by a fresher snapshot after a partial commit
	planner Planner
	now     func() time.Time
	newID   func() string
}

// NewSystemScheduler returns the scheduler for system jobs.
func NewSystemScheduler(logger hclog.Logger, state State, planner Planner, now func() time.Time) Scheduler {
	return &systemScheduler{logger: logger.Named("system_sched"), state: state, planner: planner, now: now, newID: newIDSource()}
}

// NewSysBatchScheduler returns the scheduler for sysbatch jobs. The job
// type selects the sysbatch rules in Reconcile (a node where the current
// version finished does not run it again).
func NewSysBatchScheduler(logger hclog.Logger, state State, planner Planner, now func() time.Time) Scheduler {
	return &systemScheduler{logger: logger.Named("sysbatch_sched"), state: state, planner: planner, now: now, newID: newIDSource()}
}

// Process plans eval and records its outcome (runPlanLoop).
//
// Every evaluation is planned against all nodes, also one triggered by a
// single node's event: DesiredTotal and placements that failed before must
// see the whole cluster.
func (s *systemScheduler) Process(eval *structs.Evaluation) error {
	return runPlanLoop(s, s.planner, s.logger, eval)
}

// refresh replaces the state after a partial commit.
func (s *systemScheduler) refresh(fresh State) { s.state = fresh }

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

// finish records the evaluation's final status, naming the deployment the
// plan created or touched so that `job run` can follow it, and the
// follow-up evaluation of a wave the stagger delayed.
func (s *systemScheduler) finish(eval *structs.Evaluation, out planOutcome, status, desc string) error {
	next, err := s.createFollowup(eval, out)
	if err != nil {
		return err
	}
	upd := eval.Copy()
	upd.NextEval = next
	upd.Status = status
	upd.StatusDescription = desc
	upd.PlanAnnotations = out.plan.Annotations
	upd.FailedTGAllocs = out.failed
	upd.QueuedAllocations = out.queued
	upd.DeploymentID = out.deploymentID
	upd.SnapshotIndex = out.plan.SnapshotIndex
	if err := s.planner.UpdateEval(upd); err != nil {
		return fmt.Errorf("scheduler: update eval %q: %w", eval.ID, err)
	}
	return nil
}

// createFollowup creates the evaluation that starts a wave the stagger
// held back, when out asks for one, and returns its ID (or "").
//
// Assumptions: every evaluation that meets a closed stagger window creates
// one; duplicates are cheap (the broker runs one evaluation of a job at a
// time, and a wave that already started leaves the later ones nothing to
// do).
func (s *systemScheduler) createFollowup(eval *structs.Evaluation, out planOutcome) (string, error) {
	if out.followupAt.IsZero() {
		return "", nil
	}
	f := &structs.Evaluation{
		ID:             s.newID(),
		Namespace:      eval.Namespace,
		Priority:       eval.Priority,
		Type:           eval.Type,
		TriggeredBy:    structs.EvalTriggerRollingUpdate,
		JobID:          eval.JobID,
		JobModifyIndex: eval.JobModifyIndex,
		DeploymentID:   out.deploymentID,
		Status:         structs.EvalStatusPending,
		WaitUntil:      out.followupAt,
		PreviousEval:   eval.ID,
	}
	if out.plan.Job != nil {
		f.JobModifyIndex = out.plan.Job.JobModifyIndex
	}
	if err := s.planner.CreateEval(f); err != nil {
		return "", fmt.Errorf("scheduler: create follow-up eval of eval %q: %w", eval.ID, err)
	}
	return f.ID, nil
}

// computePlan reads the job's state, reconciles it and builds the plan.
func (s *systemScheduler) computePlan(eval *structs.Evaluation) (planOutcome, error) {
	js, err := readJobState(s.state, eval)
	if err != nil {
		return planOutcome{}, err
	}
	in := ReconcileInput{Job: js.job, Nodes: js.nodes, Allocs: js.allocs, Deployment: js.deployment, Now: s.now(), RevertsToStable: js.revertsToStable}
	if js.job != nil {
		in.Feasible = NewFeasibleFunc(js.job)
	}
	return buildPlan(planInput{
		eval: eval, job: js.job, nodes: js.nodes, stored: js.deployment, result: Reconcile(in),
		state: s.state, index: js.index, newID: s.newID,
	})
}

// jobState is what both schedulers read of an evaluation's job.
type jobState struct {
	index           uint64
	job             *structs.Job // nil when the job is gone or not runnable
	allocs          []*structs.Allocation
	nodes           []*structs.Node
	deployment      *structs.Deployment // the job's latest
	revertsToStable bool
}

// readJobState reads the job of eval (runnable or nil), its allocations of
// every incarnation, every node, its latest deployment, and whether its
// current version is a revert to a stable one.
func readJobState(state State, eval *structs.Evaluation) (jobState, error) {
	js := jobState{index: state.LatestIndex()}
	job, err := state.JobByID(nil, eval.Namespace, eval.JobID)
	if err != nil {
		return js, fmt.Errorf("scheduler: read job %q: %w", eval.JobID, err)
	}
	js.job = runnable(job)
	if js.allocs, err = state.AllocsByJob(nil, eval.Namespace, eval.JobID, true); err != nil {
		return js, fmt.Errorf("scheduler: read allocs of job %q: %w", eval.JobID, err)
	}
	if js.nodes, err = state.Nodes(nil); err != nil {
		return js, fmt.Errorf("scheduler: read nodes: %w", err)
	}
	if js.deployment, err = state.LatestDeploymentByJobID(nil, eval.Namespace, eval.JobID); err != nil {
		return js, fmt.Errorf("scheduler: read deployment of job %q: %w", eval.JobID, err)
	}
	if js.job != nil {
		versions, err := state.JobVersionsByID(nil, eval.Namespace, eval.JobID)
		if err != nil {
			return js, fmt.Errorf("scheduler: read versions of job %q: %w", eval.JobID, err)
		}
		js.revertsToStable = revertsToStable(js.job, versions)
	}
	return js, nil
}

// revertsToStable reports whether job's spec equals an earlier stable
// version's.
func revertsToStable(job *structs.Job, versions []*structs.Job) bool {
	for _, v := range versions {
		if v.Version < job.Version && v.Stable && !v.SpecChanged(job) {
			return true
		}
	}
	return false
}
