package scheduler

import (
	"slices"

	"github.com/drover-project/drover/nomad/structs"
)

// What the system and generic plan builders (system_plan.go,
// generic_plan.go) both do to carry out a reconciler's decision.

// newPlan is the plan of eval for job (nil when stopped or purged), with
// the reconciler's counts per group and deployment status updates,
// planned against state index.
func newPlan(eval *structs.Evaluation, job *structs.Job, desired map[string]*structs.DesiredUpdates,
	updates []*structs.DeploymentStatusUpdate, index uint64) *structs.Plan {
	return &structs.Plan{
		EvalID:            eval.ID,
		Priority:          eval.Priority,
		Job:               job,
		Annotations:       &structs.PlanAnnotations{DesiredTGUpdates: desired},
		DeploymentUpdates: updates,
		SnapshotIndex:     index,
	}
}

// joinedDeployment returns d, the deployment the reconciler's placements
// and in-place updates join (or nil), after giving it an ID from newID
// when it is to be created (ID "").
func joinedDeployment(d *structs.Deployment, newID func() string) *structs.Deployment {
	if d != nil && d.ID == "" {
		d.ID = newID()
	}
	return d
}

// deploymentIDFor is the ID of d when the allocations of tg join it (tg
// uses a deployment), else "".
func deploymentIDFor(d *structs.Deployment, tg *structs.TaskGroup) string {
	if d == nil || tg == nil || !tg.UsesDeployment() {
		return ""
	}
	return d.ID
}

// inplaceCopy is a moved to job's version where it runs by evaluation
// evalID, keeping its ID and resources (an in-place update changes
// neither). It joins deploymentID (deploymentIDFor), and when that is
// another deployment than a's it must report health again.
func inplaceCopy(a *structs.Allocation, job *structs.Job, evalID, deploymentID string) *structs.Allocation {
	c := a.Copy()
	c.Job = nil // the plan carries the version once
	c.JobVersion = job.Version
	c.EvalID = evalID
	if deploymentID != c.DeploymentID {
		c.DeploymentID = deploymentID
		c.DeploymentStatus = nil
	}
	return c
}

// appendLost adds to plan the stop of a, a live allocation on a down or
// missing node, marking it lost.
func appendLost(plan *structs.Plan, a *structs.Allocation) {
	plan.AppendStop(a, DescLost)
	stops := plan.NodeUpdate[a.NodeID]
	stops[len(stops)-1].ClientStatus = structs.AllocClientStatusLost
}

// appendUnknown adds to plan the marking of a, a live allocation on a
// disconnected node within its group's lost_after, as unknown: its desired
// status stays, so it runs on where it is until its node reconnects or the
// deadline makes it lost.
func appendUnknown(plan *structs.Plan, a *structs.Allocation) {
	c := a.Copy()
	c.Job = nil
	c.ClientStatus, c.ClientDescription = structs.AllocClientStatusUnknown, DescUnknown
	if plan.NodeUpdate == nil {
		plan.NodeUpdate = map[string][]*structs.Allocation{}
	}
	plan.NodeUpdate[a.NodeID] = append(plan.NodeUpdate[a.NodeID], c)
}

// markCanary flags a, a new allocation of group, as a canary and lists it
// in the group's PlacedCanaries of d (nil: none).
func markCanary(a *structs.Allocation, d *structs.Deployment, group string) {
	a.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: true}
	if d == nil {
		return
	}
	if st := d.TaskGroups[group]; st != nil {
		st.PlacedCanaries = append(st.PlacedCanaries, a.ID)
	}
}

// countsChanged reports whether the scheduler-owned fields of d (counts,
// canaries, description) differ from old's.
func countsChanged(old, d *structs.Deployment) bool {
	if old.StatusDescription != d.StatusDescription {
		return true
	}
	for name, st := range d.TaskGroups {
		o := old.TaskGroups[name]
		if o == nil || o.DesiredTotal != st.DesiredTotal || o.PlacedAllocs != st.PlacedAllocs ||
			o.DesiredCanaries != st.DesiredCanaries || !slices.Equal(o.PlacedCanaries, st.PlacedCanaries) {
			return true
		}
	}
	return false
}
