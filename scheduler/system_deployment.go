package scheduler

import (
	"time"

	"github.com/drover-project/drover/nomad/structs"
)

// deployment decides the deployment of the job's version, gates the work
// of the groups that use it (system_rollout.go), and decides the status
// updates of other deployments. It runs after every group was visited. It returns the
// deployment (or nil), the status updates, and when a group held back by
// its stagger may start its next wave (zero when none is).
//
// Rules:
//   - job stopped or purged: an active deployment is cancelled ("Cancelled
//     because job is stopped") and allocations join none; a stopped job
//     never gets a deployment;
//   - a deployment of another version (or of an earlier registration of
//     the job) is retired: cancelled ("Cancelled due to newer version of
//     job") when active, ignored otherwise. A failed one never blocks the
//     next version, an auto-revert included;
//   - sysbatch jobs and jobs without a group that UsesDeployment get none;
//   - the version's deployment is reused while active (running or paused);
//   - once it succeeded, new allocations join none and nothing is gated;
//   - once it failed or was cancelled, the version reaches no more nodes:
//     deployment groups place, replace and update nothing;
//   - otherwise one is created when a deployment group places, replaces or
//     updates in place at least one allocation.
func (r *systemReconciler) deployment() (*structs.Deployment, []*structs.DeploymentStatusUpdate, time.Time) {
	cur := r.in.Deployment
	matches, updates := retireDeployment(cur, r.job)
	if r.job == nil {
		return nil, updates, time.Time{}
	}
	if r.sysbatch || !r.usesDeployment() {
		return nil, updates, time.Time{}
	}
	var d *structs.Deployment
	switch {
	case matches && cur.Active():
		d = copyDeployment(cur)
	case matches && cur.Status == structs.DeploymentStatusSuccessful:
		return nil, updates, time.Time{}
	case matches:
		// Assumptions: a failed or cancelled rollout must not creep on
		// through unrelated evaluations (node events, health changes);
		// only a new job version (a fix or a revert) moves on.
		r.holdDeploymentGroups()
		return nil, updates, time.Time{}
	case !r.hasDeploymentWork():
		return nil, updates, time.Time{}
	default:
		d = newDeployment(r.job)
	}
	byGroup := r.allocsOfDeployment(d.ID)
	followup := r.gateGroups(d, byGroup)
	r.countDeployment(d, byGroup)
	describe(d)
	return d, updates, followup
}

// allocsOfDeployment returns the allocations of deployment id by group; a
// deployment still to be created (id "") has none.
func (r *systemReconciler) allocsOfDeployment(id string) map[string][]*structs.Allocation {
	out := map[string][]*structs.Allocation{}
	if id == "" {
		return out
	}
	for _, a := range r.in.Allocs {
		if a.DeploymentID == id {
			out[a.TaskGroup] = append(out[a.TaskGroup], a)
		}
	}
	return out
}

// countDeployment recomputes DesiredTotal and PlacedAllocs of d's groups
// after gating. PlacedAllocs counts the allocations that ever joined d
// (stored ones, whatever their status, plus this decision's), so
// re-planning after a partial commit does not count twice.
func (r *systemReconciler) countDeployment(d *structs.Deployment, byGroup map[string][]*structs.Allocation) {
	for _, g := range r.groups {
		if !g.usesDeployment() {
			continue
		}
		st := d.TaskGroups[g.Name]
		st.DesiredTotal = g.DesiredTotal
		st.PlacedAllocs = len(byGroup[g.Name]) + g.joins()
	}
}

// describe sets the description of a running deployment: it asks for
// promotion while a group's canaries await it (automatic promotion when
// every such group has auto_promote), and says "running" again after.
// Other statuses keep their description.
func describe(d *structs.Deployment) {
	if d.Status != structs.DeploymentStatusRunning {
		return
	}
	canarying, manual := false, false
	for _, st := range d.TaskGroups {
		if st.DesiredCanaries > 0 && !st.Promoted {
			canarying = true
			manual = manual || !st.AutoPromote
		}
	}
	switch {
	case manual:
		d.StatusDescription = structs.DeploymentStatusDescriptionRunningNeedsPromotion
	case canarying:
		d.StatusDescription = structs.DeploymentStatusDescriptionRunningAutoPromotion
	case d.StatusDescription == structs.DeploymentStatusDescriptionRunningNeedsPromotion,
		d.StatusDescription == structs.DeploymentStatusDescriptionRunningAutoPromotion:
		d.StatusDescription = structs.DeploymentStatusDescriptionRunning
	}
}

// holdDeploymentGroups defers all work of the groups that use deployments.
func (r *systemReconciler) holdDeploymentGroups() {
	for _, g := range r.groups {
		if g.usesDeployment() {
			g.holdAll()
		}
	}
}

// joins counts the allocations of g that join the deployment.
func (g *SystemGroupResult) joins() int {
	return len(g.Place) + len(g.DestructiveUpdate) + len(g.InplaceUpdate)
}

func (r *systemReconciler) usesDeployment() bool {
	for _, g := range r.groups {
		if g.usesDeployment() {
			return true
		}
	}
	return false
}

// hasDeploymentWork reports whether a deployment group has anything to
// place or update, before gating.
func (r *systemReconciler) hasDeploymentWork() bool {
	for _, g := range r.groups {
		if g.usesDeployment() && g.joins() > 0 {
			return true
		}
	}
	return false
}
