package state

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/structs"
)

// TableVariables stores Nomad variables (*structs.VariableEncrypted): items
// only as ciphertext.
const TableVariables = "variables"

func variablesTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableVariables,
		Indexes: map[string]*memdb.IndexSchema{
			// id: one variable per (Namespace, Path); "id_prefix"
			// serves path prefix lookups within a namespace.
			indexID: nsIDIndex("Path"),
		},
	}
}

// ApplyVariable carries out req at index (see structs.VariablesApplyRequest)
// and returns what was written or the conflict. A check-index or lock
// mismatch writes nothing and is not an error.
func (s *StateStore) ApplyVariable(index uint64, req *structs.VariablesApplyRequest) (*structs.VariablesApplyResponse, error) {
	if req == nil || req.Var == nil {
		return nil, errors.New("state: variable apply without a variable")
	}
	var resp *structs.VariablesApplyResponse
	err := s.write(index, func(tx *writeTxn) error {
		v := req.Var
		raw, err := tx.First(TableVariables, indexID, nsOrDefault(v.Namespace), v.Path)
		if err != nil {
			return fmt.Errorf("state: lookup variable: %w", err)
		}
		cur, _ := raw.(*structs.VariableEncrypted)
		if conflict := variableConflict(req, cur); conflict {
			resp = &structs.VariablesApplyResponse{Result: structs.VarResultConflict, Conflict: cur}
			return nil
		}
		resp = &structs.VariablesApplyResponse{Result: structs.VarResultOK}
		if req.Op == structs.VarOpDelete {
			if cur == nil {
				return nil
			}
			return tx.delete(TableVariables, cur)
		}
		next := v.Copy()
		next.Namespace = nsOrDefault(next.Namespace)
		next.CreateIndex, next.ModifyIndex = index, index
		if cur != nil {
			next.CreateIndex, next.CreateTime = cur.CreateIndex, cur.CreateTime
		}
		switch req.Op {
		case structs.VarOpSet:
			if cur != nil {
				next.Lock = cur.Lock.Copy() // lock parameters are immutable
			} else {
				next.Lock = nil
			}
		case structs.VarOpLockAcquire:
			if req.KeepItems && cur != nil {
				next.KeyID, next.Data = cur.KeyID, cur.Data
			}
		case structs.VarOpLockRelease:
			next.KeyID, next.Data = cur.KeyID, cur.Data
			next.Lock = nil
		default:
			return fmt.Errorf("state: unknown variable operation %q", req.Op)
		}
		resp.Written = next
		return tx.insert(TableVariables, next)
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// variableConflict reports whether req may not be applied over cur (the
// stored variable or nil): a check index that does not match, a lock held
// by someone else, a lock to acquire that is held, a lock to release that
// is not held by req.
func variableConflict(req *structs.VariablesApplyRequest, cur *structs.VariableEncrypted) bool {
	if c := req.CheckIndex; c != nil {
		if *c == 0 && cur != nil {
			return true
		}
		if *c != 0 && (cur == nil || cur.ModifyIndex != *c) {
			return true
		}
	}
	locked := cur != nil && cur.Lock != nil
	switch req.Op {
	case structs.VarOpLockAcquire:
		return locked
	case structs.VarOpLockRelease:
		return !locked || cur.Lock.ID != req.LockID
	case structs.VarOpDelete:
		return locked && cur.Lock.ID != req.LockID
	default: // set: a locked variable changes only with its lock's ID
		if locked {
			return cur.Lock.ID != req.LockID
		}
		return req.LockID != ""
	}
}

// VariableByPath returns the variable at (ns, path), or nil.
func (r reader) VariableByPath(ws memdb.WatchSet, ns, path string) (*structs.VariableEncrypted, error) {
	raw, err := first(r.txn(), ws, TableVariables, indexID, nsOrDefault(ns), path)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.VariableEncrypted), nil
}

// Variables returns the variables of namespace ns ("*": all) whose path
// starts with prefix, sorted by namespace and path.
func (r reader) Variables(ws memdb.WatchSet, ns, prefix string) ([]*structs.VariableEncrypted, error) {
	if ns != allNamespaces {
		return list[*structs.VariableEncrypted](r.txn(), ws, TableVariables, indexIDPrefix, nsOrDefault(ns), prefix)
	}
	all, err := list[*structs.VariableEncrypted](r.txn(), ws, TableVariables, indexID)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, v := range all {
		if strings.HasPrefix(v.Path, prefix) {
			out = append(out, v)
		}
	}
	return out, nil
}

// VariablesByKeyID reports whether some variable is encrypted with root
// key id.
func (r reader) VariablesByKeyID(id string) (bool, error) {
	all, err := list[*structs.VariableEncrypted](r.txn(), nil, TableVariables, indexID)
	if err != nil {
		return false, err
	}
	for _, v := range all {
		if v.KeyID == id {
			return true, nil
		}
	}
	return false, nil
}

// VariableRestore restores a variable from a snapshot.
func (r *Restore) VariableRestore(v *structs.VariableEncrypted) error {
	return r.insert(TableVariables, v)
}
