package state

import (
	"sort"
	"time"

	"github.com/drover-project/drover/nomad/structs"
)

// Deployment health aggregation.
//
// A deployment group's HealthyAllocs and UnhealthyAllocs are derived data:
// they are recounted from the deployment's allocations, in the same write
// transaction, whenever a write changes what they count (an allocation's
// health, its deployment, or whether the server stopped it). Whoever
// writes (client update, plan, manual health) the counts cannot go stale,
// and a plan computed on an old snapshot cannot overwrite them.
//
// Counting rules (countsHealthy, countsUnhealthy):
//   - an allocation marked healthy counts as healthy, even after it stops,
//     unless it is lost or unknown (its node went down or disconnected:
//     structs.CountsHealthy);
//   - an allocation marked unhealthy counts as unhealthy, unless the server
//     has stopped it: an allocation replaced or stopped before it became
//     healthy is killed by its client, which then reports it unhealthy, and
//     that says nothing about the new version.
//
// When an allocation becomes healthy, its group made progress: the group's
// RequireProgressBy moves to the time of the write plus ProgressDeadline.
// Persisting it here is what lets a new leader rebuild the deployment
// watcher with its deadlines intact.

// countsHealthy reports whether a counts as a healthy allocation of its
// deployment.
func countsHealthy(a *structs.Allocation) bool { return structs.CountsHealthy(a) }

// countsUnhealthy reports whether a counts as an unhealthy allocation of its
// deployment.
func countsUnhealthy(a *structs.Allocation) bool {
	return a.DeploymentStatus.IsUnhealthy() && !a.ServerTerminal()
}

// healthKey is what the health counts of a deployment see of one allocation.
type healthKey struct {
	deploymentID string
	group        string
	healthy      bool
	unhealthy    bool
}

func healthKeyOf(a *structs.Allocation) healthKey {
	if a == nil {
		return healthKey{}
	}
	return healthKey{a.DeploymentID, a.TaskGroup, countsHealthy(a), countsUnhealthy(a)}
}

// healthChanges collects, during one write transaction, the deployments
// whose counts must be recounted, and for each the groups that gained a
// healthy allocation.
type healthChanges map[string]map[string]bool // deployment ID → group → gained a healthy alloc

// recount asks for deployment id to be recounted.
func (h healthChanges) recount(id string) {
	if id != "" && h[id] == nil {
		h[id] = map[string]bool{}
	}
}

// note records the change of one allocation from before (nil: new) to
// after (nil: deleted).
func (h healthChanges) note(before, after *structs.Allocation) {
	b, a := healthKeyOf(before), healthKeyOf(after)
	if b == a {
		return
	}
	h.recount(b.deploymentID)
	h.recount(a.deploymentID)
	if a.deploymentID != "" && a.healthy && !(b.healthy && b.deploymentID == a.deploymentID) {
		h[a.deploymentID][a.group] = true
	}
}

// applyHealthChanges recounts every collected deployment that is still
// active and pushes the progress deadline of the groups that gained a
// healthy allocation to now (unix nanoseconds) + ProgressDeadline; now 0
// means the write has no time (a direct server upsert): deadlines and
// ModifyTime are then left alone. A deployment whose counts and deadlines
// did not change is not rewritten. Terminal deployments keep the counts they
// ended with.
func (tx *writeTxn) applyHealthChanges(h healthChanges, now int64) error {
	ids := make([]string, 0, len(h))
	for id := range h {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		d, err := deploymentByID(tx.Txn, nil, id)
		if err != nil {
			return err
		}
		if d == nil || !d.Active() {
			continue
		}
		c := d.Copy()
		if err := tx.recountDeploymentHealth(c); err != nil {
			return err
		}
		for group, gained := range h[id] {
			st := c.TaskGroups[group]
			if gained && now != 0 && st != nil && st.ProgressDeadline > 0 {
				st.RequireProgressBy = time.Unix(0, now).Add(st.ProgressDeadline)
			}
		}
		if sameHealth(d, c) {
			continue
		}
		c.ModifyIndex = tx.index
		if now != 0 {
			c.ModifyTime = now
		}
		if err := tx.insert(TableDeployments, c); err != nil {
			return err
		}
	}
	return nil
}

// sameHealth reports whether a and b have the same health counts and
// progress deadlines in every group.
func sameHealth(a, b *structs.Deployment) bool {
	for name, sb := range b.TaskGroups {
		sa := a.TaskGroups[name]
		if sa == nil || sa.HealthyAllocs != sb.HealthyAllocs || sa.UnhealthyAllocs != sb.UnhealthyAllocs ||
			!sa.RequireProgressBy.Equal(sb.RequireProgressBy) {
			return false
		}
	}
	return true
}

// recountDeploymentHealth sets HealthyAllocs and UnhealthyAllocs of every
// group of d (a private copy) from the deployment's allocations.
func (tx *writeTxn) recountDeploymentHealth(d *structs.Deployment) error {
	allocs, err := allocsOfDeployment(tx.Txn, nil, d.ID, d)
	if err != nil {
		return err
	}
	for _, st := range d.TaskGroups {
		st.HealthyAllocs, st.UnhealthyAllocs = 0, 0
	}
	for _, a := range allocs {
		st, ok := d.TaskGroups[a.TaskGroup]
		if !ok {
			continue
		}
		switch {
		case countsHealthy(a):
			st.HealthyAllocs++
		case countsUnhealthy(a):
			st.UnhealthyAllocs++
		}
	}
	return nil
}

// mergeStoredDeployment keeps in d, a plan's copy of deployment exist
// computed on a possibly stale snapshot, what the plan must not undo:
//
//   - the status, unless exist is running: a plan does not resurrect a
//     deployment that was paused, failed or cancelled after its snapshot;
//   - promotion, which is one-way;
//   - the progress deadline of every group exist has (the state store and
//     the deployment watcher own it once the group exists), and its
//     SignalsAtResume (the state store's), and its gate record (the
//     deployment watcher's);
//   - the groups the plan dropped.
//
// Health counts are recounted after the merge (applyHealthChanges).
func mergeStoredDeployment(d, exist *structs.Deployment) {
	if exist.Status != structs.DeploymentStatusRunning {
		d.Status, d.StatusDescription = exist.Status, exist.StatusDescription
	}
	for name, old := range exist.TaskGroups {
		st, ok := d.TaskGroups[name]
		if !ok {
			c := *old
			c.PlacedCanaries = append([]string(nil), old.PlacedCanaries...)
			d.TaskGroups[name] = &c
			continue
		}
		st.Promoted = st.Promoted || old.Promoted
		st.RequireProgressBy = old.RequireProgressBy
		st.SignalsAtResume = old.SignalsAtResume
		st.Gate = old.Gate
	}
	if d.StatusDescription == structs.DeploymentStatusDescriptionRunningNeedsPromotion ||
		d.StatusDescription == structs.DeploymentStatusDescriptionRunningAutoPromotion {
		if allPromoted(d) {
			d.StatusDescription = structs.DeploymentStatusDescriptionRunning
		}
	}
}

// allPromoted reports whether every group of d with canaries is promoted.
func allPromoted(d *structs.Deployment) bool {
	for _, st := range d.TaskGroups {
		if st.DesiredCanaries > 0 && !st.Promoted {
			return false
		}
	}
	return true
}

// resetProgressDeadlines sets RequireProgressBy of every group of d (a
// private copy) that has a progress deadline and is selected by want to
// now + ProgressDeadline.
func resetProgressDeadlines(d *structs.Deployment, now time.Time, want func(name string, st *structs.DeploymentState) bool) {
	for name, st := range d.TaskGroups {
		if st.ProgressDeadline > 0 && want(name, st) {
			st.RequireProgressBy = now.Add(st.ProgressDeadline)
		}
	}
}
