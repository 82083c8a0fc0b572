package nomad

import (
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/scheduler"
)

// JobPlanReply is the outcome of a dry-run registration.
type JobPlanReply struct {
	Diff           *structs.JobDiff
	Annotations    *structs.PlanAnnotations
	FailedTGAllocs map[string]*structs.AllocationMetric
	CreatedEvals   []*structs.Evaluation
	JobModifyIndex uint64
	Index          uint64
	// NextPeriodicLaunch is when an active periodic job would next launch
	// if registered now (zero otherwise).
	NextPeriodicLaunch time.Time
	// Warnings name the images a registration would leave unpinned.
	Warnings []string
}

// JobPlan shows what registering job would change, without writing anything:
// the diff against the current version (only when withDiff; nil otherwise)
// and the scheduler's dry-run decision.
//
// Docker images are pinned as JobRegister would pin them, so the diff shows
// the digest a registration would store (or the tag, with the same warning,
// when the registry cannot be reached). The resolutions of tags the image
// watcher records are recorded as checks (on the leader; a failure to
// record does not fail the plan). caller must be allowed to submit job
// (see CheckJobSubmit).
func (s *Server) JobPlan(caller *acl.ACL, job *structs.Job, withDiff bool) (*JobPlanReply, error) {
	if err := s.CheckJobSubmit(caller, job); err != nil {
		return nil, err
	}
	if err := validateSubmitted(job); err != nil {
		return nil, err
	}
	if err := s.checkGateConfig(job); err != nil {
		return nil, err
	}
	job, pin, err := s.pinImages(job, false)
	if err != nil {
		return nil, err
	}
	if s.IsLeader() {
		if err := s.recordObservations(pin.observations); err != nil {
			s.logger.Warn("recording the plan's image resolutions", "error", err)
		}
	}
	snap := s.State().Snapshot()
	current, err := snap.JobByID(nil, job.Namespace, job.ID)
	if err != nil {
		return nil, err
	}
	var diff *structs.JobDiff
	if withDiff {
		if diff, err = current.Diff(job, true); err != nil {
			return nil, err
		}
	}
	proposed := proposedVersion(current, job)
	eval := s.newEval(proposed, structs.EvalTriggerJobRegister)
	planner := &dryRunPlanner{}
	st := &planState{State: snap, job: proposed}
	sched, err := scheduler.New(job.Type, s.logger, st, planner, s.now)
	if err != nil {
		return nil, err
	}
	if err := sched.Process(eval); err != nil {
		return nil, err
	}
	reply := &JobPlanReply{Diff: diff, Index: snap.LatestIndex(), FailedTGAllocs: map[string]*structs.AllocationMetric{}, Warnings: pin.warnings}
	if current != nil {
		reply.JobModifyIndex = current.JobModifyIndex
	}
	if planner.eval != nil {
		reply.Annotations = planner.eval.PlanAnnotations
		if planner.eval.FailedTGAllocs != nil {
			reply.FailedTGAllocs = planner.eval.FailedTGAllocs
		}
	}
	if reply.Annotations == nil {
		reply.Annotations = &structs.PlanAnnotations{DesiredTGUpdates: map[string]*structs.DesiredUpdates{}}
	}
	reply.CreatedEvals = planner.created
	if job.IsPeriodicActive() {
		next, err := job.Periodic.Next(s.now())
		if err != nil {
			return nil, structs.BadRequestf("periodic: %v", err)
		}
		reply.NextPeriodicLaunch = next
	}
	return reply, nil
}

// proposedVersion is job as the state store would store it if registered now.
func proposedVersion(current, job *structs.Job) *structs.Job {
	p := job.Copy()
	if current == nil {
		return p
	}
	p.CreateIndex = current.CreateIndex
	p.Version = current.Version
	if current.SpecChanged(job) {
		p.Version = current.Version + 1
	}
	return p
}

// planState is a snapshot in which the planned job replaces the stored one.
type planState struct {
	scheduler.State
	job *structs.Job
}

func (p *planState) JobByID(ws memdb.WatchSet, namespace, id string) (*structs.Job, error) {
	if namespace == p.job.Namespace && id == p.job.ID {
		return p.job, nil
	}
	return p.State.JobByID(ws, namespace, id)
}

// dryRunPlanner records what a scheduler would do and pretends it committed.
type dryRunPlanner struct {
	plan    *structs.Plan
	eval    *structs.Evaluation
	created []*structs.Evaluation
}

func (d *dryRunPlanner) SubmitPlan(plan *structs.Plan) (*structs.PlanResult, scheduler.State, error) {
	d.plan = plan
	return &structs.PlanResult{NodeUpdate: plan.NodeUpdate, NodeAllocation: plan.NodeAllocation,
		Deployment: plan.Deployment, DeploymentUpdates: plan.DeploymentUpdates}, nil, nil
}

func (d *dryRunPlanner) UpdateEval(eval *structs.Evaluation) error {
	d.eval = eval
	return nil
}

func (d *dryRunPlanner) CreateEval(eval *structs.Evaluation) error {
	d.created = append(d.created, eval)
	return nil
}
