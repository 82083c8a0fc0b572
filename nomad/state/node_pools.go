package state

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/structs"
)

// TableNodePools stores the node pools operators created and those nodes
// named when they registered (*structs.NodePool); "all" and "default" are
// built in (stored only when an operator changed "default").
const TableNodePools = "node_pools"

func nodePoolsTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableNodePools,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "Name"}},
		},
	}
}

// NodePools lists every node pool, the built-in ones included, sorted by
// name; prefix limits them to names starting with it.
func (r reader) NodePools(ws memdb.WatchSet, prefix string) ([]*structs.NodePool, error) {
	stored, err := list[*structs.NodePool](r.txn(), ws, TableNodePools, indexID)
	if err != nil {
		return nil, err
	}
	byName := map[string]*structs.NodePool{}
	for _, p := range structs.BuiltinNodePools() {
		byName[p.Name] = p
	}
	for _, p := range stored {
		byName[p.Name] = p
	}
	out := make([]*structs.NodePool, 0, len(byName))
	for name, p := range byName {
		if strings.HasPrefix(name, prefix) {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// NodePoolByName returns the pool (nil when there is none).
func (r reader) NodePoolByName(ws memdb.WatchSet, name string) (*structs.NodePool, error) {
	raw, err := first(r.txn(), ws, TableNodePools, indexID, name)
	if err != nil {
		return nil, err
	}
	if raw != nil {
		return raw.(*structs.NodePool), nil
	}
	for _, p := range structs.BuiltinNodePools() {
		if p.Name == name {
			return p, nil
		}
	}
	return nil, nil
}

// UpsertNodePools stores pools at index, keeping the CreateIndex of those
// that exist. The pools are copied.
func (s *StateStore) UpsertNodePools(index uint64, pools []*structs.NodePool) error {
	return s.write(index, func(tx *writeTxn) error {
		for _, p := range pools {
			if p.Name == structs.NodePoolAll {
				return fmt.Errorf("modifying node pool %q is not allowed: %w", structs.NodePoolAll, ErrConflict)
			}
			if err := upsertNodePool(tx, p); err != nil {
				return err
			}
		}
		return nil
	})
}

func upsertNodePool(tx *writeTxn, p *structs.NodePool) error {
	c := *p
	c.CreateIndex, c.ModifyIndex = tx.index, tx.index
	raw, err := tx.First(TableNodePools, indexID, c.Name)
	if err != nil {
		return err
	}
	if old, ok := raw.(*structs.NodePool); ok {
		c.CreateIndex = old.CreateIndex
	} else if structs.IsBuiltinNodePool(c.Name) {
		c.CreateIndex = 1
	}
	return tx.insert(TableNodePools, &c)
}

// ensureNodePool creates pool name, unknown so far, for a node that
// registers in it (as Nomad does).
func ensureNodePool(tx *writeTxn, name string) error {
	if name == "" || structs.IsBuiltinNodePool(name) {
		return nil
	}
	raw, err := tx.First(TableNodePools, indexID, name)
	if err != nil || raw != nil {
		return err
	}
	return upsertNodePool(tx, &structs.NodePool{Name: name})
}

// DeleteNodePools deletes the pools names. A built-in pool, a missing one,
// or one that still has nodes or jobs that are not stopped is refused and
// nothing is deleted.
func (s *StateStore) DeleteNodePools(index uint64, names []string) error {
	return s.write(index, func(tx *writeTxn) error {
		for _, name := range names {
			if structs.IsBuiltinNodePool(name) {
				return fmt.Errorf("deleting built-in node pool %q is not allowed: %w", name, ErrConflict)
			}
			raw, err := tx.First(TableNodePools, indexID, name)
			if err != nil {
				return err
			}
			if raw == nil {
				return fmt.Errorf("node pool %q not found: %w", name, ErrNotFound)
			}
			nodes, err := list[*structs.Node](tx.Txn, nil, TableNodes, indexID)
			if err != nil {
				return err
			}
			for _, n := range nodes {
				if n.NodePool == name {
					return fmt.Errorf("node pool %q has nodes: %w", name, ErrConflict)
				}
			}
			jobs, err := list[*structs.Job](tx.Txn, nil, TableJobs, indexID)
			if err != nil {
				return err
			}
			for _, j := range jobs {
				if j.NodePool == name && !j.Stop {
					return fmt.Errorf("node pool %q has non-terminal jobs: %w", name, ErrConflict)
				}
			}
			if err := tx.delete(TableNodePools, raw); err != nil {
				return err
			}
		}
		return nil
	})
}

// NodePoolRestore restores a node pool.
func (r *Restore) NodePoolRestore(p *structs.NodePool) error { return r.insert(TableNodePools, p) }

// StoredNodePools lists the stored pools only (for snapshots).
func (r reader) StoredNodePools() ([]*structs.NodePool, error) {
	return list[*structs.NodePool](r.txn(), nil, TableNodePools, indexID)
}
