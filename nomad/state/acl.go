package state

import (
	"errors"
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/structs"
)

// ACL tables.
const (
	TableACLPolicies    = "acl_policy"
	TableACLTokens      = "acl_token"
	TableACLRoles       = "acl_role"
	TableOneTimeTokens  = "one_time_token"
	indexName           = "name"
	indexAccessor       = "accessor"
	bootstrapIndexKey   = "acl_token_bootstrap"
	errBootstrapMessage = "ACL bootstrap already done"
)

// ErrBootstrapDone is returned for a bootstrap whose reset index does not
// match the stored bootstrap index; the message carries the index an
// operator writes to the reset file.
type ErrBootstrapDone struct{ ResetIndex uint64 }

func (e *ErrBootstrapDone) Error() string {
	return fmt.Sprintf("%s (reset index: %d)", errBootstrapMessage, e.ResetIndex)
}

func aclPoliciesTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableACLPolicies,
		Indexes: map[string]*memdb.IndexSchema{
			// id: one policy per name.
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "Name"}},
		},
	}
}

func aclTokensTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableACLTokens,
		Indexes: map[string]*memdb.IndexSchema{
			// id: the accessor ID; "id_prefix" serves prefix lookups.
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "AccessorID"}},
			// secret_id: resolves a request's token.
			indexSecretID: {Name: indexSecretID, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "SecretID"}},
		},
	}
}

func aclRolesTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableACLRoles,
		Indexes: map[string]*memdb.IndexSchema{
			// id: the role's UUID.
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "ID"}},
			// name: role names are unique too.
			indexName: {Name: indexName, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "Name"}},
		},
	}
}

func oneTimeTokensTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableOneTimeTokens,
		Indexes: map[string]*memdb.IndexSchema{
			// id: the one-time secret.
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "OneTimeSecretID"}},
		},
	}
}

// UpsertACLPolicies stores policies at index, keeping the CreateIndex of
// those that already exist.
func (s *StateStore) UpsertACLPolicies(index uint64, policies []*structs.ACLPolicy) error {
	return s.write(index, func(tx *writeTxn) error {
		for _, p := range policies {
			c := *p
			c.CreateIndex, c.ModifyIndex = index, index
			if raw, err := tx.First(TableACLPolicies, indexID, p.Name); err != nil {
				return err
			} else if old, ok := raw.(*structs.ACLPolicy); ok {
				c.CreateIndex = old.CreateIndex
			}
			if err := tx.insert(TableACLPolicies, &c); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeleteACLPolicies removes policies by name; missing ones fail with
// ErrNotFound and nothing is removed.
func (s *StateStore) DeleteACLPolicies(index uint64, names []string) error {
	return s.write(index, func(tx *writeTxn) error {
		for _, n := range names {
			raw, err := tx.First(TableACLPolicies, indexID, n)
			if err != nil {
				return err
			}
			if raw == nil {
				return fmt.Errorf("ACL policy %q: %w", n, ErrNotFound)
			}
			if err := tx.delete(TableACLPolicies, raw); err != nil {
				return err
			}
		}
		return nil
	})
}

// ACLPolicies returns every policy sorted by name.
func (r reader) ACLPolicies(ws memdb.WatchSet) ([]*structs.ACLPolicy, error) {
	return list[*structs.ACLPolicy](r.txn(), ws, TableACLPolicies, indexID)
}

// ACLPolicyByName returns the policy name, or nil.
func (r reader) ACLPolicyByName(ws memdb.WatchSet, name string) (*structs.ACLPolicy, error) {
	raw, err := first(r.txn(), ws, TableACLPolicies, indexID, name)
	if raw == nil || err != nil {
		return nil, err
	}
	return raw.(*structs.ACLPolicy), nil
}

// UpsertACLTokens stores tokens at index, keeping the CreateIndex of those
// that already exist.
func (s *StateStore) UpsertACLTokens(index uint64, tokens []*structs.ACLToken) error {
	return s.write(index, func(tx *writeTxn) error { return upsertTokens(tx, index, tokens) })
}

func upsertTokens(tx *writeTxn, index uint64, tokens []*structs.ACLToken) error {
	for _, t := range tokens {
		c := t.Copy()
		c.CreateIndex, c.ModifyIndex = index, index
		raw, err := tx.First(TableACLTokens, indexID, t.AccessorID)
		if err != nil {
			return err
		}
		if old, ok := raw.(*structs.ACLToken); ok {
			c.CreateIndex = old.CreateIndex
		}
		if dup, err := tx.First(TableACLTokens, indexSecretID, t.SecretID); err != nil {
			return err
		} else if d, ok := dup.(*structs.ACLToken); ok && d.AccessorID != t.AccessorID {
			return fmt.Errorf("secret ID of token %q already in use: %w", t.AccessorID, ErrConflict)
		}
		if err := tx.insert(TableACLTokens, c); err != nil {
			return err
		}
	}
	return nil
}

// BootstrapACLToken stores the bootstrap management token when the stored
// bootstrap index equals resetIndex, and records index as the new bootstrap
// index. Otherwise it fails with *ErrBootstrapDone.
func (s *StateStore) BootstrapACLToken(index, resetIndex uint64, token *structs.ACLToken) error {
	return s.write(index, func(tx *writeTxn) error {
		cur := tableIndex(tx.Txn, bootstrapIndexKey)
		if cur != resetIndex {
			return &ErrBootstrapDone{ResetIndex: cur}
		}
		if err := upsertTokens(tx, index, []*structs.ACLToken{token}); err != nil {
			return err
		}
		tx.touched[bootstrapIndexKey] = struct{}{}
		return nil
	})
}

// ACLBootstrapIndex returns the raft index of the last bootstrap, or 0.
func (r reader) ACLBootstrapIndex() uint64 { return tableIndex(r.txn(), bootstrapIndexKey) }

// DeleteACLTokens removes tokens by accessor ID; missing ones fail with
// ErrNotFound and nothing is removed.
func (s *StateStore) DeleteACLTokens(index uint64, ids []string) error {
	return s.write(index, func(tx *writeTxn) error {
		for _, id := range ids {
			raw, err := tx.First(TableACLTokens, indexID, id)
			if err != nil {
				return err
			}
			if raw == nil {
				return fmt.Errorf("ACL token %q: %w", id, ErrNotFound)
			}
			if err := tx.delete(TableACLTokens, raw); err != nil {
				return err
			}
		}
		return nil
	})
}

// ACLTokens returns every token, sorted by accessor ID.
func (r reader) ACLTokens(ws memdb.WatchSet) ([]*structs.ACLToken, error) {
	return list[*structs.ACLToken](r.txn(), ws, TableACLTokens, indexID)
}

// ACLTokenByAccessorID returns the token, or nil.
func (r reader) ACLTokenByAccessorID(ws memdb.WatchSet, id string) (*structs.ACLToken, error) {
	raw, err := first(r.txn(), ws, TableACLTokens, indexID, id)
	if raw == nil || err != nil {
		return nil, err
	}
	return raw.(*structs.ACLToken), nil
}

// ACLTokenBySecretID returns the token, or nil.
func (r reader) ACLTokenBySecretID(ws memdb.WatchSet, secret string) (*structs.ACLToken, error) {
	if secret == "" {
		return nil, nil
	}
	raw, err := first(r.txn(), ws, TableACLTokens, indexSecretID, secret)
	if raw == nil || err != nil {
		return nil, err
	}
	return raw.(*structs.ACLToken), nil
}

// UpsertACLRoles stores roles at index. A role name used by another role
// fails with ErrConflict.
func (s *StateStore) UpsertACLRoles(index uint64, roles []*structs.ACLRole) error {
	return s.write(index, func(tx *writeTxn) error {
		for _, r := range roles {
			c := *r
			c.Policies = append([]*structs.ACLRolePolicyLink(nil), r.Policies...)
			c.CreateIndex, c.ModifyIndex = index, index
			if raw, err := tx.First(TableACLRoles, indexID, r.ID); err != nil {
				return err
			} else if old, ok := raw.(*structs.ACLRole); ok {
				c.CreateIndex = old.CreateIndex
			}
			if raw, err := tx.First(TableACLRoles, indexName, r.Name); err != nil {
				return err
			} else if other, ok := raw.(*structs.ACLRole); ok && other.ID != r.ID {
				return fmt.Errorf("ACL role with name %s already exists: %w", r.Name, ErrConflict)
			}
			if err := tx.insert(TableACLRoles, &c); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeleteACLRoles removes roles by ID; missing ones fail with ErrNotFound.
func (s *StateStore) DeleteACLRoles(index uint64, ids []string) error {
	return s.write(index, func(tx *writeTxn) error {
		for _, id := range ids {
			raw, err := tx.First(TableACLRoles, indexID, id)
			if err != nil {
				return err
			}
			if raw == nil {
				return fmt.Errorf("ACL role %q: %w", id, ErrNotFound)
			}
			if err := tx.delete(TableACLRoles, raw); err != nil {
				return err
			}
		}
		return nil
	})
}

// ACLRoles returns every role, sorted by ID.
func (r reader) ACLRoles(ws memdb.WatchSet) ([]*structs.ACLRole, error) {
	return list[*structs.ACLRole](r.txn(), ws, TableACLRoles, indexID)
}

// ACLRoleByID returns the role, or nil.
func (r reader) ACLRoleByID(ws memdb.WatchSet, id string) (*structs.ACLRole, error) {
	raw, err := first(r.txn(), ws, TableACLRoles, indexID, id)
	if raw == nil || err != nil {
		return nil, err
	}
	return raw.(*structs.ACLRole), nil
}

// ACLRoleByName returns the role, or nil.
func (r reader) ACLRoleByName(ws memdb.WatchSet, name string) (*structs.ACLRole, error) {
	raw, err := first(r.txn(), ws, TableACLRoles, indexName, name)
	if raw == nil || err != nil {
		return nil, err
	}
	return raw.(*structs.ACLRole), nil
}

// UpsertOneTimeToken stores a one-time token, or deletes the one whose
// secret is del.
func (s *StateStore) UpsertOneTimeToken(index uint64, tok *structs.OneTimeToken, del string) error {
	return s.write(index, func(tx *writeTxn) error {
		if del != "" {
			raw, err := tx.First(TableOneTimeTokens, indexID, del)
			if err != nil {
				return err
			}
			if raw == nil {
				return fmt.Errorf("one-time token: %w", ErrNotFound)
			}
			return tx.delete(TableOneTimeTokens, raw)
		}
		if tok == nil {
			return errors.New("state: one-time token upsert without a token")
		}
		c := *tok
		c.CreateIndex, c.ModifyIndex = index, index
		return tx.insert(TableOneTimeTokens, &c)
	})
}

// OneTimeTokenBySecret returns the one-time token, or nil.
func (r reader) OneTimeTokenBySecret(ws memdb.WatchSet, secret string) (*structs.OneTimeToken, error) {
	raw, err := first(r.txn(), ws, TableOneTimeTokens, indexID, secret)
	if raw == nil || err != nil {
		return nil, err
	}
	return raw.(*structs.OneTimeToken), nil
}

// OneTimeTokens returns every one-time token (for snapshots).
func (r reader) OneTimeTokens(ws memdb.WatchSet) ([]*structs.OneTimeToken, error) {
	return list[*structs.OneTimeToken](r.txn(), ws, TableOneTimeTokens, indexID)
}

// ACL restores from a snapshot.

// ACLPolicyRestore restores a policy.
func (r *Restore) ACLPolicyRestore(p *structs.ACLPolicy) error { return r.insert(TableACLPolicies, p) }

// ACLTokenRestore restores a token.
func (r *Restore) ACLTokenRestore(t *structs.ACLToken) error { return r.insert(TableACLTokens, t) }

// ACLRoleRestore restores a role.
func (r *Restore) ACLRoleRestore(x *structs.ACLRole) error { return r.insert(TableACLRoles, x) }

// OneTimeTokenRestore restores a one-time token.
func (r *Restore) OneTimeTokenRestore(t *structs.OneTimeToken) error {
	return r.insert(TableOneTimeTokens, t)
}
