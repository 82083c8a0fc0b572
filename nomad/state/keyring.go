package state

import (
	"errors"
	"fmt"
	"sort"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/structs"
)

// TableRootKeys stores the server signing keys (*structs.RootKey).
const TableRootKeys = "root_keys"

// ErrActiveRootKey is returned when asked to delete the active root key.
var ErrActiveRootKey = errors.New("active root key cannot be deleted - call rotate first")

func rootKeysTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableRootKeys,
		Indexes: map[string]*memdb.IndexSchema{
			// id: one key per KeyID.
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "KeyID"}},
		},
	}
}

// UpsertRootKey stores key at index (keeping the CreateIndex of a key
// already stored). When key is active every other active key becomes
// inactive in the same write.
func (s *StateStore) UpsertRootKey(index uint64, key *structs.RootKey) error {
	if key == nil || key.KeyID == "" {
		return errors.New("state: root key without an ID")
	}
	return s.write(index, func(tx *writeTxn) error {
		k := key.Copy()
		k.CreateIndex, k.ModifyIndex = index, index
		raw, err := tx.First(TableRootKeys, indexID, k.KeyID)
		if err != nil {
			return err
		}
		if old, ok := raw.(*structs.RootKey); ok {
			k.CreateIndex = old.CreateIndex
		}
		if k.State == structs.RootKeyStateActive {
			others, err := list[*structs.RootKey](tx.Txn, nil, TableRootKeys, indexID)
			if err != nil {
				return err
			}
			for _, o := range others {
				if o.KeyID == k.KeyID || o.State != structs.RootKeyStateActive {
					continue
				}
				demoted := o.Copy()
				demoted.State, demoted.ModifyIndex = structs.RootKeyStateInactive, index
				if err := tx.insert(TableRootKeys, demoted); err != nil {
					return err
				}
			}
		}
		return tx.insert(TableRootKeys, k)
	})
}

// DeleteRootKey removes key id at index. Deleting the active key fails with
// ErrActiveRootKey; deleting a missing key is not an error.
func (s *StateStore) DeleteRootKey(index uint64, id string) error {
	return s.write(index, func(tx *writeTxn) error {
		raw, err := tx.First(TableRootKeys, indexID, id)
		if err != nil || raw == nil {
			return err
		}
		if raw.(*structs.RootKey).State == structs.RootKeyStateActive {
			return ErrActiveRootKey
		}
		return tx.delete(TableRootKeys, raw)
	})
}

// RootKeys returns every root key, oldest first (by CreateIndex, then ID).
func (r reader) RootKeys(ws memdb.WatchSet) ([]*structs.RootKey, error) {
	keys, err := list[*structs.RootKey](r.txn(), ws, TableRootKeys, indexID)
	if err != nil {
		return nil, fmt.Errorf("state: list root keys: %w", err)
	}
	sort.SliceStable(keys, func(i, j int) bool { return keys[i].CreateIndex < keys[j].CreateIndex })
	return keys, nil
}

// ActiveRootKey returns the active root key, or nil when there is none.
func (r reader) ActiveRootKey(ws memdb.WatchSet) (*structs.RootKey, error) {
	keys, err := r.RootKeys(ws)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if k.State == structs.RootKeyStateActive {
			return k, nil
		}
	}
	return nil, nil
}

// RootKeyRestore restores a root key from a snapshot.
func (r *Restore) RootKeyRestore(k *structs.RootKey) error { return r.insert(TableRootKeys, k) }
