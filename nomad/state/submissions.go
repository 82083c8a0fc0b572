package state

import (
	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/structs"
)

// SubmissionByVersion returns the source version v of job (ns, id) was
// submitted from, or nil.
func (r reader) SubmissionByVersion(ws memdb.WatchSet, ns, id string, v uint64) (*structs.JobSubmission, error) {
	raw, err := first(r.txn(), ws, TableSubmissions, indexID, nsOrDefault(ns), id, v)
	if raw == nil || err != nil {
		return nil, err
	}
	return raw.(*structs.JobSubmission), nil
}

// Submissions returns every stored submission, sorted by namespace, job ID
// and version (for snapshots).
func (r reader) Submissions(ws memdb.WatchSet) ([]*structs.JobSubmission, error) {
	return list[*structs.JobSubmission](r.txn(), ws, TableSubmissions, indexID)
}

// insertSubmission stores a copy of sub as the source of job version j.
func (tx *writeTxn) insertSubmission(sub *structs.JobSubmission, j *structs.Job) error {
	c := *sub
	c.Namespace, c.JobID, c.Version, c.JobModifyIndex = j.Namespace, j.ID, j.Version, j.JobModifyIndex
	return tx.insert(TableSubmissions, &c)
}

// deleteSubmission deletes the submission of version v of job (ns, id), if any.
func (tx *writeTxn) deleteSubmission(ns, id string, v uint64) error {
	raw, err := first(tx.Txn, nil, TableSubmissions, indexID, ns, id, v)
	if raw == nil || err != nil {
		return err
	}
	return tx.delete(TableSubmissions, raw)
}
