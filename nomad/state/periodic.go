package state

import (
	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/structs"
)

// TablePeriodicLaunch holds one *structs.PeriodicLaunch per periodic job.
const TablePeriodicLaunch = "periodic_launch"

func init() { schemaFuncs = append(schemaFuncs, periodicLaunchTableSchema) }

// periodicLaunchTableSchema stores the latest launch of every periodic job,
// keyed by (Namespace, ID) of the parent.
func periodicLaunchTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TablePeriodicLaunch,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: nsIDIndex("ID"),
		},
	}
}

// PeriodicLaunchByID returns the latest launch of periodic job (ns, id), or nil.
func (r reader) PeriodicLaunchByID(ws memdb.WatchSet, ns, id string) (*structs.PeriodicLaunch, error) {
	raw, err := first(r.txn(), ws, TablePeriodicLaunch, indexID, nsOrDefault(ns), id)
	if raw == nil || err != nil {
		return nil, err
	}
	return raw.(*structs.PeriodicLaunch), nil
}

// PeriodicLaunches returns every launch record, sorted by namespace and ID.
func (r reader) PeriodicLaunches(ws memdb.WatchSet) ([]*structs.PeriodicLaunch, error) {
	return list[*structs.PeriodicLaunch](r.txn(), ws, TablePeriodicLaunch, indexID)
}

// ChildJobs returns the jobs whose parent is job (ns, parentID), sorted by ID.
func (r reader) ChildJobs(ws memdb.WatchSet, ns, parentID string) ([]*structs.Job, error) {
	all, err := r.JobsByIDPrefix(ws, ns, parentID+"/")
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, j := range all {
		if j.ParentID == parentID {
			out = append(out, j)
		}
	}
	return out, nil
}

// UpsertPeriodicLaunch records l at index, keeping CreateIndex of an
// existing record. The input is copied.
func (s *StateStore) UpsertPeriodicLaunch(index uint64, l *structs.PeriodicLaunch) error {
	return s.write(index, func(tx *writeTxn) error {
		n := *l
		n.Namespace = nsOrDefault(n.Namespace)
		n.CreateIndex, n.ModifyIndex = index, index
		old, err := first(tx.Txn, nil, TablePeriodicLaunch, indexID, n.Namespace, n.ID)
		if err != nil {
			return err
		}
		if old != nil {
			n.CreateIndex = old.(*structs.PeriodicLaunch).CreateIndex
		}
		return tx.insert(TablePeriodicLaunch, &n)
	})
}

// deletePeriodicLaunch removes the launch record of job (ns, id), if any.
func (tx *writeTxn) deletePeriodicLaunch(ns, id string) error {
	old, err := first(tx.Txn, nil, TablePeriodicLaunch, indexID, nsOrDefault(ns), id)
	if old == nil || err != nil {
		return err
	}
	return tx.delete(TablePeriodicLaunch, old)
}

// PeriodicLaunchRestore restores a launch record.
func (r *Restore) PeriodicLaunchRestore(l *structs.PeriodicLaunch) error {
	return r.insert(TablePeriodicLaunch, l)
}
