package state

import (
	"fmt"
	"maps"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/structs"
)

// TableJobCounts holds derived data: per job, counts of its allocations,
// kept in step with the allocs table by every write transaction
// (writeTxn.insert and writeTxn.delete of an allocation) and rebuilt on
// restore. It is not part of snapshots. Job status and job summaries read
// it instead of listing a job's allocations, so a client update costs the
// same whether the job has ten allocations or ten thousand.
const TableJobCounts = "job_counts"

func init() { schemaFuncs = append(schemaFuncs, jobCountsTableSchema) }

// jobCountsTableSchema stores *jobCounts by (Namespace, JobID).
func jobCountsTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableJobCounts,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: nsIDIndex("JobID"),
		},
	}
}

// jobCounts counts the allocations of one job (every incarnation). A row
// exists while the job has at least one allocation. Rows are shared once
// committed: copy before changing.
type jobCounts struct {
	Namespace, JobID string
	// Total is the number of allocations; Live those not terminal.
	Total, Live int
	// Incarnations counts allocations per job incarnation (the
	// CreateIndex of the job an allocation runs; 0 when its job is
	// unknown), per task group, by client status.
	Incarnations map[uint64]*incarnationCounts
}

// incarnationCounts are the counts of one incarnation of a job.
type incarnationCounts struct {
	Groups map[string]structs.TaskGroupSummary
	// ModifyIndex is the index of the last write to one of the
	// incarnation's allocations.
	ModifyIndex uint64
}

func (c *jobCounts) copy() *jobCounts {
	out := *c
	out.Incarnations = make(map[uint64]*incarnationCounts, len(c.Incarnations))
	for k, v := range c.Incarnations {
		out.Incarnations[k] = &incarnationCounts{Groups: maps.Clone(v.Groups), ModifyIndex: v.ModifyIndex}
	}
	return &out
}

// incarnationOf is the incarnation key of a.
func incarnationOf(a *structs.Allocation) uint64 {
	if a.Job == nil {
		return 0
	}
	return a.Job.CreateIndex
}

// add counts a in (delta +1) or out (delta -1), at write index.
func (c *jobCounts) add(a *structs.Allocation, delta int, index uint64) {
	c.Total += delta
	if !a.Terminal() {
		c.Live += delta
	}
	key := incarnationOf(a)
	inc := c.Incarnations[key]
	if inc == nil {
		inc = &incarnationCounts{Groups: map[string]structs.TaskGroupSummary{}}
		c.Incarnations[key] = inc
	}
	inc.ModifyIndex = max(inc.ModifyIndex, index)
	tg := inc.Groups[a.TaskGroup]
	switch a.ClientStatus {
	case structs.AllocClientStatusPending:
		tg.Starting += delta
	case structs.AllocClientStatusRunning:
		tg.Running += delta
	case structs.AllocClientStatusComplete:
		tg.Complete += delta
	case structs.AllocClientStatusFailed:
		tg.Failed += delta
	case structs.AllocClientStatusLost:
		tg.Lost += delta
	case structs.AllocClientStatusUnknown:
		tg.Unknown += delta
	}
	inc.Groups[a.TaskGroup] = tg
}

// jobCountsByID returns the counts row of job (ns, id), or nil.
func jobCountsByID(txn *memdb.Txn, ws memdb.WatchSet, ns, id string) (*jobCounts, error) {
	raw, err := first(txn, ws, TableJobCounts, indexID, nsOrDefault(ns), id)
	if raw == nil || err != nil {
		return nil, err
	}
	return raw.(*jobCounts), nil
}

// counts returns the transaction's private copy of the counts of job
// (ns, id), creating it on first use.
func (tx *writeTxn) counts(ns, id string) (*jobCounts, error) {
	key := structs.NamespacedID{Namespace: nsOrDefault(ns), ID: id}
	if c, ok := tx.jobCounts[key]; ok {
		return c, nil
	}
	stored, err := jobCountsByID(tx.Txn, nil, key.Namespace, id)
	if err != nil {
		return nil, err
	}
	c := &jobCounts{Namespace: key.Namespace, JobID: id, Incarnations: map[uint64]*incarnationCounts{}}
	if stored != nil {
		c = stored.copy()
	}
	if tx.jobCounts == nil {
		tx.jobCounts = map[structs.NamespacedID]*jobCounts{}
	}
	tx.jobCounts[key] = c
	return c, nil
}

// currentCounts returns the counts of job (ns, id) as the transaction
// has them so far (nil: no allocations).
func (tx *writeTxn) currentCounts(ns, id string) (*jobCounts, error) {
	if c, ok := tx.jobCounts[structs.NamespacedID{Namespace: nsOrDefault(ns), ID: id}]; ok {
		if c.Total == 0 {
			return nil, nil
		}
		return c, nil
	}
	return jobCountsByID(tx.Txn, nil, ns, id)
}

// countAlloc moves the counts of a's job from before (nil: new) to after
// (nil: deleted). before and after are the same allocation.
func (tx *writeTxn) countAlloc(before, after *structs.Allocation) error {
	a := after
	if a == nil {
		a = before
	}
	c, err := tx.counts(a.Namespace, a.JobID)
	if err != nil {
		return err
	}
	if before != nil {
		c.add(before, -1, tx.index)
	}
	if after != nil {
		c.add(after, +1, tx.index)
	}
	return nil
}

// writeJobCounts stores the counts the transaction changed; a job left
// without allocations loses its row.
func (tx *writeTxn) writeJobCounts() error {
	for _, c := range tx.jobCounts {
		var err error
		if c.Total == 0 {
			err = tx.Delete(TableJobCounts, c)
			if err == memdb.ErrNotFound {
				err = nil
			}
		} else {
			err = tx.Insert(TableJobCounts, c)
		}
		if err != nil {
			return fmt.Errorf("state: job counts of %q: %w", c.JobID, err)
		}
	}
	return nil
}

// rebuildJobCounts recounts every job's allocations in txn (after a
// restore has filled it and linked the allocations to their jobs).
func rebuildJobCounts(txn *memdb.Txn) error {
	it, err := txn.Get(TableAllocs, indexID)
	if err != nil {
		return fmt.Errorf("state: restore: count allocs: %w", err)
	}
	rows := map[structs.NamespacedID]*jobCounts{}
	for raw := it.Next(); raw != nil; raw = it.Next() {
		a := raw.(*structs.Allocation)
		key := structs.NamespacedID{Namespace: nsOrDefault(a.Namespace), ID: a.JobID}
		c := rows[key]
		if c == nil {
			c = &jobCounts{Namespace: key.Namespace, JobID: a.JobID, Incarnations: map[uint64]*incarnationCounts{}}
			rows[key] = c
		}
		c.add(a, +1, a.ModifyIndex)
	}
	for _, c := range rows {
		if err := txn.Insert(TableJobCounts, c); err != nil {
			return fmt.Errorf("state: restore: job counts: %w", err)
		}
	}
	return nil
}
