package state

import (
	"fmt"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/structs"
)

// deploymentByID returns deployment id, or nil.
func deploymentByID(txn *memdb.Txn, ws memdb.WatchSet, id string) (*structs.Deployment, error) {
	raw, err := first(txn, ws, TableDeployments, indexID, id)
	if raw == nil || err != nil {
		return nil, err
	}
	return raw.(*structs.Deployment), nil
}

// DeploymentByID returns deployment id, or nil.
func (r reader) DeploymentByID(ws memdb.WatchSet, id string) (*structs.Deployment, error) {
	return deploymentByID(r.txn(), ws, id)
}

// DeploymentsByIDPrefix returns the deployments of namespace ns ("*": all)
// whose ID starts with prefix, sorted by ID.
func (r reader) DeploymentsByIDPrefix(ws memdb.WatchSet, ns, prefix string) ([]*structs.Deployment, error) {
	all, err := list[*structs.Deployment](r.txn(), ws, TableDeployments, indexIDPrefix, prefix)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, d := range all {
		if nsMatch(ns, d.Namespace) {
			out = append(out, d)
		}
	}
	return out, nil
}

// Deployments returns the deployments of namespace ns ("*": all), sorted by ID.
func (r reader) Deployments(ws memdb.WatchSet, ns string) ([]*structs.Deployment, error) {
	return r.DeploymentsByIDPrefix(ws, ns, "")
}

// DeploymentsByJobID returns the deployments of job (ns, jobID), sorted by
// ID. With all false only those of the job's current incarnation
// (JobCreateIndex equal to the job's CreateIndex) are returned; when the job
// does not exist, all are.
func (r reader) DeploymentsByJobID(ws memdb.WatchSet, ns, jobID string, all bool) ([]*structs.Deployment, error) {
	txn := r.txn()
	ns = nsOrDefault(ns)
	ds, err := list[*structs.Deployment](txn, ws, TableDeployments, indexJob, ns, jobID)
	if err != nil || all {
		return ds, err
	}
	job, err := jobByID(txn, ws, ns, jobID)
	if job == nil || err != nil {
		return ds, err
	}
	out := ds[:0]
	for _, d := range ds {
		if d.JobCreateIndex == job.CreateIndex {
			out = append(out, d)
		}
	}
	return out, nil
}

// LatestDeploymentByJobID returns the deployment of job (ns, jobID) with the
// highest CreateIndex, or nil.
func (r reader) LatestDeploymentByJobID(ws memdb.WatchSet, ns, jobID string) (*structs.Deployment, error) {
	ds, err := list[*structs.Deployment](r.txn(), ws, TableDeployments, indexJob, nsOrDefault(ns), jobID)
	if err != nil {
		return nil, err
	}
	var latest *structs.Deployment
	for _, d := range ds {
		if latest == nil || d.CreateIndex > latest.CreateIndex {
			latest = d
		}
	}
	return latest, nil
}

// UpsertDeployment inserts or replaces deployment d: CreateIndex (and
// CreateTime) are kept for an existing one, ModifyIndex becomes index. The
// health counts are the store's: an existing deployment's stay, a new one's
// (or a new group's) are counted from its allocations (deployment_health.go).
// d is not modified.
func (s *StateStore) UpsertDeployment(index uint64, d *structs.Deployment) error {
	if d == nil {
		return fmt.Errorf("state: upsert deployment: nil deployment")
	}
	return s.write(index, func(tx *writeTxn) error { return tx.upsertDeployment(d.Copy(), 0) })
}

// upsertDeployment implements UpsertDeployment for d, a private copy. When
// now is not 0 it is the ModifyTime (and the CreateTime of a new one).
func (tx *writeTxn) upsertDeployment(d *structs.Deployment, now int64) error {
	d.Namespace = nsOrDefault(d.Namespace)
	exist, err := deploymentByID(tx.Txn, nil, d.ID)
	if err != nil {
		return err
	}
	tx.keepStoredCounts(d, exist)
	if exist != nil {
		d.CreateIndex, d.CreateTime = exist.CreateIndex, exist.CreateTime
	} else {
		d.CreateIndex = tx.index
		if now != 0 && d.CreateTime == 0 {
			d.CreateTime = now
		}
	}
	if now != 0 {
		d.ModifyTime = now
	}
	d.ModifyIndex = tx.index
	if err := tx.insert(TableDeployments, d); err != nil {
		return fmt.Errorf("upsert deployment %q: %w", d.ID, err)
	}
	return nil
}

// UpdateDeploymentStatus sets the status and description of deployment
// u.DeploymentID, and the gate records u.Gates names; updatedAt becomes its ModifyTime. A missing deployment is
// ErrNotFound; a terminal one is ErrConflict (its outcome is final, and a
// late failure must not register an auto-revert over a newer job). Resuming
// a paused deployment restarts the progress deadline of every group at
// updatedAt, so that a long pause does not fail it at once.
func (s *StateStore) UpdateDeploymentStatus(index uint64, u *structs.DeploymentStatusUpdate, updatedAt int64) error {
	return s.write(index, func(tx *writeTxn) error { return tx.updateDeploymentStatus(u, updatedAt) })
}

// updateDeploymentStatus implements UpdateDeploymentStatus.
func (tx *writeTxn) updateDeploymentStatus(u *structs.DeploymentStatusUpdate, updatedAt int64) error {
	d, err := deploymentByID(tx.Txn, nil, u.DeploymentID)
	if err != nil {
		return err
	}
	if d == nil {
		return fmt.Errorf("update status of deployment %q: %w", u.DeploymentID, ErrNotFound)
	}
	if !d.Active() {
		return fmt.Errorf("can't update status of terminal deployment %q: %w", u.DeploymentID, ErrConflict)
	}
	c := d.Copy()
	if d.Status == structs.DeploymentStatusPaused && u.Status == structs.DeploymentStatusRunning {
		resetProgressDeadlines(c, time.Unix(0, updatedAt), func(string, *structs.DeploymentState) bool { return true })
		if err := tx.recordSignalsAtResume(c); err != nil {
			return err
		}
	}
	resumed := d.Status == structs.DeploymentStatusPaused && u.Status == structs.DeploymentStatusRunning
	c.Status, c.StatusDescription = u.Status, u.StatusDescription
	applyGateRecords(c, u.Gates, resumed)
	c.ModifyIndex, c.ModifyTime = tx.index, updatedAt
	return tx.insert(TableDeployments, c)
}

// applyGateRecords sets the gate records of c (a private copy) that gates
// names; a name c has no group of is ignored. On a resume, the records
// gates does not replace lose their PausedBy: whoever resumed, no gate
// holds the deployment paused any more (a gate that still fails pauses it
// again).
func applyGateRecords(c *structs.Deployment, gates map[string]*structs.DeploymentGate, resumed bool) {
	for name, st := range c.TaskGroups {
		if st == nil {
			continue
		}
		if g, ok := gates[name]; ok {
			st.Gate = g.Copy()
			continue
		}
		if resumed && st.Gate != nil && st.Gate.PausedBy != "" {
			st.Gate = st.Gate.Copy()
			st.Gate.PausedBy = ""
		}
	}
}

// UpdateDeploymentPromotion promotes the canaries of every group (req.All)
// or of the named groups that have canaries. A missing deployment is
// ErrNotFound; a terminal one, or a named group the deployment does not
// have, is ErrConflict. A description asking for promotion becomes
// "Deployment is running", the progress deadline of each newly promoted
// group restarts at req.UpdatedAt (the rest of the rollout starts now), and
// the promoted canaries stop being flagged as canaries, in the same
// transaction.
func (s *StateStore) UpdateDeploymentPromotion(index uint64, req *structs.DeploymentPromoteRequest) error {
	return s.write(index, func(tx *writeTxn) error {
		d, err := deploymentByID(tx.Txn, nil, req.DeploymentID)
		if err != nil {
			return err
		}
		if d == nil {
			return fmt.Errorf("promote deployment %q: %w", req.DeploymentID, ErrNotFound)
		}
		if !d.Active() {
			return fmt.Errorf("can't promote terminal deployment: %w", ErrConflict)
		}
		groups := req.Groups
		if req.All {
			groups = nil
			for name := range d.TaskGroups {
				groups = append(groups, name)
			}
		}
		c := d.Copy()
		promoted := map[string]bool{}
		for _, name := range groups {
			st, ok := c.TaskGroups[name]
			if !ok {
				return fmt.Errorf("deployment %q has no task group %q to promote: %w", d.ID, name, ErrConflict)
			}
			if st.DesiredCanaries > 0 && !st.Promoted {
				st.Promoted, promoted[name] = true, true
			}
		}
		resetProgressDeadlines(c, time.Unix(0, req.UpdatedAt), func(name string, _ *structs.DeploymentState) bool { return promoted[name] })
		if err := tx.clearCanaryFlags(d.ID, promoted, req.UpdatedAt); err != nil {
			return err
		}
		switch c.StatusDescription {
		case structs.DeploymentStatusDescriptionRunningNeedsPromotion,
			structs.DeploymentStatusDescriptionRunningAutoPromotion:
			c.StatusDescription = structs.DeploymentStatusDescriptionRunning
		}
		c.ModifyIndex, c.ModifyTime = tx.index, req.UpdatedAt
		return tx.insert(TableDeployments, c)
	})
}

// clearCanaryFlags ends the canary status of the allocations of deployment
// id in the promoted groups: once promoted, a canary is an ordinary
// allocation of the new version (the group's PlacedCanaries still lists
// it). AllocModifyIndex is unchanged: clients need not re-sync, and the
// server ignores the flag in their reports.
func (tx *writeTxn) clearCanaryFlags(id string, promoted map[string]bool, updatedAt int64) error {
	if len(promoted) == 0 {
		return nil
	}
	d, err := deploymentByID(tx.Txn, nil, id)
	if err != nil {
		return err
	}
	allocs, err := allocsOfDeployment(tx.Txn, nil, id, d)
	if err != nil {
		return err
	}
	for _, a := range allocs {
		if !promoted[a.TaskGroup] || a.DeploymentStatus == nil || !a.DeploymentStatus.Canary {
			continue
		}
		c := a.Copy()
		c.DeploymentStatus.Canary = false
		c.DeploymentStatus.ModifyIndex = tx.index
		c.ModifyIndex, c.ModifyTime = tx.index, updatedAt
		if err := tx.insert(TableAllocs, c); err != nil {
			return err
		}
		tx.markJob(c.Namespace, c.JobID)
	}
	return nil
}

// UpdateDeploymentAllocHealth records the health of allocations of
// deployment req.DeploymentID at req.Timestamp (unix nanoseconds), recounts
// the deployment's healthy and unhealthy allocations per group (pushing the
// progress deadline of groups that gained a healthy allocation), and applies
// req.DeploymentUpdate (or nil). A missing deployment or allocation is
// ErrNotFound; a terminal deployment, or an allocation of another
// deployment, is ErrConflict. req.Job and req.Eval are the FSM's business.
func (s *StateStore) UpdateDeploymentAllocHealth(index uint64, req *structs.DeploymentAllocHealthRequest) error {
	return s.write(index, func(tx *writeTxn) error {
		d, err := deploymentByID(tx.Txn, nil, req.DeploymentID)
		if err != nil {
			return err
		}
		if d == nil {
			return fmt.Errorf("set alloc health in deployment %q: %w", req.DeploymentID, ErrNotFound)
		}
		if !d.Active() {
			return fmt.Errorf("can't set health of allocations for a terminal deployment: %w", ErrConflict)
		}
		ts := time.Unix(0, req.Timestamp).UTC()
		changes := healthChanges{}
		changes.recount(d.ID)
		for _, set := range []struct {
			ids     []string
			healthy bool
		}{{req.HealthyAllocationIDs, true}, {req.UnhealthyAllocationIDs, false}} {
			for _, id := range set.ids {
				if err := tx.setAllocHealth(d.ID, id, set.healthy, ts, changes); err != nil {
					return err
				}
			}
		}
		if err := tx.applyHealthChanges(changes, req.Timestamp); err != nil {
			return err
		}
		if d, err = deploymentByID(tx.Txn, nil, req.DeploymentID); err != nil {
			return err
		}
		c := d.Copy()
		if u := req.DeploymentUpdate; u != nil {
			c.Status, c.StatusDescription = u.Status, u.StatusDescription
		}
		c.ModifyIndex = tx.index
		c.ModifyTime = req.Timestamp
		return tx.insert(TableDeployments, c)
	})
}

// setAllocHealth marks allocation id of deployment deploymentID healthy or
// not, noting the change in changes.
func (tx *writeTxn) setAllocHealth(deploymentID, id string, healthy bool, ts time.Time, changes healthChanges) error {
	a, err := tx.allocByID(id)
	if err != nil {
		return err
	}
	if a == nil {
		return fmt.Errorf("set health of alloc %q: %w", id, ErrNotFound)
	}
	if a.DeploymentID != deploymentID {
		return fmt.Errorf("alloc %q is not part of deployment %q: %w", id, deploymentID, ErrConflict)
	}
	c := a.Copy()
	if c.DeploymentStatus == nil {
		c.DeploymentStatus = &structs.AllocDeploymentStatus{}
	}
	h := healthy
	c.DeploymentStatus.Healthy = &h
	c.DeploymentStatus.Timestamp = ts
	c.DeploymentStatus.ModifyIndex = tx.index
	c.ModifyIndex = tx.index
	changes.note(a, c)
	return tx.insert(TableAllocs, c)
}
