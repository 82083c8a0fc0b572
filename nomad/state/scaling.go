package state

import (
	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/structs"
)

// TableScalingEvents holds one *structs.JobScalingEvents per job.
const TableScalingEvents = "scaling_event"

func init() { schemaFuncs = append(schemaFuncs, scalingEventsTableSchema) }

// scalingEventsTableSchema stores the recent scaling events of every job,
// keyed by (Namespace, JobID).
func scalingEventsTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableScalingEvents,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: nsIDIndex("JobID"),
		},
	}
}

// ScalingEventsByJob returns the scaling events of job (ns, id), or nil.
func (r reader) ScalingEventsByJob(ws memdb.WatchSet, ns, id string) (*structs.JobScalingEvents, error) {
	raw, err := first(r.txn(), ws, TableScalingEvents, indexID, nsOrDefault(ns), id)
	if raw == nil || err != nil {
		return nil, err
	}
	return raw.(*structs.JobScalingEvents), nil
}

// AllScalingEvents returns every job's scaling events (for snapshots).
func (r reader) AllScalingEvents(ws memdb.WatchSet) ([]*structs.JobScalingEvents, error) {
	return list[*structs.JobScalingEvents](r.txn(), ws, TableScalingEvents, indexID)
}

// UpsertScalingEvent prepends ev (stamped with CreateIndex index) to the
// events of group in job (ns, id), keeping the newest
// structs.JobTrackedScalingEvents. The input is copied.
func (s *StateStore) UpsertScalingEvent(index uint64, ns, id, group string, ev *structs.ScalingEvent) error {
	return s.write(index, func(tx *writeTxn) error {
		ns = nsOrDefault(ns)
		n := &structs.JobScalingEvents{Namespace: ns, JobID: id, ScalingEvents: map[string][]*structs.ScalingEvent{}}
		old, err := first(tx.Txn, nil, TableScalingEvents, indexID, ns, id)
		if err != nil {
			return err
		}
		if old != nil {
			for g, evs := range old.(*structs.JobScalingEvents).ScalingEvents {
				n.ScalingEvents[g] = evs
			}
		}
		e := *ev
		e.CreateIndex = index
		evs := append([]*structs.ScalingEvent{&e}, n.ScalingEvents[group]...)
		if len(evs) > structs.JobTrackedScalingEvents {
			evs = evs[:structs.JobTrackedScalingEvents]
		}
		n.ScalingEvents[group] = evs
		n.ModifyIndex = index
		return tx.insert(TableScalingEvents, n)
	})
}

// deleteScalingEvents removes the scaling events of job (ns, id), if any.
func (tx *writeTxn) deleteScalingEvents(ns, id string) error {
	old, err := first(tx.Txn, nil, TableScalingEvents, indexID, nsOrDefault(ns), id)
	if old == nil || err != nil {
		return err
	}
	return tx.delete(TableScalingEvents, old)
}

// ScalingEventsRestore restores a job's scaling events.
func (r *Restore) ScalingEventsRestore(e *structs.JobScalingEvents) error {
	return r.insert(TableScalingEvents, e)
}
