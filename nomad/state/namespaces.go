package state

import (
	"fmt"
	"strings"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/structs"
)

// TableNamespaces stores namespaces (*structs.Namespace).
const TableNamespaces = "namespaces"

// ErrDefaultNamespace is returned when asked to delete the default namespace.
var ErrDefaultNamespace = fmt.Errorf("default namespace can not be deleted: %w", ErrConflict)

func namespacesTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableNamespaces,
		Indexes: map[string]*memdb.IndexSchema{
			// id: one namespace per name; "id_prefix" serves prefix lookups.
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "Name"}},
		},
	}
}

// defaultNamespace is the namespace every store starts with, created at
// index 1 so that every server holds the same row.
func defaultNamespace() *structs.Namespace {
	return &structs.Namespace{
		Name: structs.DefaultNamespace, Description: "Default shared namespace",
		CreateIndex: 1, ModifyIndex: 1,
	}
}

// UpsertNamespaces stores namespaces at index, keeping the CreateIndex of
// those that already exist.
func (s *StateStore) UpsertNamespaces(index uint64, nss []*structs.Namespace) error {
	return s.write(index, func(tx *writeTxn) error {
		for _, ns := range nss {
			c := *ns
			c.CreateIndex, c.ModifyIndex = index, index
			if raw, err := tx.First(TableNamespaces, indexID, ns.Name); err != nil {
				return err
			} else if old, ok := raw.(*structs.Namespace); ok {
				c.CreateIndex = old.CreateIndex
			}
			if err := tx.insert(TableNamespaces, &c); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeleteNamespaces removes namespaces by name. The default namespace, a
// missing namespace and a namespace that still holds non-terminal jobs fail
// the whole request.
func (s *StateStore) DeleteNamespaces(index uint64, names []string) error {
	return s.write(index, func(tx *writeTxn) error {
		for _, name := range names {
			if name == structs.DefaultNamespace {
				return ErrDefaultNamespace
			}
			raw, err := tx.First(TableNamespaces, indexID, name)
			if err != nil {
				return err
			}
			if raw == nil {
				return fmt.Errorf("namespace %q: %w", name, ErrNotFound)
			}
			jobs, err := list[*structs.Job](tx.Txn, nil, TableJobs, indexIDPrefix, name, "")
			if err != nil {
				return err
			}
			for _, j := range jobs {
				if j.Namespace == name && j.Status != structs.JobStatusDead {
					return fmt.Errorf("namespace %q has non-terminal jobs in regions: [%s]: %w", name, j.Region, ErrConflict)
				}
			}
			if err := tx.delete(TableNamespaces, raw); err != nil {
				return err
			}
		}
		return nil
	})
}

// Namespaces returns every namespace whose name starts with prefix, sorted
// by name.
func (r reader) Namespaces(ws memdb.WatchSet, prefix string) ([]*structs.Namespace, error) {
	all, err := list[*structs.Namespace](r.txn(), ws, TableNamespaces, indexID)
	if err != nil {
		return nil, err
	}
	out := all[:0:0]
	for _, ns := range all {
		if strings.HasPrefix(ns.Name, prefix) {
			out = append(out, ns)
		}
	}
	return out, nil
}

// NamespaceByName returns the namespace, or nil.
func (r reader) NamespaceByName(ws memdb.WatchSet, name string) (*structs.Namespace, error) {
	raw, err := first(r.txn(), ws, TableNamespaces, indexID, name)
	if raw == nil || err != nil {
		return nil, err
	}
	return raw.(*structs.Namespace), nil
}

// NamespaceRestore restores a namespace.
func (r *Restore) NamespaceRestore(ns *structs.Namespace) error {
	return r.insert(TableNamespaces, ns)
}
