package scheduler

import (
	"time"

	"github.com/drover-project/drover/nomad/structs"
)

// deployment decides the deployment of the job's version and the status
// updates of others. It runs after every group was visited.
//
// Rules (this issue: no max_parallel or canary gating yet):
//   - job stopped or purged: an active deployment is cancelled ("Cancelled
//     because job is stopped") and allocations join none;
//   - an active deployment of another version (or of an earlier
//     registration of the job) is cancelled ("Cancelled due to newer
//     version of job");
//   - sysbatch jobs and jobs without a group that UsesDeployment get none;
//   - the version's deployment is reused while active; once it is terminal
//     (successful, failed, cancelled) new allocations join none;
//   - otherwise one is created when a deployment group places, replaces or
//     updates in place at least one allocation.
func (r *reconciler) deployment() (*structs.Deployment, []*structs.DeploymentStatusUpdate) {
	cur := r.in.Deployment
	if r.job == nil {
		if cur != nil && cur.Active() {
			return nil, []*structs.DeploymentStatusUpdate{cancel(cur, structs.DeploymentStatusDescriptionStoppedJob)}
		}
		return nil, nil
	}
	var updates []*structs.DeploymentStatusUpdate
	matches := cur != nil && cur.JobVersion == r.job.Version && cur.JobCreateIndex == r.job.CreateIndex
	if cur != nil && !matches && cur.Active() {
		updates = append(updates, cancel(cur, structs.DeploymentStatusDescriptionNewerJob))
	}
	if r.sysbatch || !r.usesDeployment() {
		return nil, updates
	}
	var d *structs.Deployment
	switch {
	case matches && cur.Active():
		d = cur.Copy()
	case matches:
		return nil, updates
	case !r.hasDeploymentWork():
		return nil, updates
	default:
		d = newDeployment(r.job)
	}
	r.countDeployment(d)
	return d, updates
}

// countDeployment recomputes DesiredTotal and PlacedAllocs of d's groups.
// PlacedAllocs counts the allocations that ever joined d (stored ones,
// whatever their status, plus this decision's), so re-planning after a
// partial commit does not count twice.
func (r *reconciler) countDeployment(d *structs.Deployment) {
	placed := map[string]int{}
	if d.ID != "" {
		for _, a := range r.in.Allocs {
			if a.DeploymentID == d.ID {
				placed[a.TaskGroup]++
			}
		}
	}
	for _, g := range r.groups {
		if g.Group == nil || !g.Group.UsesDeployment() {
			continue
		}
		st := d.TaskGroups[g.Name]
		if st == nil {
			st = newDeploymentState(g.Group, r.in.Now)
			d.TaskGroups[g.Name] = st
		}
		st.DesiredTotal = g.DesiredTotal
		st.PlacedAllocs = placed[g.Name] + g.joins()
	}
}

// joins counts the allocations of g that join the deployment.
func (g *GroupResult) joins() int {
	return len(g.Place) + len(g.DestructiveUpdate) + len(g.InplaceUpdate)
}

func (r *reconciler) usesDeployment() bool {
	for _, g := range r.groups {
		if g.Group != nil && g.Group.UsesDeployment() {
			return true
		}
	}
	return false
}

func (r *reconciler) hasDeploymentWork() bool {
	for _, g := range r.groups {
		if g.Group != nil && g.Group.UsesDeployment() && g.joins() > 0 {
			return true
		}
	}
	return false
}

// newDeployment returns a running deployment of job without an ID.
func newDeployment(job *structs.Job) *structs.Deployment {
	return &structs.Deployment{
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
}

// newDeploymentState copies tg's update block into a group state.
// RequireProgressBy is now + ProgressDeadline; a zero deadline (none) leaves
// it zero.
func newDeploymentState(tg *structs.TaskGroup, now time.Time) *structs.DeploymentState {
	st := &structs.DeploymentState{
		AutoRevert:       tg.Update.AutoRevert,
		AutoPromote:      tg.Update.AutoPromote,
		ProgressDeadline: tg.Update.ProgressDeadline,
	}
	if st.ProgressDeadline > 0 {
		st.RequireProgressBy = now.Add(st.ProgressDeadline)
	}
	return st
}

func cancel(d *structs.Deployment, desc string) *structs.DeploymentStatusUpdate {
	return &structs.DeploymentStatusUpdate{
		DeploymentID:      d.ID,
		Status:            structs.DeploymentStatusCancelled,
		StatusDescription: desc,
	}
}
