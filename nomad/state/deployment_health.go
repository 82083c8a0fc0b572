package state

import (
	"sort"
	"time"

	"github.com/drover-project/drover/nomad/structs"
)

// Deployment health aggregation.
//
// A deployment group's HealthyAllocs and UnhealthyAllocs are derived data
// that the state store owns: every write of an allocation (insertAlloc and
// delete, whoever writes: client update, plan, manual health, garbage
// collection) adds its change to per deployment and group deltas in the
// write transaction (healthDeltas), and the transaction applies them to the
// stored counts before it commits, in O(changes), never listing the
// deployment's allocations. A deployment written in the transaction keeps
// the stored counts whatever its copy says (a plan computed on an old
// snapshot cannot overwrite them); one created in the transaction, or one
// that gained a group, is counted once from its allocations
// (recountDeploymentHealth, also the reference the property test checks
// the deltas against). The invariant: an active deployment's counts equal
// a recount of its allocations after every write; a terminal one keeps
// the counts it ended with.
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
// whose health a write path touched, and for each the groups that gained a
// healthy allocation (their progress deadline moves).
type healthChanges map[string]map[string]bool // deployment ID → group → gained a healthy alloc

// recount asks for deployment id to be looked at by applyHealthChanges.
func (h healthChanges) recount(id string) {
	if id != "" && h[id] == nil {
		h[id] = map[string]bool{}
	}
}

// note records the change of one allocation from before (nil: new) to
// after (nil: deleted). The counts themselves follow from the
// transaction's healthDeltas, which see every allocation write.
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

// healthDeltaKey names the allocations of one job and group in one
// deployment. The job is part of the key because a deployment counts only
// its own job's allocations (allocsOfDeployment).
type healthDeltaKey struct {
	deploymentID, namespace, jobID, group string
}

// healthDelta is what a transaction changed in one key's counts.
type healthDelta struct{ healthy, unhealthy int }

// healthDeltas are a write transaction's changes to deployment health
// counts, and the deployments it must count from their allocations.
type healthDeltas struct {
	byKey map[healthDeltaKey]*healthDelta
	full  map[string]bool // deployment ID → count from the allocations
}

// add adds the classification of a (nil: nothing) to the deltas, with sign.
func (h *healthDeltas) add(a *structs.Allocation, sign int) {
	if a == nil || a.DeploymentID == "" {
		return
	}
	healthy, unhealthy := countsHealthy(a), countsUnhealthy(a)
	if !healthy && !unhealthy {
		return
	}
	k := healthDeltaKey{a.DeploymentID, a.Namespace, a.JobID, a.TaskGroup}
	if h.byKey == nil {
		h.byKey = map[healthDeltaKey]*healthDelta{}
	}
	d := h.byKey[k]
	if d == nil {
		d = &healthDelta{}
		h.byKey[k] = d
	}
	if healthy {
		d.healthy += sign
	} else {
		d.unhealthy += sign
	}
}

// noteAllocHealth records the write of one allocation from before (nil: new) to
// after (nil: deleted). Called by insertAlloc and delete for every
// allocation write.
func (tx *writeTxn) noteAllocHealth(before, after *structs.Allocation) {
	tx.health.add(before, -1)
	tx.health.add(after, +1)
}

// countFully asks for deployment id's counts to come from its allocations
// when the transaction applies its health changes.
func (tx *writeTxn) countFully(id string) {
	if tx.health.full == nil {
		tx.health.full = map[string]bool{}
	}
	tx.health.full[id] = true
}

// applyHealthChanges applies the transaction's health deltas (and counts
// the deployments created or widened in it from their allocations) to every
// deployment concerned that is still active, and pushes the progress
// deadline of the groups in h that gained a healthy allocation to now (unix
// nanoseconds) + ProgressDeadline; now 0 means the write has no time (a
// direct server upsert, garbage collection): deadlines and ModifyTime are
// then left alone. A deployment whose counts and deadlines did not change is
// not rewritten. Terminal deployments keep the counts they ended with. The
// deltas are spent: a second call applies only what was written since.
func (tx *writeTxn) applyHealthChanges(h healthChanges, now int64) error {
	deltas := map[string][]healthDeltaKey{}
	for k, d := range tx.health.byKey {
		if *d != (healthDelta{}) {
			deltas[k.deploymentID] = append(deltas[k.deploymentID], k)
		}
	}
	seen := map[string]bool{}
	var ids []string
	for _, set := range []func(func(string)){
		func(f func(string)) {
			for id := range h {
				f(id)
			}
		},
		func(f func(string)) {
			for id := range deltas {
				f(id)
			}
		},
		func(f func(string)) {
			for id := range tx.health.full {
				f(id)
			}
		},
	} {
		set(func(id string) {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		})
	}
	sort.Strings(ids)
	byKey, full := tx.health.byKey, tx.health.full
	tx.health = healthDeltas{}
	for _, id := range ids {
		d, err := deploymentByID(tx.Txn, nil, id)
		if err != nil {
			return err
		}
		if d == nil || !d.Active() {
			continue
		}
		c := d.Copy()
		if full[id] {
			if err := tx.recountDeploymentHealth(c); err != nil {
				return err
			}
		} else {
			for _, k := range deltas[id] {
				st := c.TaskGroups[k.group]
				if st == nil || k.namespace != c.Namespace || k.jobID != c.JobID {
					continue
				}
				st.HealthyAllocs += byKey[k].healthy
				st.UnhealthyAllocs += byKey[k].unhealthy
			}
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

// keepStoredCounts sets the health counts of d, a deployment about to be
// written, to the stored ones of exist (nil: d is new): the counts are the
// state store's, never the writer's. A new deployment, or a group exist
// does not have, is counted from the allocations when the transaction
// applies its health changes.
func (tx *writeTxn) keepStoredCounts(d, exist *structs.Deployment) {
	if exist == nil {
		tx.countFully(d.ID)
		return
	}
	for name, st := range d.TaskGroups {
		old, ok := exist.TaskGroups[name]
		if !ok {
			// Counted from the allocations if d is active; a terminal
			// deployment's counts are final, and it had none here.
			st.HealthyAllocs, st.UnhealthyAllocs = 0, 0
			tx.countFully(d.ID)
			continue
		}
		st.HealthyAllocs, st.UnhealthyAllocs = old.HealthyAllocs, old.UnhealthyAllocs
	}
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
// group of d (a private copy) from the deployment's allocations: O(the
// job's allocations), for a deployment created or widened in a
// transaction, and the reference the incremental counts are tested
// against.
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
// Health counts are the stored deployment's (keepStoredCounts, in
// upsertDeployment), moved by the transaction's deltas (applyHealthChanges).
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
