package nomad

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// Default lock TTL and delay when an acquire names none (the api's).
const (
	defaultVariableLockTTL   = 15 * time.Second
	defaultVariableLockDelay = 15 * time.Second
)

// VariableConflictError answers a write refused because of a check index
// or a lock: Conflict is the stored variable (an empty one with only the
// namespace and path when none exists), its items only when the caller
// may read them.
type VariableConflictError struct {
	Conflict *structs.VariableDecrypted
}

func (e *VariableConflictError) Error() string {
	return fmt.Sprintf("variable %q: conflict (stored modify index %d)", e.Conflict.Path, e.Conflict.ModifyIndex)
}

// VariableWrite is a write of one variable (see WriteVariable).
type VariableWrite struct {
	Op        structs.VarOp
	Namespace string
	Path      string
	// Items are the new items (set; lock-acquire: nil keeps the stored).
	Items map[string]string
	// CheckIndex, when set, is the check-and-set index (0: create only).
	CheckIndex *uint64
	// LockID is the caller's lock (required to change a locked variable).
	LockID string
	// Lock carries TTL and LockDelay of a lock-acquire (zero: defaults).
	Lock *structs.VariableLock
}

// ReadVariable returns the variable (ns, path) decrypted, or nil when it
// does not exist, with the index the answer is current at. It needs the
// variables read capability on the path.
func (s *Server) ReadVariable(a *acl.ACL, ws memdb.WatchSet, snap *state.Snapshot, ns, path string) (*structs.VariableDecrypted, uint64, error) {
	if ns == "*" {
		return nil, 0, structs.BadRequestf(`can not target wildcard ("*")namespace`)
	}
	if !a.AllowVariableOperation(ns, path, acl.VariablesCapabilityRead) {
		return nil, 0, structs.ErrPermissionDenied
	}
	v, err := snap.VariableByPath(ws, ns, path)
	if err != nil {
		return nil, 0, err
	}
	if v == nil {
		return nil, max(snap.Index(state.TableVariables), 1), nil
	}
	items, err := s.varCipher.decrypt(snap, v)
	if err != nil {
		return nil, 0, err
	}
	return &structs.VariableDecrypted{VariableMeta: metaOf(v), Items: items}, v.ModifyIndex, nil
}

// ListVariables returns the metadata of the variables of ns ("*": every
// namespace) whose path starts with prefix and that the caller may list,
// sorted by namespace and path; a lock is shown only to callers who may
// write the variable.
func (s *Server) ListVariables(a *acl.ACL, ws memdb.WatchSet, snap *state.Snapshot, ns, prefix string) ([]structs.VariableMeta, uint64, error) {
	vars, err := snap.Variables(ws, ns, prefix)
	if err != nil {
		return nil, 0, err
	}
	out := make([]structs.VariableMeta, 0, len(vars))
	for _, v := range vars {
		if !a.AllowVariableOperation(v.Namespace, v.Path, acl.VariablesCapabilityList) {
			continue
		}
		m := metaOf(v)
		if !a.AllowVariableOperation(v.Namespace, v.Path, acl.VariablesCapabilityWrite) {
			m.Lock = nil
		}
		out = append(out, m)
	}
	return out, snap.Index(state.TableVariables), nil
}

// metaOf returns v's metadata with its own copy of the lock.
func metaOf(v *structs.VariableEncrypted) structs.VariableMeta {
	m := v.VariableMeta
	m.Lock = v.Lock.Copy()
	return m
}

// WriteVariable sets, deletes, locks or unlocks a variable and returns it as
// written (nil after a delete; without items after a release) with the
// raft index. Bad input is a *structs.RequestError, a refused check index
// or lock a *VariableConflictError. Call it on the leader.
func (s *Server) WriteVariable(a *acl.ACL, w *VariableWrite) (*structs.VariableDecrypted, uint64, error) {
	ns := w.Namespace
	if ns == "" {
		ns = structs.DefaultNamespace
	}
	if ns == "*" {
		return nil, 0, structs.BadRequestf(`can not target wildcard ("*")namespace`)
	}
	capability := acl.VariablesCapabilityWrite
	if w.Op == structs.VarOpDelete {
		capability = acl.VariablesCapabilityDestroy
	}
	if !a.AllowVariableOperation(ns, w.Path, capability) {
		return nil, 0, structs.ErrPermissionDenied
	}
	if err := validateVariableWrite(w); err != nil {
		return nil, 0, err
	}
	snap, err := s.snapshotWithActiveKey()
	if err != nil {
		return nil, 0, err
	}
	if n, err := snap.NamespaceByName(nil, ns); err != nil {
		return nil, 0, err
	} else if n == nil {
		return nil, 0, structs.BadRequestf("namespace %q does not exist", ns)
	}
	cur, err := snap.VariableByPath(nil, ns, w.Path)
	if err != nil {
		return nil, 0, err
	}
	key := lockKey{ns, w.Path}
	now := s.now()
	// A lock whose TTL ran out is no longer its holder's, even while the
	// lock delay keeps it in state.
	if cur != nil && cur.Lock != nil && cur.Lock.ID == w.LockID && !s.varLocks.live(key, w.LockID, now) {
		return nil, 0, s.conflict(a, snap, ns, w.Path, cur)
	}
	v := &structs.VariableEncrypted{VariableMeta: structs.VariableMeta{
		Namespace: ns, Path: w.Path, CreateTime: now.UnixNano(), ModifyTime: now.UnixNano(),
	}}
	req := &structs.VariablesApplyRequest{Op: w.Op, Var: v, CheckIndex: w.CheckIndex, LockID: w.LockID}
	items := w.Items
	switch w.Op {
	case structs.VarOpSet:
		if v.KeyID, v.Data, err = s.varCipher.encrypt(snap, ns, w.Path, items); err != nil {
			return nil, 0, err
		}
	case structs.VarOpLockAcquire:
		lock := &structs.VariableLock{ID: generateUUID(), TTL: defaultVariableLockTTL, LockDelay: defaultVariableLockDelay}
		if w.Lock != nil && w.Lock.TTL != 0 {
			lock.TTL = w.Lock.TTL
		}
		if w.Lock != nil && w.Lock.LockDelay != 0 {
			lock.LockDelay = w.Lock.LockDelay
		}
		if err := structs.ValidateVariableLock(lock); err != nil {
			return nil, 0, structs.BadRequestf("%v", err)
		}
		v.Lock = lock
		if len(items) == 0 && cur != nil {
			req.KeepItems = true
			if items, err = s.varCipher.decrypt(snap, cur); err != nil {
				return nil, 0, err
			}
		} else {
			if items == nil {
				items = map[string]string{}
			}
			if v.KeyID, v.Data, err = s.varCipher.encrypt(snap, ns, w.Path, items); err != nil {
				return nil, 0, err
			}
		}
	}
	resp, index, err := s.applyVariable(req)
	if err != nil {
		return nil, 0, err
	}
	if resp.Result == structs.VarResultConflict {
		return nil, 0, s.conflict(a, snap, ns, w.Path, resp.Conflict)
	}
	switch w.Op {
	case structs.VarOpDelete:
		s.varLocks.remove(key)
		return nil, index, nil
	case structs.VarOpLockAcquire:
		s.varLocks.start(key, v.Lock, now)
	case structs.VarOpLockRelease:
		s.varLocks.remove(key)
		return &structs.VariableDecrypted{VariableMeta: metaOf(resp.Written)}, index, nil
	}
	return &structs.VariableDecrypted{VariableMeta: metaOf(resp.Written), Items: items}, index, nil
}

// activeKeyWait bounds the wait for the cluster's first root key (the
// leader creates it right after taking office).
const activeKeyWait = 10 * time.Second

// snapshotWithActiveKey returns a snapshot that has an active root key,
// waiting up to activeKeyWait for the leader to create the first one.
func (s *Server) snapshotWithActiveKey() (*state.Snapshot, error) {
	ctx, cancel := context.WithTimeout(context.Background(), activeKeyWait)
	defer cancel()
	var snap *state.Snapshot
	_, _, err := s.State().BlockingQuery(ctx, 1, func(ws memdb.WatchSet, sn *state.Snapshot) (any, uint64, error) {
		snap = sn
		key, err := sn.ActiveRootKey(ws)
		if err != nil || key != nil {
			return nil, 2, err // answered: a key exists
		}
		return nil, 1, nil // wait for the keyring to change
	})
	if err != nil {
		return nil, err
	}
	if key, err := snap.ActiveRootKey(nil); err != nil {
		return nil, err
	} else if key == nil {
		return nil, errNoActiveKey
	}
	return snap, nil
}

// validateVariableWrite checks a write's path, items and lock ID with
// Nomad's rules and wording.
func validateVariableWrite(w *VariableWrite) error {
	if w.Op == structs.VarOpDelete {
		if w.Path == "" {
			return structs.BadRequestf("variable requires path")
		}
		return nil
	}
	if err := structs.ValidateVariablePath(w.Path); err != nil {
		return structs.BadRequestf("%v", err)
	}
	switch w.Op {
	case structs.VarOpSet:
		if len(w.Items) == 0 {
			return structs.BadRequestf("variable missing required Items object")
		}
	case structs.VarOpLockRelease:
		if len(w.Items) != 0 {
			return structs.BadRequestf("lock release operation doesn't allow items")
		}
	case structs.VarOpLockAcquire:
	default:
		return structs.BadRequestf("unknown variable operation %q", w.Op)
	}
	if structs.VariableItemsSize(w.Items) > structs.MaxVariableSize {
		return structs.BadRequestf("variables are limited to 64KiB in total size")
	}
	return nil
}

// RenewVariableLock extends the TTL of lock lockID on (ns, path) and returns
// the variable's metadata (renewing writes nothing: the lease lives on the
// leader). A lock not held by lockID, or past its TTL, is a
// *VariableConflictError. Call it on the leader.
func (s *Server) RenewVariableLock(a *acl.ACL, ns, path, lockID string) (*structs.VariableMeta, error) {
	if ns == "" {
		ns = structs.DefaultNamespace
	}
	if !a.AllowVariableOperation(ns, path, acl.VariablesCapabilityWrite) {
		return nil, structs.ErrPermissionDenied
	}
	snap := s.State().Snapshot()
	cur, err := snap.VariableByPath(nil, ns, path)
	if err != nil {
		return nil, err
	}
	if cur == nil || cur.Lock == nil || cur.Lock.ID != lockID ||
		!s.varLocks.renew(lockKey{ns, path}, lockID, cur.Lock.TTL, s.now()) {
		return nil, s.conflict(a, snap, ns, path, cur)
	}
	m := metaOf(cur)
	return &m, nil
}

// conflict builds the conflict answer for cur (nil: none stored), its items
// only when a may read them.
func (s *Server) conflict(a *acl.ACL, snap *state.Snapshot, ns, path string, cur *structs.VariableEncrypted) error {
	if cur == nil {
		return &VariableConflictError{Conflict: &structs.VariableDecrypted{VariableMeta: structs.VariableMeta{Namespace: ns, Path: path}}}
	}
	out := &structs.VariableDecrypted{VariableMeta: metaOf(cur)}
	if a.AllowVariableOperation(ns, path, acl.VariablesCapabilityRead) {
		items, err := s.varCipher.decrypt(snap, cur)
		if err != nil {
			return err
		}
		out.Items = items
	} else {
		out.Lock = nil
	}
	return &VariableConflictError{Conflict: out}
}

// applyVariable applies req through raft and returns the FSM's answer.
func (s *Server) applyVariable(req *structs.VariablesApplyRequest) (*structs.VariablesApplyResponse, uint64, error) {
	raw, index, err := s.raftApply(structs.VariablesApplyRequestType, req)
	if err != nil {
		return nil, 0, err
	}
	if rerr, ok := raw.(error); ok {
		return nil, 0, rerr
	}
	resp, ok := raw.(*structs.VariablesApplyResponse)
	if !ok {
		return nil, 0, errors.New("variables: unexpected apply response")
	}
	return resp, index, nil
}
