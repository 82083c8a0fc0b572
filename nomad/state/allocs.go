package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/structs"
)

// allocByID returns allocation id, or nil.
func allocByID(txn *memdb.Txn, ws memdb.WatchSet, id string) (*structs.Allocation, error) {
	raw, err := first(txn, ws, TableAllocs, indexID, id)
	if raw == nil || err != nil {
		return nil, err
	}
	return raw.(*structs.Allocation), nil
}

// AllocByID returns allocation id, or nil.
func (r reader) AllocByID(ws memdb.WatchSet, id string) (*structs.Allocation, error) {
	return allocByID(r.txn(), ws, id)
}

// AllocsByIDPrefix returns the allocations of namespace ns ("*": all) whose
// ID starts with prefix, sorted by ID.
func (r reader) AllocsByIDPrefix(ws memdb.WatchSet, ns, prefix string) ([]*structs.Allocation, error) {
	all, err := list[*structs.Allocation](r.txn(), ws, TableAllocs, indexIDPrefix, prefix)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, a := range all {
		if nsMatch(ns, a.Namespace) {
			out = append(out, a)
		}
	}
	return out, nil
}

// Allocs returns every allocation, sorted by ID.
func (r reader) Allocs(ws memdb.WatchSet) ([]*structs.Allocation, error) {
	return list[*structs.Allocation](r.txn(), ws, TableAllocs, indexID)
}

// allocsByJob returns the allocations of job (ns, jobID), sorted by ID. With
// all false only those of the job's current incarnation (alloc.Job.CreateIndex
// equal to the job's) and those whose job version is unknown are returned;
// when the job does not exist, all are.
func allocsByJob(txn *memdb.Txn, ws memdb.WatchSet, ns, jobID string, all bool) ([]*structs.Allocation, error) {
	ns = nsOrDefault(ns)
	allocs, err := list[*structs.Allocation](txn, ws, TableAllocs, indexJob, ns, jobID)
	if err != nil || all {
		return allocs, err
	}
	job, err := jobByID(txn, ws, ns, jobID)
	if job == nil || err != nil {
		return allocs, err
	}
	out := allocs[:0]
	for _, a := range allocs {
		if a.Job == nil || a.Job.CreateIndex == job.CreateIndex {
			out = append(out, a)
		}
	}
	return out, nil
}

// AllocsByJob returns the allocations of job (ns, jobID), sorted by ID. With
// all false only those of the job's current incarnation are returned (a
// purged and re-registered job does not see its predecessor's).
func (r reader) AllocsByJob(ws memdb.WatchSet, ns, jobID string, all bool) ([]*structs.Allocation, error) {
	return allocsByJob(r.txn(), ws, ns, jobID, all)
}

// AllocsByNode returns the allocations on node nodeID, sorted by ID.
func (r reader) AllocsByNode(ws memdb.WatchSet, nodeID string) ([]*structs.Allocation, error) {
	return list[*structs.Allocation](r.txn(), ws, TableAllocs, indexNode, nodeID)
}

// AllocsByEval returns the allocations evaluation evalID placed, sorted by ID.
//
// There is no index by evaluation (every placement would pay for one more
// radix insert, and only this read uses it): the evaluation names its job,
// whose allocations are filtered; when the evaluation is gone, all
// allocations are.
func (r reader) AllocsByEval(ws memdb.WatchSet, evalID string) ([]*structs.Allocation, error) {
	txn := r.txn()
	raw, err := first(txn, ws, TableEvals, indexID, evalID)
	if err != nil {
		return nil, err
	}
	ns, jobID := "", ""
	if e, ok := raw.(*structs.Evaluation); ok && e != nil {
		ns, jobID = e.Namespace, e.JobID
	}
	return allocsOfJobWhere(txn, ws, ns, jobID, func(a *structs.Allocation) bool { return a.EvalID == evalID })
}

// AllocsByDeployment returns the allocations of deployment id, sorted by ID.
func (r reader) AllocsByDeployment(ws memdb.WatchSet, id string) ([]*structs.Allocation, error) {
	txn := r.txn()
	d, err := deploymentByID(txn, ws, id)
	if err != nil {
		return nil, err
	}
	return allocsOfDeployment(txn, ws, id, d)
}

// allocsOfDeployment returns the allocations of deployment id (d, or nil
// when it is not stored), sorted by ID.
//
// There is no index by deployment (every placement and every client
// update would pay for one more radix insert): a deployment's allocations
// are those of its job that name it; when the deployment is gone, all
// allocations are filtered.
func allocsOfDeployment(txn *memdb.Txn, ws memdb.WatchSet, id string, d *structs.Deployment) ([]*structs.Allocation, error) {
	ns, jobID := "", ""
	if d != nil {
		ns, jobID = d.Namespace, d.JobID
	}
	return allocsOfJobWhere(txn, ws, ns, jobID, func(a *structs.Allocation) bool { return a.DeploymentID == id })
}

// allocsOfJobWhere returns the allocations of job ns/jobID (of every
// incarnation; of every job when jobID is "") that keep accepts, sorted by
// ID.
func allocsOfJobWhere(txn *memdb.Txn, ws memdb.WatchSet, ns, jobID string, keep func(*structs.Allocation) bool) ([]*structs.Allocation, error) {
	var allocs []*structs.Allocation
	var err error
	if jobID != "" {
		allocs, err = allocsByJob(txn, ws, ns, jobID, true)
	} else {
		allocs, err = list[*structs.Allocation](txn, ws, TableAllocs, indexID)
	}
	if err != nil {
		return nil, err
	}
	out := allocs[:0]
	for _, a := range allocs {
		if keep(a) {
			out = append(out, a)
		}
	}
	return out, nil
}

// UpsertAllocs inserts or updates allocations on behalf of the server.
//
// New allocations get CreateIndex index. For existing ones CreateIndex,
// CreateTime and the client-owned fields are kept: TaskStates, and
// ClientStatus/ClientDescription unless the update marks the allocation
// lost or unknown (the client reports them through UpdateAllocsFromClient).
// ModifyIndex and AllocModifyIndex become index. A nil alloc.Job is linked to
// the stored job version (Namespace, JobID, JobVersion). A new allocation
// naming a PreviousAllocation sets that allocation's NextAllocation. The
// health counts of the deployments concerned are recounted
// (deployment_health.go). The allocs are not modified.
func (s *StateStore) UpsertAllocs(index uint64, allocs []*structs.Allocation) error {
	return s.write(index, func(tx *writeTxn) error {
		jobs := newJobLinker(tx.Txn, nil)
		changes := healthChanges{}
		tx.expectAllocs(len(allocs))
		for _, a := range allocs {
			if err := tx.upsertAlloc(a.Copy(), jobs, 0, changes); err != nil {
				return fmt.Errorf("upsert alloc %q: %w", a.ID, err)
			}
		}
		return tx.applyHealthChanges(changes, 0)
	})
}

// upsertAlloc implements UpsertAllocs for a, a private copy the store takes
// ownership of. When now is not 0 it is the allocation's ModifyTime (and the
// CreateTime of a new one). The health change is noted in changes.
func (tx *writeTxn) upsertAlloc(a *structs.Allocation, jobs *jobLinker, now int64, changes healthChanges) error {
	a.Namespace = nsOrDefault(a.Namespace)
	exist, err := tx.allocByID(a.ID)
	if err != nil {
		return err
	}
	if exist == nil {
		a.CreateIndex = tx.index
		if now != 0 {
			a.CreateTime = now
		}
	} else {
		mergeExistingAlloc(a, exist)
	}
	if now != 0 {
		a.ModifyTime = now
	}
	a.ModifyIndex, a.AllocModifyIndex = tx.index, tx.index
	if a.DeploymentStatus != nil {
		a.DeploymentStatus.ModifyIndex = tx.index
	}
	if a.Job == nil {
		a.Job = jobs.lookup(a.Namespace, a.JobID, a.JobVersion)
	}
	if a.Job == nil && exist != nil && exist.JobVersion == a.JobVersion {
		a.Job = exist.Job
	}
	if err := tx.insertAlloc(exist, a); err != nil {
		return err
	}
	changes.note(exist, a)
	tx.markJob(a.Namespace, a.JobID)
	if a.PreviousAllocation == "" {
		return nil
	}
	return tx.linkPrevious(a)
}

// mergeExistingAlloc keeps in a (a server-side update) the fields of exist
// that the server must not overwrite with a possibly stale copy.
func mergeExistingAlloc(a, exist *structs.Allocation) {
	a.CreateIndex, a.CreateTime = exist.CreateIndex, exist.CreateTime
	a.TaskStates = exist.TaskStates
	if a.ClientStatus != structs.AllocClientStatusLost && a.ClientStatus != structs.AllocClientStatusUnknown {
		a.ClientStatus, a.ClientDescription = exist.ClientStatus, exist.ClientDescription
	}
	if a.NextAllocation == "" {
		a.NextAllocation = exist.NextAllocation
	}
	// Health reported after the scheduler's snapshot must survive an
	// update within the same deployment.
	if exist.DeploymentStatus != nil && a.DeploymentID == exist.DeploymentID &&
		(a.DeploymentStatus == nil || a.DeploymentStatus.Healthy == nil) {
		ds := *exist.DeploymentStatus // the canary flag included: a plan never makes an existing allocation a canary, and a stale one must not undo a promotion
		a.DeploymentStatus = &ds
	}
}

// linkPrevious points a's previous allocation, if stored, at a.
func (tx *writeTxn) linkPrevious(a *structs.Allocation) error {
	prev, err := tx.allocByID(a.PreviousAllocation)
	if prev == nil || err != nil || prev.NextAllocation == a.ID {
		return err
	}
	c := prev.Copy()
	c.NextAllocation = a.ID
	c.ModifyIndex = tx.index
	return tx.insert(TableAllocs, c)
}

// UpdateAllocsFromClient records what clients report. For every update whose
// allocation exists (others are skipped) it sets ClientStatus,
// ClientDescription, TaskStates (each when given) and DeploymentStatus
// (when given; its Canary flag stays the server's, whatever the client
// says, and its ModifyIndex becomes index), ModifyIndex = index and ModifyTime =
// updatedAt. AllocModifyIndex is unchanged: clients do not re-sync their own
// reports. When health changes, the deployment's health counts are
// recounted and the progress deadline of a group that gained a healthy
// allocation moves to updatedAt + ProgressDeadline (deployment_health.go).
func (s *StateStore) UpdateAllocsFromClient(index uint64, updates []*structs.Allocation, updatedAt int64) error {
	return s.write(index, func(tx *writeTxn) error {
		changes := healthChanges{}
		for _, u := range updates {
			exist, err := tx.allocByID(u.ID)
			if err != nil {
				return err
			}
			if exist == nil {
				continue
			}
			c := exist.Copy()
			if u.ClientStatus != "" {
				c.ClientStatus, c.ClientDescription = u.ClientStatus, u.ClientDescription
			}
			if u.TaskStates != nil {
				c.TaskStates = u.TaskStates
			}
			if u.NetworkStatus != nil {
				ns := *u.NetworkStatus
				c.NetworkStatus = &ns
			}
			if u.DeploymentStatus != nil {
				ds := *u.DeploymentStatus
				ds.Canary = exist.DeploymentStatus != nil && exist.DeploymentStatus.Canary // the server's to set
				ds.ModifyIndex = tx.index
				c.DeploymentStatus = &ds
			}
			c.ModifyIndex = tx.index
			c.ModifyTime = updatedAt
			if err := tx.insertAlloc(exist, c); err != nil {
				return err
			}
			changes.note(exist, c)
			tx.markJob(c.Namespace, c.JobID)
			if c.ClientTerminal() {
				// An allocation over on its node advertises nothing.
				if err := tx.deleteServicesBy(indexAlloc, c.ID); err != nil {
					return err
				}
			}
		}
		return tx.applyHealthChanges(changes, updatedAt)
	})
}

// UpdateAllocsDesiredStatus sets the desired status and description of the
// allocations ids (unknown ones are skipped); ModifyIndex and
// AllocModifyIndex become index so their clients pick the change up. The
// health counts of their deployments are recounted.
func (s *StateStore) UpdateAllocsDesiredStatus(index uint64, ids []string, desiredStatus, desc string) error {
	return s.UpdateAllocsDesired(index, ids, desiredStatus, desc, structs.DesiredTransition{})
}

// UpdateAllocsDesired is UpdateAllocsDesiredStatus that also merges tr into
// each allocation's DesiredTransition. An empty desiredStatus keeps the
// allocations' desired status and description (only tr is recorded).
func (s *StateStore) UpdateAllocsDesired(index uint64, ids []string, desiredStatus, desc string, tr structs.DesiredTransition) error {
	return s.write(index, func(tx *writeTxn) error {
		changes := healthChanges{}
		for _, id := range ids {
			exist, err := tx.allocByID(id)
			if err != nil {
				return err
			}
			if exist == nil {
				continue
			}
			c := exist.Copy()
			if desiredStatus != "" {
				c.DesiredStatus, c.DesiredDescription = desiredStatus, desc
			}
			c.DesiredTransition = c.DesiredTransition.Merge(tr)
			c.ModifyIndex, c.AllocModifyIndex = tx.index, tx.index
			if err := tx.insertAlloc(exist, c); err != nil {
				return err
			}
			changes.note(exist, c)
			tx.markJob(c.Namespace, c.JobID)
		}
		return tx.applyHealthChanges(changes, 0)
	})
}

// versionKey names one job version.
type versionKey struct {
	ns, id  string
	version uint64
}

// jobLinker finds the stored job version an allocation runs, caching the
// lookups of one transaction.
type jobLinker struct {
	txn      *memdb.Txn
	fallback *structs.Job // or nil: used when the version is not stored
	cache    map[versionKey]*structs.Job
}

// newJobLinker returns a linker reading txn, falling back to fallback (or nil).
func newJobLinker(txn *memdb.Txn, fallback *structs.Job) *jobLinker {
	return &jobLinker{txn: txn, fallback: fallback, cache: map[versionKey]*structs.Job{}}
}

// lookup returns version v of job (ns, id): the versions table's row, else
// the current job if it is that version, else the fallback if it is, else nil.
func (l *jobLinker) lookup(ns, id string, v uint64) *structs.Job {
	k := versionKey{ns, id, v}
	if j, ok := l.cache[k]; ok {
		return j
	}
	j, _ := jobByIDAndVersion(l.txn, nil, ns, id, v)
	if j == nil {
		if cur, _ := jobByID(l.txn, nil, ns, id); cur != nil && cur.Version == v {
			j = cur
		}
	}
	if j == nil && l.fallback != nil && nsOrDefault(l.fallback.Namespace) == ns &&
		l.fallback.ID == id && l.fallback.Version == v {
		j = l.fallback
	}
	l.cache[k] = j
	return j
}
