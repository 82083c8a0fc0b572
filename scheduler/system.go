package scheduler

import (
	"fmt"
	"path"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/nomad/structs"
)

// maxPlanAttempts bounds how often one evaluation re-plans after a partial
// commit before it fails.
const maxPlanAttempts = 5

// Stop descriptions, in Nomad's wording.
const (
	descJobStopped  = "alloc not needed due to job update"
	descReplaced    = "alloc is being updated due to job update"
	descNodeMissing = "alloc not needed as node is not eligible"
)

type systemScheduler struct {
	logger   hclog.Logger
	state    State
	planner  Planner
	now      func() time.Time
	sysbatch bool
}

// NewSystemScheduler returns the scheduler for system jobs.
func NewSystemScheduler(logger hclog.Logger, state State, planner Planner, now func() time.Time) Scheduler {
	return &systemScheduler{logger: logger.Named("system_sched"), state: state, planner: planner, now: now}
}

// NewSysBatchScheduler returns the scheduler for sysbatch jobs: like system,
// but an allocation that completed is not placed again.
func NewSysBatchScheduler(logger hclog.Logger, state State, planner Planner, now func() time.Time) Scheduler {
	return &systemScheduler{logger: logger.Named("sysbatch_sched"), state: state, planner: planner, now: now, sysbatch: true}
}

// Process plans eval, submits the plan (re-planning after partial commits) and
// records the evaluation's outcome.
func (s *systemScheduler) Process(eval *structs.Evaluation) error {
	var (
		plan   *structs.Plan
		result *structs.PlanResult
		err    error
	)
	for attempt := 0; attempt < maxPlanAttempts; attempt++ {
		plan, err = s.computePlan(eval)
		if err != nil {
			return s.finish(eval, nil, structs.EvalStatusFailed, err.Error())
		}
		if plan.IsNoOp() {
			return s.finish(eval, plan, structs.EvalStatusComplete, "")
		}
		var fresh State
		result, fresh, err = s.planner.SubmitPlan(plan)
		if err != nil {
			return fmt.Errorf("scheduler: submit plan: %w", err)
		}
		if result.RefreshIndex == 0 && result.FullCommit(plan) {
			return s.finish(eval, plan, structs.EvalStatusComplete, "")
		}
		if fresh != nil {
			s.state = fresh
		}
	}
	return s.finish(eval, plan, structs.EvalStatusFailed, "maximum attempts reached (5)")
}

// finish writes the evaluation's final status, naming the deployment the plan
// created or touched so that `job run` can follow it.
func (s *systemScheduler) finish(eval *structs.Evaluation, plan *structs.Plan, status, desc string) error {
	upd := eval.Copy()
	upd.Status = status
	upd.StatusDescription = desc
	if plan != nil {
		upd.PlanAnnotations = plan.Annotations
		if plan.Deployment != nil {
			upd.DeploymentID = plan.Deployment.ID
		}
	}
	if upd.DeploymentID == "" {
		if d, err := s.state.LatestDeploymentByJobID(nil, eval.Namespace, eval.JobID); err == nil && d != nil && d.Active() {
			upd.DeploymentID = d.ID
		}
	}
	return s.planner.UpdateEval(upd)
}

// computePlan decides what eval's job needs on every node.
func (s *systemScheduler) computePlan(eval *structs.Evaluation) (*structs.Plan, error) {
	job, err := s.state.JobByID(nil, eval.Namespace, eval.JobID)
	if err != nil {
		return nil, fmt.Errorf("scheduler: read job %q: %w", eval.JobID, err)
	}
	allocs, err := s.state.AllocsByJob(nil, eval.Namespace, eval.JobID, true)
	if err != nil {
		return nil, fmt.Errorf("scheduler: read allocs of job %q: %w", eval.JobID, err)
	}
	nodes, err := s.state.Nodes(nil)
	if err != nil {
		return nil, fmt.Errorf("scheduler: read nodes: %w", err)
	}
	plan := &structs.Plan{
		EvalID:        eval.ID,
		Priority:      eval.Priority,
		Job:           job,
		Annotations:   &structs.PlanAnnotations{DesiredTGUpdates: map[string]*structs.DesiredUpdates{}},
		SnapshotIndex: s.state.LatestIndex(),
	}
	live := liveAllocs(allocs)
	if job.Stopped() {
		for _, a := range live {
			plan.AppendStop(a, descJobStopped)
			desired(plan, a.TaskGroup).Stop++
		}
		s.cancelDeployment(plan, job, structs.DeploymentStatusDescriptionStoppedJob)
		return plan, nil
	}
	eligible := eligibleNodes(job, nodes)
	known := map[string]bool{}
	for _, n := range nodes {
		known[n.ID] = true
	}
	var deployment *structs.Deployment
	for _, tg := range job.TaskGroups {
		if tg.UsesDeployment() && deployment == nil {
			deployment = s.deploymentFor(plan, job)
		}
		s.computeGroup(plan, job, tg, eligible, known, allocs, live, deployment)
	}
	if deployment != nil && deployment.CreateIndex == 0 && len(plan.NodeAllocation) == 0 {
		plan.Deployment = nil // nothing placed: no new deployment
	}
	return plan, nil
}

// computeGroup places, replaces or keeps tg's allocation on each eligible node
// and stops allocations on nodes that are gone from the eligible set.
//
// known holds the IDs of every registered node: the minimal scheduler keeps
// allocations on nodes that exist but are not ready, and stops those whose node
// was removed.
func (s *systemScheduler) computeGroup(plan *structs.Plan, job *structs.Job, tg *structs.TaskGroup,
	eligible []*structs.Node, known map[string]bool, allocs, live []*structs.Allocation, d *structs.Deployment) {
	du := desired(plan, tg.Name)
	liveByNode := map[string]*structs.Allocation{}
	for _, a := range live {
		if a.TaskGroup == tg.Name {
			liveByNode[a.NodeID] = a
		}
	}
	eligibleIDs := map[string]bool{}
	for _, n := range eligible {
		eligibleIDs[n.ID] = true
		old := liveByNode[n.ID]
		switch {
		case old != nil && old.JobVersion == job.Version && old.Job != nil && old.Job.CreateIndex == job.CreateIndex:
			du.Ignore++
		case old != nil:
			plan.AppendStop(old, descReplaced)
			plan.AppendAlloc(s.newAlloc(plan, job, tg, n, old.ID, d))
			du.DestructiveUpdate++
		case s.sysbatch && completedOn(allocs, job, tg.Name, n.ID):
			du.Ignore++
		default:
			plan.AppendAlloc(s.newAlloc(plan, job, tg, n, "", d))
			du.Place++
		}
	}
	for nodeID, a := range liveByNode {
		if !eligibleIDs[nodeID] && !known[nodeID] {
			plan.AppendStop(a, descNodeMissing)
			du.Stop++
		}
	}
	if d != nil && tg.UsesDeployment() {
		st := d.TaskGroups[tg.Name]
		st.DesiredTotal = len(eligible)
		st.PlacedAllocs += int(du.Place + du.DestructiveUpdate)
	}
}

// deploymentFor returns the deployment new allocations of job join: the
// existing one for this version, or a new one (set on plan). An active
// deployment of an older version is cancelled.
func (s *systemScheduler) deploymentFor(plan *structs.Plan, job *structs.Job) *structs.Deployment {
	existing, _ := s.state.LatestDeploymentByJobID(nil, job.Namespace, job.ID)
	if existing != nil && existing.JobVersion == job.Version && existing.JobCreateIndex == job.CreateIndex {
		d := existing.Copy()
		plan.Deployment = d
		return d
	}
	if existing != nil && existing.Active() {
		plan.DeploymentUpdates = append(plan.DeploymentUpdates, &structs.DeploymentStatusUpdate{
			DeploymentID:      existing.ID,
			Status:            structs.DeploymentStatusCancelled,
			StatusDescription: structs.DeploymentStatusDescriptionNewerJob,
		})
	}
	d := &structs.Deployment{
		ID:                 uuid.NewString(),
		Namespace:          job.Namespace,
		JobID:              job.ID,
		JobVersion:         job.Version,
		JobModifyIndex:     job.JobModifyIndex,
		JobSpecModifyIndex: job.JobModifyIndex,
		JobCreateIndex:     job.CreateIndex,
		TaskGroups:         map[string]*structs.DeploymentState{},
		Status:             structs.DeploymentStatusRunning,
		StatusDescription:  structs.DeploymentStatusDescriptionRunning,
	}
	now := s.now()
	for _, tg := range job.TaskGroups {
		if !tg.UsesDeployment() {
			continue
		}
		d.TaskGroups[tg.Name] = &structs.DeploymentState{
			AutoRevert:        tg.Update.AutoRevert,
			AutoPromote:       tg.Update.AutoPromote,
			ProgressDeadline:  tg.Update.ProgressDeadline,
			RequireProgressBy: now.Add(tg.Update.ProgressDeadline),
		}
	}
	plan.Deployment = d
	return d
}

func (s *systemScheduler) cancelDeployment(plan *structs.Plan, job *structs.Job, desc string) {
	d, _ := s.state.LatestDeploymentByJobID(nil, job.Namespace, job.ID)
	if d != nil && d.Active() {
		plan.DeploymentUpdates = append(plan.DeploymentUpdates, &structs.DeploymentStatusUpdate{
			DeploymentID: d.ID, Status: structs.DeploymentStatusCancelled, StatusDescription: desc,
		})
	}
}

func (s *systemScheduler) newAlloc(plan *structs.Plan, job *structs.Job, tg *structs.TaskGroup,
	n *structs.Node, previous string, d *structs.Deployment) *structs.Allocation {
	a := &structs.Allocation{
		ID:                 uuid.NewString(),
		Namespace:          job.Namespace,
		EvalID:             plan.EvalID,
		Name:               fmt.Sprintf("%s.%s[0]", job.ID, tg.Name),
		NodeID:             n.ID,
		NodeName:           n.Name,
		JobID:              job.ID,
		JobVersion:         job.Version,
		TaskGroup:          tg.Name,
		AllocatedResources: allocatedResources(tg),
		Metrics:            &structs.AllocationMetric{NodesEvaluated: 1, NodesInPool: 1, NodePool: n.NodePool},
		DesiredStatus:      structs.AllocDesiredStatusRun,
		ClientStatus:       structs.AllocClientStatusPending,
		PreviousAllocation: previous,
	}
	if d != nil && tg.UsesDeployment() {
		a.DeploymentID = d.ID
	}
	return a
}

// allocatedResources grants each task what it asked for and the group its
// static ports.
func allocatedResources(tg *structs.TaskGroup) *structs.AllocatedResources {
	ar := &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{}}
	for _, t := range tg.Tasks {
		tr := &structs.AllocatedTaskResources{}
		if t.Resources != nil {
			tr.Cpu.CpuShares = int64(t.Resources.CPU)
			tr.Memory.MemoryMB = int64(t.Resources.MemoryMB)
			tr.Memory.MemoryMaxMB = int64(t.Resources.MemoryMaxMB)
		}
		ar.Tasks[t.Name] = tr
	}
	if tg.EphemeralDisk != nil {
		ar.Shared.DiskMB = int64(tg.EphemeralDisk.SizeMB)
	}
	for _, nw := range tg.Networks {
		for _, p := range nw.ReservedPorts {
			ar.Shared.Ports = append(ar.Shared.Ports, structs.AllocatedPortMapping{Label: p.Label, Value: p.Value, To: p.To})
		}
	}
	return ar
}

func desired(plan *structs.Plan, tg string) *structs.DesiredUpdates {
	du := plan.Annotations.DesiredTGUpdates[tg]
	if du == nil {
		du = &structs.DesiredUpdates{}
		plan.Annotations.DesiredTGUpdates[tg] = du
	}
	return du
}

// liveAllocs returns the allocations that are neither stopped nor finished,
// sorted by ID for deterministic output.
func liveAllocs(allocs []*structs.Allocation) []*structs.Allocation {
	var out []*structs.Allocation
	for _, a := range allocs {
		if !a.Terminal() {
			out = append(out, a)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// eligibleNodes returns the ready nodes in job's datacenters and node pool,
// sorted by ID.
func eligibleNodes(job *structs.Job, nodes []*structs.Node) []*structs.Node {
	var out []*structs.Node
	for _, n := range nodes {
		if !n.Ready() || (job.NodePool != "" && job.NodePool != "all" && n.NodePool != job.NodePool) {
			continue
		}
		if datacenterMatches(job.Datacenters, n.Datacenter) {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// datacenterMatches reports whether dc matches one of the job's datacenter
// patterns (globs such as "*" or "us-*" are allowed, as in Nomad).
func datacenterMatches(patterns []string, dc string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, dc); ok {
			return true
		}
	}
	return false
}

// completedOn reports whether a sysbatch group already completed on nodeID for
// this job version.
func completedOn(allocs []*structs.Allocation, job *structs.Job, tg, nodeID string) bool {
	for _, a := range allocs {
		if a.NodeID == nodeID && a.TaskGroup == tg && a.JobVersion == job.Version &&
			a.ClientStatus == structs.AllocClientStatusComplete {
			return true
		}
	}
	return false
}
