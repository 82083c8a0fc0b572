package state

import (
	"github.com/drover-project/drover/nomad/structs"
)

// DeleteGC deletes what the garbage collector decided (package nomad/gc),
// in one transaction at index. Each object is checked again and skipped
// when it is gone or no longer collectable: an evaluation not terminal, an
// allocation not over on its node (see allocDone), a deployment active, a
// job registered again (not stopped, or a newer JobModifyIndex), a node
// not down or with an allocation not over. Jobs are purged with their
// versions and submissions. It returns how many objects were deleted.
func (s *StateStore) DeleteGC(index uint64, req *structs.GCRequest) (int, error) {
	deleted := 0
	err := s.write(index, func(tx *writeTxn) error {
		deleted = 0
		for _, id := range req.Allocs {
			a, err := tx.allocByID(id)
			if err != nil {
				return err
			}
			if a == nil || !allocDone(tx, a) {
				continue
			}
			if err := tx.delete(TableAllocs, a); err != nil {
				return err
			}
			tx.markJob(a.Namespace, a.JobID)
			deleted++
		}
		for _, id := range req.Evals {
			raw, err := tx.First(TableEvals, indexID, id)
			if err != nil {
				return err
			}
			if e, ok := raw.(*structs.Evaluation); ok && e.Terminal() {
				if err := tx.delete(TableEvals, e); err != nil {
					return err
				}
				tx.markJob(e.Namespace, e.JobID)
				deleted++
			}
		}
		for _, id := range req.Deployments {
			d, err := deploymentByID(tx.Txn, nil, id)
			if err != nil {
				return err
			}
			if d != nil && !d.Active() {
				if err := tx.delete(TableDeployments, d); err != nil {
					return err
				}
				deleted++
			}
		}
		for _, gj := range req.Jobs {
			n, err := tx.purgeStoppedJob(gj)
			if err != nil {
				return err
			}
			deleted += n
		}
		for _, id := range req.Nodes {
			n, err := nodeByID(tx.Txn, nil, id)
			if err != nil {
				return err
			}
			if n == nil || n.Status != structs.NodeStatusDown {
				continue
			}
			allocs, err := list[*structs.Allocation](tx.Txn, nil, TableAllocs, indexNode, id)
			if err != nil {
				return err
			}
			live := false
			for _, a := range allocs {
				live = live || !a.ClientTerminal()
			}
			if live {
				continue
			}
			if err := tx.delete(TableNodes, n); err != nil {
				return err
			}
			deleted++
		}
		return nil
	})
	return deleted, err
}

// allocDone reports whether an allocation is over on its node: finished
// as its client reported, or stopped by the server on a node that is down
// or gone.
func allocDone(tx *writeTxn, a *structs.Allocation) bool {
	if a.ClientTerminal() {
		return true
	}
	if !a.ServerTerminal() {
		return false
	}
	n, err := nodeByID(tx.Txn, nil, a.NodeID)
	return err == nil && (n == nil || n.Status == structs.NodeStatusDown)
}

// purgeStoppedJob deletes job gj with its versions and submissions when it
// is still stopped at gj.JobModifyIndex.
func (tx *writeTxn) purgeStoppedJob(gj structs.GCJob) (int, error) {
	job, err := jobByID(tx.Txn, nil, gj.Namespace, gj.ID)
	if err != nil || job == nil || !job.Stop || job.JobModifyIndex != gj.JobModifyIndex {
		return 0, err
	}
	if err := tx.delete(TableJobs, job); err != nil {
		return 0, err
	}
	versions, err := jobVersionsByID(tx.Txn, nil, job.Namespace, job.ID)
	if err != nil {
		return 0, err
	}
	for _, v := range versions {
		if err := tx.deleteJobVersion(v); err != nil {
			return 0, err
		}
	}
	return 1, nil
}
