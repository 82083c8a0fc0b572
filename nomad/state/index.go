package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/structs"
)

// IndexEntry is a row of the index table: the raft index of the last write
// to the table named Key.
type IndexEntry struct {
	Key   string
	Value uint64
}

// IndexAllocDeletes is the index-table key of the last transaction that
// deleted an allocation. With the AllocModifyIndex of the allocations that
// remain, it tells whether a node's list changed in anything its client
// acts on (NodeAllocsIndex).
const IndexAllocDeletes = "allocs_deleted"

// NodeAllocsIndex is the index of a client's view of its allocations:
// the highest AllocModifyIndex among allocs (a node's allocations, as
// AllocsByNode read them from r) and the last allocation delete. It moves
// when the server changes or removes one of them, and not when the client's
// own status reports are stored (they keep AllocModifyIndex). It never
// moves backwards: an allocation leaves only by a delete, which is newer
// than its AllocModifyIndex.
func (r reader) NodeAllocsIndex(allocs []*structs.Allocation) uint64 {
	idx := r.Index(IndexAllocDeletes)
	for _, a := range allocs {
		idx = max(idx, a.AllocModifyIndex)
	}
	return idx
}

// setIndex records index as the last write of table. Indexes never move
// backwards.
func setIndex(txn *memdb.Txn, table string, index uint64) error {
	raw, err := txn.First(TableIndex, indexID, table)
	if err != nil {
		return fmt.Errorf("state: read index of %s: %w", table, err)
	}
	if cur, ok := raw.(*IndexEntry); ok && cur.Value >= index {
		return nil
	}
	if err := txn.Insert(TableIndex, &IndexEntry{Key: table, Value: index}); err != nil {
		return fmt.Errorf("state: set index of %s: %w", table, err)
	}
	return nil
}

// tableIndex returns the last write index of table, or 0.
func tableIndex(txn *memdb.Txn, table string) uint64 {
	raw, err := txn.First(TableIndex, indexID, table)
	if err != nil || raw == nil {
		return 0
	}
	return raw.(*IndexEntry).Value
}

// Index returns the raft index of the last write to table, or 0.
func (r reader) Index(table string) uint64 { return tableIndex(r.txn(), table) }

// LatestIndex returns the highest index of any table: the raft index of the
// last write to the store, or 0 when it is empty.
func (r reader) LatestIndex() uint64 {
	entries, err := r.Indexes()
	if err != nil {
		return 0
	}
	var m uint64
	for _, e := range entries {
		m = max(m, e.Value)
	}
	return m
}

// Indexes returns every entry of the index table, sorted by table name (for
// snapshots).
func (r reader) Indexes() ([]*IndexEntry, error) {
	return list[*IndexEntry](r.txn(), nil, TableIndex, indexID)
}
