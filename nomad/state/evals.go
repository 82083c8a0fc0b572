package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/structs"
)

// EvalByID returns evaluation id, or nil.
func (r reader) EvalByID(ws memdb.WatchSet, id string) (*structs.Evaluation, error) {
	raw, err := first(r.txn(), ws, TableEvals, indexID, id)
	if raw == nil || err != nil {
		return nil, err
	}
	return raw.(*structs.Evaluation), nil
}

// EvalsByIDPrefix returns the evaluations of namespace ns ("*": all) whose ID
// starts with prefix, sorted by ID.
func (r reader) EvalsByIDPrefix(ws memdb.WatchSet, ns, prefix string) ([]*structs.Evaluation, error) {
	all, err := list[*structs.Evaluation](r.txn(), ws, TableEvals, indexIDPrefix, prefix)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, e := range all {
		if nsMatch(ns, e.Namespace) {
			out = append(out, e)
		}
	}
	return out, nil
}

// Evals returns the evaluations of namespace ns ("*": all), sorted by ID.
func (r reader) Evals(ws memdb.WatchSet, ns string) ([]*structs.Evaluation, error) {
	return r.EvalsByIDPrefix(ws, ns, "")
}

// EvalsByJob returns the evaluations of job (ns, jobID), sorted by ID.
func (r reader) EvalsByJob(ws memdb.WatchSet, ns, jobID string) ([]*structs.Evaluation, error) {
	return list[*structs.Evaluation](r.txn(), ws, TableEvals, indexJob, nsOrDefault(ns), jobID)
}

// UpsertEvals inserts or updates evaluations: CreateIndex is kept for
// existing ones (index for new ones), ModifyIndex becomes index, and the
// status of their jobs is recomputed. The evals are not modified; read them
// back for the stored copies.
func (s *StateStore) UpsertEvals(index uint64, evals []*structs.Evaluation) error {
	return s.write(index, func(tx *writeTxn) error {
		for _, e := range evals {
			if err := tx.upsertEval(e); err != nil {
				return fmt.Errorf("upsert eval %q: %w", e.ID, err)
			}
		}
		return nil
	})
}

// upsertEval implements UpsertEvals for one evaluation.
func (tx *writeTxn) upsertEval(in *structs.Evaluation) error {
	e := in.Copy()
	e.Namespace = nsOrDefault(e.Namespace)
	raw, err := first(tx.Txn, nil, TableEvals, indexID, e.ID)
	if err != nil {
		return err
	}
	if exist, ok := raw.(*structs.Evaluation); ok {
		e.CreateIndex = exist.CreateIndex
		if e.CreateTime == 0 {
			e.CreateTime = exist.CreateTime
		}
	} else {
		e.CreateIndex = tx.index
	}
	e.ModifyIndex = tx.index
	if err := tx.insert(TableEvals, e); err != nil {
		return err
	}
	if e.JobID != "" {
		tx.markJob(e.Namespace, e.JobID)
	}
	return nil
}

// RemoveEvals deletes the evaluations ids at index (an operator's delete
// while the broker is paused). A missing one is ErrNotFound and nothing is
// deleted.
func (s *StateStore) RemoveEvals(index uint64, ids []string) error {
	return s.write(index, func(tx *writeTxn) error {
		for _, id := range ids {
			raw, err := tx.First(TableEvals, indexID, id)
			if err != nil {
				return err
			}
			if raw == nil {
				return fmt.Errorf("eval not found: %s: %w", id, ErrNotFound)
			}
			if err := tx.delete(TableEvals, raw); err != nil {
				return err
			}
		}
		return nil
	})
}
