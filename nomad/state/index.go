package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"
)

// IndexEntry is a row of the index table: the raft index of the last write
// to the table named Key.
type IndexEntry struct {
	Key   string
	Value uint64
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
