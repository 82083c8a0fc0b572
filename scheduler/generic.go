package scheduler

import (
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
	return recordOutcome(s.planner, upd, out, status, desc)
}

// createEval creates a follow-up evaluation of eval's job: a delayed
// pending one (reschedules due at waitUntil) or a blocked one (placements
// that found no node).
func (s *genericScheduler) createEval(eval *structs.Evaluation, out planOutcome, status, trigger string, waitUntil time.Time) (string, error) {
	f := followupEval(eval, out, s.newID(), status, trigger, waitUntil)
	if status == structs.EvalStatusBlocked {
		f.StatusDescription = "created to place remaining allocations"
		f.FailedTGAllocs = out.failed
		f.QueuedAllocations = out.queued
	}
	return storeFollowup(s.planner, eval, f)
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
