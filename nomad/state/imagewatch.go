package state

import (
	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/structs"
)

// Image watcher tables.
const (
	TableImageChecks  = "image_checks"
	TableImageWatches = "image_watches"
	// TableImageBadDigests holds the digests that failed a deployment, per
	// image reference.
	TableImageBadDigests = "image_bad_digests"
)

func init() {
	schemaFuncs = append(schemaFuncs, imageChecksTableSchema, imageWatchesTableSchema, imageBadDigestsTableSchema)
}

// imageBadDigestsTableSchema stores one *structs.ImageBadDigest per
// (Reference, Digest).
func imageBadDigestsTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableImageBadDigests,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
				&memdb.StringFieldIndex{Field: "Reference"}, &memdb.StringFieldIndex{Field: "Digest"},
			}}},
		},
	}
}

// ImageBadDigests returns every bad-digest record (cleared ones too),
// sorted by reference and digest.
func (r reader) ImageBadDigests(ws memdb.WatchSet) ([]*structs.ImageBadDigest, error) {
	return list[*structs.ImageBadDigest](r.txn(), ws, TableImageBadDigests, indexID)
}

// imageChecksTableSchema stores one *structs.ImageCheck per Key.
func imageChecksTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableImageChecks,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "Key"}},
		},
	}
}

// imageWatchesTableSchema stores one *structs.ImageWatch per (Namespace,
// JobID, Group, Task); a prefix lookup on (Namespace, JobID) lists a job's.
func imageWatchesTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableImageWatches,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: nsIDIndex("JobID", "Group", "Task"),
		},
	}
}

// ImageChecks returns every image check, sorted by Key.
func (r reader) ImageChecks(ws memdb.WatchSet) ([]*structs.ImageCheck, error) {
	return list[*structs.ImageCheck](r.txn(), ws, TableImageChecks, indexID)
}

// ImageCheck returns the image check of key, or nil.
func (r reader) ImageCheck(ws memdb.WatchSet, key string) (*structs.ImageCheck, error) {
	raw, err := first(r.txn(), ws, TableImageChecks, indexID, key)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.ImageCheck), nil
}

// ImageWatches returns every image watch, sorted by namespace, job, group
// and task.
func (r reader) ImageWatches(ws memdb.WatchSet) ([]*structs.ImageWatch, error) {
	return list[*structs.ImageWatch](r.txn(), ws, TableImageWatches, indexID)
}

// ImageWatchesByJob returns the image watches of job (ns, id).
func (r reader) ImageWatchesByJob(ws memdb.WatchSet, ns, id string) ([]*structs.ImageWatch, error) {
	all, err := list[*structs.ImageWatch](r.txn(), ws, TableImageWatches, indexIDPrefix, nsOrDefault(ns), id)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, w := range all {
		if w.JobID == id {
			out = append(out, w)
		}
	}
	return out, nil
}

// UpsertImageWatch applies an image watcher update at index: it upserts
// (keeping CreateIndex) and deletes checks and watches. Missing records
// to delete are ignored. Inputs are copied.
func (s *StateStore) UpsertImageWatch(index uint64, req *structs.ImageWatchUpdateRequest) error {
	return s.write(index, func(tx *writeTxn) error {
		for _, c := range req.Checks {
			n := *c
			n.CreateIndex, n.ModifyIndex = index, index
			if old, err := first(tx.Txn, nil, TableImageChecks, indexID, c.Key); err != nil {
				return err
			} else if old != nil {
				n.CreateIndex = old.(*structs.ImageCheck).CreateIndex
			}
			if err := tx.insert(TableImageChecks, &n); err != nil {
				return err
			}
		}
		for _, o := range req.Observations {
			var prev *structs.ImageCheck
			if old, err := first(tx.Txn, nil, TableImageChecks, indexID, o.Key); err != nil {
				return err
			} else if old != nil {
				prev = old.(*structs.ImageCheck)
			}
			n := structs.Observe(prev, o)
			if n == prev {
				continue // older than the record
			}
			n.CreateIndex, n.ModifyIndex = index, index
			if prev != nil {
				n.CreateIndex = prev.CreateIndex
			}
			if err := tx.insert(TableImageChecks, n); err != nil {
				return err
			}
		}
		for _, b := range req.BadDigests {
			if err := upsertBadDigest(tx, index, b); err != nil {
				return err
			}
		}
		for _, id := range req.ClearBad {
			old, err := first(tx.Txn, nil, TableImageBadDigests, indexID, id.Reference, id.Digest)
			if err != nil {
				return err
			}
			if old == nil {
				continue
			}
			n := *old.(*structs.ImageBadDigest)
			n.ClearedIndex, n.ModifyIndex = index, index
			if err := tx.insert(TableImageBadDigests, &n); err != nil {
				return err
			}
		}
		for _, w := range req.Watches {
			n := w.Copy()
			n.Namespace = nsOrDefault(n.Namespace)
			n.CreateIndex, n.ModifyIndex = index, index
			if old, err := first(tx.Txn, nil, TableImageWatches, indexID, n.Namespace, n.JobID, n.Group, n.Task); err != nil {
				return err
			} else if old != nil {
				n.CreateIndex = old.(*structs.ImageWatch).CreateIndex
				n.Approved = old.(*structs.ImageWatch).Approved // only Approvals set it
			}
			if err := tx.insert(TableImageWatches, n); err != nil {
				return err
			}
		}
		for _, a := range req.Approvals {
			old, err := first(tx.Txn, nil, TableImageWatches, indexID, nsOrDefault(a.ID.Namespace), a.ID.JobID, a.ID.Group, a.ID.Task)
			if err != nil {
				return err
			}
			if old == nil {
				continue
			}
			n := old.(*structs.ImageWatch).Copy()
			n.Approved, n.ModifyIndex = a.Digest, index
			if err := tx.insert(TableImageWatches, n); err != nil {
				return err
			}
		}
		for _, key := range req.DeleteChecks {
			old, err := first(tx.Txn, nil, TableImageChecks, indexID, key)
			if err != nil {
				return err
			}
			if old != nil {
				if err := tx.delete(TableImageChecks, old); err != nil {
					return err
				}
			}
		}
		for _, id := range req.DeleteWatches {
			old, err := first(tx.Txn, nil, TableImageWatches, indexID, nsOrDefault(id.Namespace), id.JobID, id.Group, id.Task)
			if err != nil {
				return err
			}
			if old != nil {
				if err := tx.delete(TableImageWatches, old); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// upsertBadDigest merges b into its record: the failure with the higher
// FailedIndex wins, the higher ClearedIndex is kept (a clear committed
// between the watcher's read and its write is not undone).
func upsertBadDigest(tx *writeTxn, index uint64, b *structs.ImageBadDigest) error {
	n := *b
	n.CreateIndex, n.ModifyIndex = index, index
	old, err := first(tx.Txn, nil, TableImageBadDigests, indexID, b.Reference, b.Digest)
	if err != nil {
		return err
	}
	if old != nil {
		o := old.(*structs.ImageBadDigest)
		if o.FailedIndex >= n.FailedIndex {
			n = *o
			n.ModifyIndex = index
		}
		n.CreateIndex = o.CreateIndex
		n.ClearedIndex = max(o.ClearedIndex, b.ClearedIndex)
	}
	return tx.insert(TableImageBadDigests, &n)
}

// ImageBadDigestRestore restores a bad-digest record.
func (r *Restore) ImageBadDigestRestore(b *structs.ImageBadDigest) error {
	return r.insert(TableImageBadDigests, b)
}

// ImageCheckRestore restores an image check.
func (r *Restore) ImageCheckRestore(c *structs.ImageCheck) error {
	return r.insert(TableImageChecks, c)
}

// ImageWatchRestore restores an image watch.
func (r *Restore) ImageWatchRestore(w *structs.ImageWatch) error {
	return r.insert(TableImageWatches, w)
}
