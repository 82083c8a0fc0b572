package scheduler

import (
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/nomad/structs"
)

// AlgorithmReader is implemented by a State that knows the scheduler
// configuration's algorithm (AlgorithmBinpack or AlgorithmSpread). A State
// without it schedules with AlgorithmBinpack.
type AlgorithmReader interface {
	SchedulerAlgorithm() string
}

// genericScheduler schedules service and batch jobs: read state,
// ReconcileGeneric, place on nodes, submit, record the outcome. Placements
// that find no node leave a blocked evaluation that the server re-runs
// when capacity appears; reschedules due later leave a delayed follow-up.
type genericScheduler struct {
	logger  hclog.Logger
	state   State
	planner Planner
	now     func() time.Time
	newID   func() string
}

// NewServiceScheduler returns the scheduler for service jobs.
func NewServiceScheduler(logger hclog.Logger, state State, planner Planner, now func() time.Time) Scheduler {
	return &genericScheduler{logger: logger.Named("service_sched"), state: state, planner: planner, now: now, newID: newIDSource()}
}

// NewBatchScheduler returns the scheduler for batch jobs.
func NewBatchScheduler(logger hclog.Logger, state State, planner Planner, now func() time.Time) Scheduler {
	return &genericScheduler{logger: logger.Named("batch_sched"), state: state, planner: planner, now: now, newID: newIDSource()}
}

// Process plans eval and records its outcome (runPlanLoop), as the system
// scheduler does.
func (s *genericScheduler) Process(eval *structs.Evaluation) error {
	return runPlanLoop(s, s.planner, s.logger, eval)
}

// refresh replaces the state after a partial commit.
func (s *genericScheduler) refresh(fresh State) { s.state = fresh }

func (s *genericScheduler) finish(eval *structs.Evaluation, out planOutcome, status, desc string) error {
	upd := eval.Copy()
	if !out.followupAt.IsZero() {
		id, err := s.createEval(eval, out, structs.EvalStatusPending, structs.EvalTriggerRetryFailedAlloc, out.followupAt)
		if err != nil {
			return err
		}
		upd.NextEval = id
	}
	if len(out.failed) > 0 && status == structs.EvalStatusComplete {
		id, err := s.createEval(eval, out, structs.EvalStatusBlocked, structs.EvalTriggerQueuedAllocs, time.Time{})
		if err != nil {
			return err
		}
		upd.BlockedEval = id
	}
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

// createEval creates a follow-up evaluation of eval's job: a delayed
// pending one (reschedules due at waitUntil) or a blocked one (placements
// that found no node).
func (s *genericScheduler) createEval(eval *structs.Evaluation, out planOutcome, status, trigger string, waitUntil time.Time) (string, error) {
	f := &structs.Evaluation{
		ID:             s.newID(),
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
	if status == structs.EvalStatusBlocked {
		f.StatusDescription = "created to place remaining allocations"
		f.FailedTGAllocs = out.failed
		f.QueuedAllocations = out.queued
	}
	if out.plan.Job != nil {
		f.JobModifyIndex = out.plan.Job.JobModifyIndex
	}
	if err := s.planner.CreateEval(f); err != nil {
		return "", fmt.Errorf("scheduler: create follow-up eval of eval %q: %w", eval.ID, err)
	}
	return f.ID, nil
}

func (s *genericScheduler) computePlan(eval *structs.Evaluation) (planOutcome, error) {
	js, err := readJobState(s.state, eval)
	if err != nil {
		return planOutcome{}, err
	}
	now := s.now()
	in := GenericInput{Job: js.job, Nodes: js.nodes, Allocs: js.allocs, Deployment: js.deployment, Now: now, RevertsToStable: js.revertsToStable}
	algorithm := AlgorithmBinpack
	if ar, ok := s.state.(AlgorithmReader); ok && ar.SchedulerAlgorithm() != "" {
		algorithm = ar.SchedulerAlgorithm()
	}
	return buildGenericPlan(genericPlanInput{
		eval: eval, job: js.job, nodes: js.nodes, stored: js.deployment, result: ReconcileGeneric(in), allocs: js.allocs,
		state: s.state, index: js.index, newID: s.newID, now: now, algorithm: algorithm,
	})
}
