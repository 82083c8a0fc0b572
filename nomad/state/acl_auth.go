package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/structs"
)

// Auth method and binding rule tables.
const (
	TableACLAuthMethods  = "acl_auth_method"
	TableACLBindingRules = "acl_binding_rule"
	indexAuthMethod      = "auth_method"
)

func aclAuthMethodsTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableACLAuthMethods,
		Indexes: map[string]*memdb.IndexSchema{
			// id: one auth method per name.
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "Name"}},
		},
	}
}

func aclBindingRulesTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableACLBindingRules,
		Indexes: map[string]*memdb.IndexSchema{
			// id: the rule's UUID.
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "ID"}},
			// auth_method: the rules of one auth method.
			indexAuthMethod: {Name: indexAuthMethod, Indexer: &memdb.StringFieldIndex{Field: "AuthMethod"}},
		},
	}
}

// UpsertACLAuthMethods stores auth methods at index, keeping the
// CreateIndex and CreateTime of those that already exist. A default method
// when another method of the same type is already the default fails with
// ErrConflict and nothing is written.
func (s *StateStore) UpsertACLAuthMethods(index uint64, methods []*structs.ACLAuthMethod) error {
	return s.write(index, func(tx *writeTxn) error {
		for _, m := range methods {
			c := m.Copy()
			c.CreateIndex, c.ModifyIndex = index, index
			if raw, err := tx.First(TableACLAuthMethods, indexID, m.Name); err != nil {
				return err
			} else if old, ok := raw.(*structs.ACLAuthMethod); ok {
				c.CreateIndex, c.CreateTime = old.CreateIndex, old.CreateTime
			}
			if c.Default {
				all, err := list[*structs.ACLAuthMethod](tx.Txn, nil, TableACLAuthMethods, indexID)
				if err != nil {
					return err
				}
				for _, o := range all {
					if o.Default && o.Type == c.Type && o.Name != c.Name {
						return fmt.Errorf("default method for type %s already exists: %v: %w", c.Type, o.Name, ErrConflict)
					}
				}
			}
			if err := tx.insert(TableACLAuthMethods, c); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeleteACLAuthMethods removes auth methods by name, with the binding
// rules that name them; a missing method fails with ErrNotFound and
// nothing is removed.
func (s *StateStore) DeleteACLAuthMethods(index uint64, names []string) error {
	return s.write(index, func(tx *writeTxn) error {
		for _, n := range names {
			raw, err := tx.First(TableACLAuthMethods, indexID, n)
			if err != nil {
				return err
			}
			if raw == nil {
				return fmt.Errorf("ACL auth method %q: %w", n, ErrNotFound)
			}
			if err := tx.delete(TableACLAuthMethods, raw); err != nil {
				return err
			}
			rules, err := list[*structs.ACLBindingRule](tx.Txn, nil, TableACLBindingRules, indexAuthMethod, n)
			if err != nil {
				return err
			}
			for _, r := range rules {
				if err := tx.delete(TableACLBindingRules, r); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// ACLAuthMethods returns every auth method sorted by name.
func (r reader) ACLAuthMethods(ws memdb.WatchSet) ([]*structs.ACLAuthMethod, error) {
	return list[*structs.ACLAuthMethod](r.txn(), ws, TableACLAuthMethods, indexID)
}

// ACLAuthMethodByName returns the auth method, or nil.
func (r reader) ACLAuthMethodByName(ws memdb.WatchSet, name string) (*structs.ACLAuthMethod, error) {
	raw, err := first(r.txn(), ws, TableACLAuthMethods, indexID, name)
	if raw == nil || err != nil {
		return nil, err
	}
	return raw.(*structs.ACLAuthMethod), nil
}

// UpsertACLBindingRules stores binding rules at index, keeping the
// CreateIndex and CreateTime of those that already exist. A rule naming an
// auth method that does not exist fails with ErrConflict and nothing is
// written.
func (s *StateStore) UpsertACLBindingRules(index uint64, rules []*structs.ACLBindingRule) error {
	return s.write(index, func(tx *writeTxn) error {
		for _, r := range rules {
			c := *r
			c.CreateIndex, c.ModifyIndex = index, index
			if raw, err := tx.First(TableACLAuthMethods, indexID, r.AuthMethod); err != nil {
				return err
			} else if raw == nil {
				return fmt.Errorf("ACL auth method %s not found: %w", r.AuthMethod, ErrConflict)
			}
			if raw, err := tx.First(TableACLBindingRules, indexID, r.ID); err != nil {
				return err
			} else if old, ok := raw.(*structs.ACLBindingRule); ok {
				c.CreateIndex, c.CreateTime = old.CreateIndex, old.CreateTime
			}
			if err := tx.insert(TableACLBindingRules, &c); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeleteACLBindingRules removes binding rules by ID; a missing one fails
// with ErrNotFound and nothing is removed.
func (s *StateStore) DeleteACLBindingRules(index uint64, ids []string) error {
	return s.write(index, func(tx *writeTxn) error {
		for _, id := range ids {
			raw, err := tx.First(TableACLBindingRules, indexID, id)
			if err != nil {
				return err
			}
			if raw == nil {
				return fmt.Errorf("ACL binding rule %q: %w", id, ErrNotFound)
			}
			if err := tx.delete(TableACLBindingRules, raw); err != nil {
				return err
			}
		}
		return nil
	})
}

// ACLBindingRules returns every binding rule sorted by ID.
func (r reader) ACLBindingRules(ws memdb.WatchSet) ([]*structs.ACLBindingRule, error) {
	return list[*structs.ACLBindingRule](r.txn(), ws, TableACLBindingRules, indexID)
}

// ACLBindingRuleByID returns the binding rule, or nil.
func (r reader) ACLBindingRuleByID(ws memdb.WatchSet, id string) (*structs.ACLBindingRule, error) {
	raw, err := first(r.txn(), ws, TableACLBindingRules, indexID, id)
	if raw == nil || err != nil {
		return nil, err
	}
	return raw.(*structs.ACLBindingRule), nil
}

// ACLAuthMethodRestore restores an auth method from a snapshot.
func (r *Restore) ACLAuthMethodRestore(m *structs.ACLAuthMethod) error {
	return r.insert(TableACLAuthMethods, m)
}

// ACLBindingRuleRestore restores a binding rule from a snapshot.
func (r *Restore) ACLBindingRuleRestore(x *structs.ACLBindingRule) error {
	return r.insert(TableACLBindingRules, x)
}
