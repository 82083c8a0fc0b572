package scheduler

import (
	"github.com/drover-project/drover/nomad/structs"
)

// prepareDeployment picks the deployment of the job's version before the
// groups are reconciled, sets the gate, and returns the status updates of
// other deployments.
//
// Rules (as for system jobs, system_deployment.go):
//   - job stopped or purged: an active deployment is cancelled;
//   - a deployment of another version is cancelled when active;
//   - batch jobs and jobs without a group that UsesDeployment get none;
//   - the version's active deployment is reused (running or paused);
//     once successful nothing is gated and new allocations join none;
//     once failed or cancelled, destructive updates and canaries stop
//     for good (missing allocations are still placed, outside it);
//   - otherwise a new one is prepared; finishDeployment drops it when no
//     allocation joins.
func (r *genericReconciler) prepareDeployment() []*structs.DeploymentStatusUpdate {
	cur := r.in.Deployment
	matches, updates := retireDeployment(cur, r.job)
	if r.job == nil {
		return updates
	}
	if r.batch || !r.anyGroupUsesDeployment() {
		return updates
	}
	switch {
	case matches && cur.Status == structs.DeploymentStatusPaused:
		r.d, r.gate = copyDeployment(cur), gatePaused
	case matches && cur.Active():
		r.d, r.gate = copyDeployment(cur), gateRunning
	case matches && cur.Status == structs.DeploymentStatusSuccessful:
		r.gate = gateNone
	case matches:
		r.gate = gateHalted
		r.d = copyDeployment(cur) // read for canaries; never written
	default:
		r.d, r.gate = newDeployment(r.job), gateRunning
	}
	return updates
}

func (r *genericReconciler) anyGroupUsesDeployment() bool {
	for _, tg := range r.job.TaskGroups {
		if tg.UsesDeployment() {
			return true
		}
	}
	return false
}

// groupState returns d's state of g, created from g's update block.
func (r *genericReconciler) groupState(g *GenericGroup) *structs.DeploymentState {
	st := r.d.TaskGroups[g.Name]
	if st == nil {
		st = newDeploymentState(g.Group, r.in.Now)
		r.d.TaskGroups[g.Name] = st
	}
	return st
}

// finishDeployment counts the deployment's groups and returns it, or nil
// when the version's deployment is not joined by this decision (none,
// halted, or new with nothing joining).
func (r *genericReconciler) finishDeployment() *structs.Deployment {
	if r.d == nil || (r.gate != gateRunning && r.gate != gatePaused) {
		return nil
	}
	joined := 0
	for _, g := range r.groups {
		if g.Group == nil || !g.Group.UsesDeployment() {
			continue
		}
		st := r.groupState(g)
		st.DesiredTotal = g.Group.Count
		stored := 0
		if r.d.ID != "" {
			for _, a := range r.byName[g.Name] {
				if a.DeploymentID == r.d.ID {
					stored++
				}
			}
		}
		joins := len(g.Place) + len(g.InplaceUpdate)
		st.PlacedAllocs = stored + joins
		joined += joins
	}
	if r.d.ID == "" && joined == 0 {
		return nil
	}
	describe(r.d)
	return r.d
}
