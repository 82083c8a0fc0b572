package state

import (
	"fmt"
	"sort"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/structs"
)

// JobTrackedVersions is how many versions of a job the store keeps. The
// newest stable version is kept beyond that window, so that auto-revert and
// `job revert` always have a target.
const JobTrackedVersions = 6

// jobVersionsByID returns the retained versions of job (ns, id), newest first.
func jobVersionsByID(txn *memdb.Txn, ws memdb.WatchSet, ns, id string) ([]*structs.Job, error) {
	// A prefix scan on (ns, id) also matches longer IDs ("web" finds
	// "web2"), hence the filter.
	all, err := list[*structs.Job](txn, ws, TableJobVersions, indexIDPrefix, nsOrDefault(ns), id)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, j := range all {
		if j.ID == id {
			out = append(out, j)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version > out[j].Version })
	return out, nil
}

// JobVersionsByID returns the retained versions of job (ns, id), newest first.
func (r reader) JobVersionsByID(ws memdb.WatchSet, ns, id string) ([]*structs.Job, error) {
	return jobVersionsByID(r.txn(), ws, ns, id)
}

// jobByIDAndVersion returns version v of job (ns, id), or nil.
func jobByIDAndVersion(txn *memdb.Txn, ws memdb.WatchSet, ns, id string, v uint64) (*structs.Job, error) {
	raw, err := first(txn, ws, TableJobVersions, indexID, nsOrDefault(ns), id, v)
	if raw == nil || err != nil {
		return nil, err
	}
	return raw.(*structs.Job), nil
}

// JobByIDAndVersion returns version v of job (ns, id), or nil.
func (r reader) JobByIDAndVersion(ws memdb.WatchSet, ns, id string, v uint64) (*structs.Job, error) {
	return jobByIDAndVersion(r.txn(), ws, ns, id, v)
}

// JobVersions returns every retained version of every job, sorted by
// namespace, ID and version (for snapshots).
func (r reader) JobVersions(ws memdb.WatchSet) ([]*structs.Job, error) {
	return list[*structs.Job](r.txn(), ws, TableJobVersions, indexID)
}

// upsertJobVersion stores j as its version (replacing a row of the same
// version) and prunes the job's history to JobTrackedVersions.
func (tx *writeTxn) upsertJobVersion(j *structs.Job) error {
	if err := tx.insert(TableJobVersions, j); err != nil {
		return err
	}
	all, err := jobVersionsByID(tx.Txn, nil, j.Namespace, j.ID)
	if err != nil {
		return err
	}
	for _, v := range filterPrunedVersions(all) {
		if err := tx.deleteJobVersion(v); err != nil {
			return err
		}
	}
	return nil
}

// filterPrunedVersions returns the versions (newest first) that fall out of
// the retained window: all but the newest JobTrackedVersions, except that
// the newest stable version takes the last place of the window when it is
// older than the window.
func filterPrunedVersions(newestFirst []*structs.Job) []*structs.Job {
	n := JobTrackedVersions
	if len(newestFirst) <= n {
		return nil
	}
	keep := map[uint64]bool{}
	for _, v := range newestFirst[:n] {
		keep[v.Version] = true
	}
	for i, v := range newestFirst {
		if !v.Stable {
			continue
		}
		if i >= n {
			delete(keep, newestFirst[n-1].Version)
			keep[v.Version] = true
		}
		break
	}
	var out []*structs.Job
	for _, v := range newestFirst {
		if !keep[v.Version] {
			out = append(out, v)
		}
	}
	return out
}

// deleteJobVersion deletes one version row and its submission.
func (tx *writeTxn) deleteJobVersion(v *structs.Job) error {
	if err := tx.delete(TableJobVersions, v); err != nil {
		return err
	}
	return tx.deleteSubmission(v.Namespace, v.ID, v.Version)
}

// UpdateJobStability marks version v of job (ns, id) stable or not, in the
// versions table and, when v is the current version, in the jobs table.
// A missing version is ErrNotFound.
func (s *StateStore) UpdateJobStability(index uint64, ns, id string, v uint64, stable bool) error {
	return s.write(index, func(tx *writeTxn) error {
		ver, err := jobByIDAndVersion(tx.Txn, nil, ns, id, v)
		if err != nil {
			return err
		}
		if ver == nil {
			return fmt.Errorf("job %q version %d: %w", id, v, ErrNotFound)
		}
		c := ver.Copy()
		c.Stable = stable
		c.ModifyIndex = tx.index
		if err := tx.insert(TableJobVersions, c); err != nil {
			return err
		}
		cur, err := jobByID(tx.Txn, nil, ns, id)
		if err != nil || cur == nil || cur.Version != v {
			return err
		}
		cc := cur.Copy()
		cc.Stable = stable
		cc.ModifyIndex = tx.index
		return tx.insert(TableJobs, cc)
	})
}
