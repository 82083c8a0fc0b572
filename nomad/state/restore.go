package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/structs"
)

// Restore fills a fresh database from a snapshot, then replaces the store's
// contents with it in one step. Objects handed to it become the store's.
//
//	r := store.Restore()
//	defer r.Abort()
//	... r.JobRestore(j) ...
//	return r.Commit()
type Restore struct {
	store *StateStore
	db    *memdb.MemDB
	txn   *memdb.Txn
}

// Restore starts a restore into a fresh database. Until Commit the store
// keeps serving its current contents.
func (s *StateStore) Restore() *Restore {
	db := newMemDB()
	return &Restore{store: s, db: db, txn: db.Txn(true)}
}

// insert inserts obj into table of the fresh database.
func (r *Restore) insert(table string, obj any) error {
	if err := r.txn.Insert(table, obj); err != nil {
		return fmt.Errorf("state: restore %s: %w", table, err)
	}
	return nil
}

// JobRestore restores a job's current version.
func (r *Restore) JobRestore(j *structs.Job) error { return r.insert(TableJobs, j) }

// JobVersionRestore restores one retained job version.
func (r *Restore) JobVersionRestore(j *structs.Job) error { return r.insert(TableJobVersions, j) }

// SubmissionRestore restores one job submission.
func (r *Restore) SubmissionRestore(s *structs.JobSubmission) error {
	return r.insert(TableSubmissions, s)
}

// NodeRestore restores a node.
func (r *Restore) NodeRestore(n *structs.Node) error { return r.insert(TableNodes, n) }

// AllocRestore restores an allocation. Its Job (not part of snapshots) is
// linked on Commit, when every job version has been restored.
func (r *Restore) AllocRestore(a *structs.Allocation) error { return r.insert(TableAllocs, a) }

// EvalRestore restores an evaluation.
func (r *Restore) EvalRestore(e *structs.Evaluation) error { return r.insert(TableEvals, e) }

// DeploymentRestore restores a deployment.
func (r *Restore) DeploymentRestore(d *structs.Deployment) error {
	return r.insert(TableDeployments, d)
}

// IndexRestore restores the last write index of table.
func (r *Restore) IndexRestore(table string, index uint64) error {
	return r.insert(TableIndex, &IndexEntry{Key: table, Value: index})
}

// Commit links every allocation to its job version and replaces the store's
// contents with the restored ones; AbandonCh is closed so that watchers of
// the old contents re-read.
func (r *Restore) Commit() error {
	if err := r.linkAllocJobs(); err != nil {
		return err
	}
	if err := rebuildJobCounts(r.txn); err != nil {
		return err
	}
	r.txn.Commit()
	r.store.swap(r.db)
	return nil
}

// Abort discards the restore; it is a no-op after Commit.
func (r *Restore) Abort() { r.txn.Abort() }

// linkAllocJobs sets the Job of every restored allocation that has none.
// The allocations are not yet visible to anyone, so they are set in place.
func (r *Restore) linkAllocJobs() error {
	it, err := r.txn.Get(TableAllocs, indexID)
	if err != nil {
		return fmt.Errorf("state: restore: link allocs: %w", err)
	}
	jobs := newJobLinker(r.txn, nil)
	for raw := it.Next(); raw != nil; raw = it.Next() {
		a := raw.(*structs.Allocation)
		if a.Job == nil {
			a.Job = jobs.lookup(nsOrDefault(a.Namespace), a.JobID, a.JobVersion)
		}
	}
	return nil
}
