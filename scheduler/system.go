package scheduler

import (
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/nomad/structs"
)

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
// type selects the sysbatch rules in ReconcileSystem (a node where the
// current version finished does not run it again).
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
	return recordOutcome(s.planner, upd, out, status, desc)
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
	f := followupEval(eval, out, s.newID(), structs.EvalStatusPending, structs.EvalTriggerRollingUpdate, out.followupAt)
	f.DeploymentID = out.deploymentID
	return storeFollowup(s.planner, eval, f)
}

// computePlan reads the job's state, reconciles it and builds the plan.
func (s *systemScheduler) computePlan(eval *structs.Evaluation) (planOutcome, error) {
	js, err := readJobState(s.state, eval)
	if err != nil {
		return planOutcome{}, err
	}
	in := SystemReconcileInput{Job: js.job, Nodes: js.nodes, Allocs: js.allocs, Deployment: js.deployment, Now: s.now(), RevertsToStable: js.revertsToStable}
	if js.job != nil {
		in.Feasible = NewFeasibleFunc(js.job)
	}
	return buildSystemPlan(systemPlanInput{
		eval: eval, job: js.job, nodes: js.nodes, stored: js.deployment, result: ReconcileSystem(in),
		state: s.state, index: js.index, newID: s.newID,
	})
}
