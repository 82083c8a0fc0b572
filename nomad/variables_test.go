package nomad

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/mock"
	"github.com/drover-project/drover/nomad/structs"
)

// fakeClock is a settable wall clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// newVariablesServer starts a one-server cluster with ACLs on and waits
// until it leads and has its first root key.
func newVariablesServer(t *testing.T, clock *fakeClock) *Server {
	t.Helper()
	s, err := NewServer(Config{
		NodeName: "vars", Region: "global", Datacenter: "dc1", DataDir: t.TempDir(),
		RPCAddr: "127.0.0.1:0", BootstrapExpect: 1, NumSchedulers: 1, ACLEnabled: true, Now: clock.Now,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Shutdown() })
	require.Eventually(t, func() bool {
		k, err := s.State().ActiveRootKey(nil)
		return s.IsLeader() && err == nil && k != nil
	}, 20*time.Second, 20*time.Millisecond)
	return s
}

func compile(t *testing.T, rules string) *acl.ACL {
	t.Helper()
	p, err := acl.Parse(rules)
	require.NoError(t, err)
	a, err := acl.Compile([]*acl.Policy{p})
	require.NoError(t, err)
	return a
}

func set(s *Server, a *acl.ACL, path string, items map[string]string) (*structs.VariableDecrypted, error) {
	v, _, err := s.WriteVariable(a, &VariableWrite{Op: structs.VarOpSet, Path: path, Items: items})
	return v, err
}

// TestVariablesACL: the server checks the caller's ACL itself, per path:
// list is implied by read and write, destroy is its own, deny wins, and a
// conflict shows items only to readers.
func TestVariablesACL(t *testing.T) {
	s := newVariablesServer(t, &fakeClock{t: time.Unix(1000, 0)})
	mgmt := acl.ManagementACL()
	_, err := set(s, mgmt, "project/a", map[string]string{"k": "v"})
	require.NoError(t, err)
	_, err = set(s, mgmt, "system/b", map[string]string{"k": "v"})
	require.NoError(t, err)

	dev := compile(t, `namespace "default" {
  variables {
    path "project/*" { capabilities = ["write"] }
    path "system/*" { capabilities = ["read"] }
    path "system/secret" { capabilities = ["deny"] }
  }
}`)
	snap := s.State().Snapshot()
	_, _, err = s.ReadVariable(dev, nil, snap, "default", "project/a")
	require.ErrorIs(t, err, structs.ErrPermissionDenied, "write does not include read")
	got, _, err := s.ReadVariable(dev, nil, snap, "default", "system/b")
	require.NoError(t, err)
	require.Equal(t, "v", got.Items["k"])
	_, err = set(s, dev, "project/new", map[string]string{"k": "v"})
	require.NoError(t, err)
	_, err = set(s, dev, "system/b", map[string]string{"k": "x"})
	require.ErrorIs(t, err, structs.ErrPermissionDenied)
	_, _, err = s.WriteVariable(dev, &VariableWrite{Op: structs.VarOpDelete, Path: "project/a"})
	require.ErrorIs(t, err, structs.ErrPermissionDenied, "destroy is not granted by write")
	_, err = set(s, mgmt, "system/secret", map[string]string{"k": "v"})
	require.NoError(t, err)
	_, _, err = s.ReadVariable(dev, nil, s.State().Snapshot(), "default", "system/secret")
	require.ErrorIs(t, err, structs.ErrPermissionDenied, "the exact deny wins over the glob")

	metas, _, err := s.ListVariables(dev, nil, s.State().Snapshot(), "default", "")
	require.NoError(t, err)
	var paths []string
	for _, m := range metas {
		paths = append(paths, m.Path)
	}
	require.Equal(t, []string{"project/a", "project/new", "system/b"}, paths)
	none, _, err := s.ListVariables(acl.DenyAll(), nil, s.State().Snapshot(), "*", "")
	require.NoError(t, err)
	require.Empty(t, none)

	// A writer without read sees a conflict's metadata, not its items.
	zero := uint64(0)
	_, _, err = s.WriteVariable(dev, &VariableWrite{Op: structs.VarOpSet, Path: "project/a", Items: map[string]string{"k": "w"}, CheckIndex: &zero})
	var ce *VariableConflictError
	require.True(t, errors.As(err, &ce), "%v", err)
	require.Nil(t, ce.Conflict.Items)
	require.Equal(t, "project/a", ce.Conflict.Path)
	require.Positive(t, ce.Conflict.ModifyIndex)

	_, err = set(s, mgmt, "x", map[string]string{"k": "v"})
	require.NoError(t, err)
	_, _, err = s.WriteVariable(mgmt, &VariableWrite{Op: structs.VarOpSet, Namespace: "nope", Path: "x", Items: map[string]string{"k": "v"}})
	require.ErrorContains(t, err, `namespace "nope" does not exist`)
}

// TestVariablesWorkloadIdentity: a task's workload identity reads its own
// job's variables (nomad/jobs, .../<job>, .../<group>, .../<task>) and
// gets 403 on another job's, on a job whose name merely starts with its
// own, and on writes.
func TestVariablesWorkloadIdentity(t *testing.T) {
	s := newVariablesServer(t, &fakeClock{t: time.Now()})
	mgmt := acl.ManagementACL()
	job := mock.Job("web")
	_, _, err := s.raftApply(structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job})
	require.NoError(t, err)
	stored, err := s.State().JobByID(nil, "default", "web")
	require.NoError(t, err)
	alloc := mock.Alloc(stored, "node-1")
	_, _, err = s.raftApply(structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{
		Job: stored, AllocsUpdated: []*structs.Allocation{alloc},
	})
	require.NoError(t, err)
	token, err := s.SignIdentity(alloc, "server", nil, 0)
	require.NoError(t, err)
	a, who, err := s.ResolveToken(token)
	require.NoError(t, err)
	require.NotNil(t, who.Claims)

	own := []string{"nomad/jobs", "nomad/jobs/web", "nomad/jobs/web/web", "nomad/jobs/web/web/server"}
	foreign := []string{"nomad/jobs/db", "nomad/jobs/web2", "nomad/jobs/web/other", "nomad/jobs/web/web/server/deeper", "shared/x"}
	for _, p := range append(append([]string{}, own...), foreign...) {
		_, err := set(s, mgmt, p, map[string]string{"p": p})
		require.NoError(t, err, p)
	}
	snap := s.State().Snapshot()
	for _, p := range own {
		v, _, err := s.ReadVariable(a, nil, snap, "default", p)
		require.NoError(t, err, p)
		require.Equal(t, p, v.Items["p"])
	}
	for _, p := range foreign {
		_, _, err := s.ReadVariable(a, nil, snap, "default", p)
		require.ErrorIs(t, err, structs.ErrPermissionDenied, p)
	}
	_, err = set(s, a, "nomad/jobs/web", map[string]string{"k": "v"})
	require.ErrorIs(t, err, structs.ErrPermissionDenied, "the implicit policy is read and list only")

	metas, _, err := s.ListVariables(a, nil, snap, "default", "nomad/jobs")
	require.NoError(t, err)
	var listed []string
	for _, m := range metas {
		listed = append(listed, m.Path)
	}
	require.ElementsMatch(t, own, listed)
}

// TestVariableLockExpiry: a lock not renewed within its TTL stays held by
// nobody else for the lock delay, then the leader releases it; the old
// holder can neither renew nor write with its ID after the TTL.
func TestVariableLockExpiry(t *testing.T) {
	clock := &fakeClock{t: time.Unix(5000, 0)}
	s := newVariablesServer(t, clock)
	mgmt := acl.ManagementACL()
	lock := &structs.VariableLock{TTL: 10 * time.Second, LockDelay: 10 * time.Second}
	held, _, err := s.WriteVariable(mgmt, &VariableWrite{Op: structs.VarOpLockAcquire, Path: "locks/a", Lock: lock})
	require.NoError(t, err)
	id := held.Lock.ID

	clock.Add(8 * time.Second)
	_, err = s.RenewVariableLock(mgmt, "default", "locks/a", id)
	require.NoError(t, err, "renewed within the TTL")
	clock.Add(9 * time.Second) // 9s after the renewal: still held
	var ce *VariableConflictError
	_, err = set(s, mgmt, "locks/a", map[string]string{"k": "x"})
	require.True(t, errors.As(err, &ce), "a write without the lock ID: %v", err)
	_, _, err = s.WriteVariable(mgmt, &VariableWrite{Op: structs.VarOpSet, Path: "locks/a", Items: map[string]string{"k": "v"}, LockID: id})
	require.NoError(t, err, "the holder writes with its lock ID")

	clock.Add(2 * time.Second) // 11s after the renewal: the TTL ran out
	_, err = s.RenewVariableLock(mgmt, "default", "locks/a", id)
	require.True(t, errors.As(err, &ce), "renew after the TTL: %v", err)
	_, _, err = s.WriteVariable(mgmt, &VariableWrite{Op: structs.VarOpSet, Path: "locks/a", Items: map[string]string{"k": "w"}, LockID: id})
	require.True(t, errors.As(err, &ce), "write after the TTL: %v", err)
	_, _, err = s.WriteVariable(mgmt, &VariableWrite{Op: structs.VarOpLockAcquire, Path: "locks/a", Lock: lock})
	require.True(t, errors.As(err, &ce), "nobody else acquires during the lock delay: %v", err)

	clock.Add(10 * time.Second) // past TTL + delay
	s.varLocks.poke()
	require.Eventually(t, func() bool {
		v, err := s.State().VariableByPath(nil, "default", "locks/a")
		return err == nil && v != nil && v.Lock == nil
	}, 10*time.Second, 10*time.Millisecond, "the leader releases the expired lock")
	next, _, err := s.WriteVariable(mgmt, &VariableWrite{Op: structs.VarOpLockAcquire, Path: "locks/a", Lock: lock})
	require.NoError(t, err)
	require.NotEqual(t, id, next.Lock.ID)
	require.Equal(t, map[string]string{"k": "v"}, next.Items)
}

// TestLockLeases: the lease arithmetic, at given times.
func TestLockLeases(t *testing.T) {
	t0 := time.Unix(100, 0)
	l := newLockLeases()
	l.rebuild(nil, t0) // the term's leases start from state
	k := lockKey{"default", "a"}
	l.start(k, &structs.VariableLock{ID: "x", TTL: 10 * time.Second, LockDelay: 5 * time.Second}, t0)
	require.False(t, l.renew(k, "y", 10*time.Second, t0), "another ID")
	require.True(t, l.live(k, "x", t0.Add(10*time.Second)), "live up to the deadline")
	require.False(t, l.live(k, "x", t0.Add(11*time.Second)))
	require.True(t, l.renew(k, "x", 10*time.Second, t0.Add(9*time.Second)))
	at, ok := l.next()
	require.True(t, ok)
	require.Equal(t, t0.Add(24*time.Second), at, "renewal + TTL + delay")
	require.Empty(t, l.due(t0.Add(23*time.Second)))
	require.Equal(t, []dueLock{{key: k, id: "x"}}, l.due(t0.Add(24*time.Second)))
	l.released(dueLock{key: k, id: "x"})
	_, ok = l.next()
	require.False(t, ok, "a released lease is forgotten")
	require.True(t, l.live(lockKey{"default", "b"}, "any", t0), "an unknown lock is live until rebuild")
	l.rebuild([]*structs.VariableEncrypted{{VariableMeta: structs.VariableMeta{Namespace: "default", Path: "b",
		Lock: &structs.VariableLock{ID: "z", TTL: time.Minute, LockDelay: time.Second}}}}, t0)
	require.False(t, l.live(lockKey{"default", "b"}, "any", t0))
	require.True(t, l.live(lockKey{"default", "b"}, "z", t0.Add(time.Minute)), "a full TTL from the rebuild")
}

// TestLockLeases_ExpiredStaysDeadUntilReleased: once a lease is due, its
// holder can neither use nor renew the lock while the leader releases it,
// nor after a failed release (retried lockRetry later); a release that
// went through forgets the lease, but not a newer holder's.
func TestLockLeases_ExpiredStaysDeadUntilReleased(t *testing.T) {
	t0 := time.Unix(100, 0)
	l := newLockLeases()
	l.rebuild(nil, t0)
	k := lockKey{"default", "a"}
	l.start(k, &structs.VariableLock{ID: "x", TTL: 10 * time.Second}, t0)
	at := t0.Add(10 * time.Second)
	require.Equal(t, []dueLock{{key: k, id: "x"}}, l.due(at))
	require.False(t, l.live(k, "x", at), "not live while being released")
	require.False(t, l.renew(k, "x", 10*time.Second, at), "not renewable while being released")

	l.retry(dueLock{key: k, id: "x"}, at) // the release failed
	require.False(t, l.live(k, "x", at), "not live after a failed release")
	require.False(t, l.renew(k, "x", 10*time.Second, at.Add(time.Millisecond)), "not renewable after a failed release")
	next, ok := l.next()
	require.True(t, ok)
	require.Equal(t, at.Add(lockRetry), next, "retried lockRetry later")
	require.Empty(t, l.due(at.Add(lockRetry-time.Millisecond)))
	require.Equal(t, []dueLock{{key: k, id: "x"}}, l.due(at.Add(lockRetry)))

	l.start(k, &structs.VariableLock{ID: "y", TTL: 10 * time.Second}, at) // acquired after the release applied
	l.released(dueLock{key: k, id: "x"})
	require.True(t, l.live(k, "y", at), "the newer holder's lease is kept")
	l.released(dueLock{key: k, id: "y"})
	_, ok = l.next()
	require.False(t, ok, "a released lease is forgotten")
}

// TestLockLeases_OnlyThisTerms: leases are forgotten with leadership,
// and until rebuild has matched a new term's leases against state, a lock
// the state holds is live and renewable whatever an earlier term recorded.
func TestLockLeases_OnlyThisTerms(t *testing.T) {
	t0 := time.Unix(100, 0)
	l := newLockLeases()
	l.rebuild(nil, t0)
	k := lockKey{"default", "a"}
	l.start(k, &structs.VariableLock{ID: "x", TTL: time.Hour}, t0)
	require.False(t, l.live(k, "y", t0), "this term's lease names x")

	l.reset() // leadership lost; another leader releases x and grants y
	require.True(t, l.live(k, "y", t0), "no lease of an earlier term refuses y")
	require.True(t, l.renew(k, "y", time.Hour, t0))
	l.start(k, &structs.VariableLock{ID: "x", TTL: time.Hour}, t0) // a write of the old term still in flight
	require.True(t, l.live(k, "y", t0), "before rebuild nothing recorded counts")
	require.Empty(t, l.due(t0.Add(2*time.Hour)), "nothing of the old term is released")

	l.rebuild([]*structs.VariableEncrypted{{VariableMeta: structs.VariableMeta{Namespace: "default", Path: "a",
		Lock: &structs.VariableLock{ID: "y", TTL: time.Minute}}}}, t0)
	require.True(t, l.live(k, "y", t0))
	require.False(t, l.live(k, "x", t0), "rebuilt from state: y holds")
}

// TestVariableLockReleasedAfterLeadershipCameBack is the regression test
// of the hour-long chaos run's lock violation: a server that led, granted a
// lock (x) and lost leadership kept x's lease; meanwhile another leader
// released x and granted y. Leading again, before its leases were rebuilt,
// the server refused y's holder its release: y was held in state, but the
// old lease named x. The refusal was definite ("fail"), the lock stayed
// held, and the history showed a holder refused its own release.
func TestVariableLockReleasedAfterLeadershipCameBack(t *testing.T) {
	s := newVariablesServer(t, &fakeClock{t: time.Now()})
	mgmt := acl.ManagementACL()
	lock := &structs.VariableLock{TTL: time.Hour, LockDelay: 10 * time.Second}
	x, _, err := s.WriteVariable(mgmt, &VariableWrite{Op: structs.VarOpLockAcquire, Path: "locks/a", Items: map[string]string{"by": "x"}, Lock: lock})
	require.NoError(t, err)

	s.revokeLeadership()
	// What another leader commits meanwhile: x released, y granted (raft
	// entries only: no lease of this server's records them).
	meta := structs.VariableMeta{Namespace: "default", Path: "locks/a"}
	_, _, err = s.applyVariable(&structs.VariablesApplyRequest{Op: structs.VarOpLockRelease,
		Var: &structs.VariableEncrypted{VariableMeta: meta}, LockID: x.Lock.ID})
	require.NoError(t, err)
	y := &structs.VariableLock{ID: "the-next-holder", TTL: time.Hour, LockDelay: 10 * time.Second}
	ymeta := meta
	ymeta.Lock = y
	resp, _, err := s.applyVariable(&structs.VariablesApplyRequest{Op: structs.VarOpLockAcquire,
		Var: &structs.VariableEncrypted{VariableMeta: ymeta}, KeepItems: true})
	require.NoError(t, err)
	require.Equal(t, structs.VarResultOK, resp.Result)

	// Leading again (raft never stopped naming it): y's holder releases.
	_, _, err = s.WriteVariable(mgmt, &VariableWrite{Op: structs.VarOpLockRelease, Path: "locks/a", LockID: y.ID})
	require.NoError(t, err, "the holder of the lock in state releases it")
	v, err := s.State().VariableByPath(nil, "default", "locks/a")
	require.NoError(t, err)
	require.Nil(t, v.Lock)
}

// TestVariableLockBetweenAllocations: two allocations of a job whose
// workload identities may write nomad/jobs/web/lock (a policy attached to
// the job) contend for one lock: the second is refused until the first
// releases it.
func TestVariableLockBetweenAllocations(t *testing.T) {
	s := newVariablesServer(t, &fakeClock{t: time.Now()})
	_, _, err := s.raftApply(structs.ACLPolicyUpsertRequestType, &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{{
		Name: "web-lock",
		Rules: `namespace "default" {
  variables {
    path "nomad/jobs/web/lock" { capabilities = ["write", "read"] }
  }
}`,
		JobACL: &structs.JobACL{Namespace: "default", JobID: "web"},
	}}})
	require.NoError(t, err)
	_, _, err = s.raftApply(structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: mock.Job("web")})
	require.NoError(t, err)
	job, err := s.State().JobByID(nil, "default", "web")
	require.NoError(t, err)
	first, second := mock.Alloc(job, "node-1"), mock.Alloc(job, "node-2")
	_, _, err = s.raftApply(structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{
		Job: job, AllocsUpdated: []*structs.Allocation{first, second},
	})
	require.NoError(t, err)
	aclOf := func(alloc *structs.Allocation) *acl.ACL {
		tok, err := s.SignIdentity(alloc, "server", nil, 0)
		require.NoError(t, err)
		a, _, err := s.ResolveToken(tok)
		require.NoError(t, err)
		return a
	}
	a1, a2 := aclOf(first), aclOf(second)
	acquire := func(a *acl.ACL) (*structs.VariableDecrypted, error) {
		v, _, err := s.WriteVariable(a, &VariableWrite{Op: structs.VarOpLockAcquire, Path: "nomad/jobs/web/lock",
			Lock: &structs.VariableLock{TTL: 10 * time.Second, LockDelay: 10 * time.Second}})
		return v, err
	}
	held, err := acquire(a1)
	require.NoError(t, err)
	var ce *VariableConflictError
	_, err = acquire(a2)
	require.True(t, errors.As(err, &ce), "held by the first allocation: %v", err)
	require.Equal(t, held.Lock.ID, ce.Conflict.Lock.ID, "a reader of the path sees the holder's lock")
	_, _, err = s.WriteVariable(a2, &VariableWrite{Op: structs.VarOpLockRelease, Path: "nomad/jobs/web/lock", LockID: "guess"})
	require.True(t, errors.As(err, &ce), "only the holder releases: %v", err)
	_, _, err = s.WriteVariable(a1, &VariableWrite{Op: structs.VarOpLockRelease, Path: "nomad/jobs/web/lock", LockID: held.Lock.ID})
	require.NoError(t, err)
	_, err = acquire(a2)
	require.NoError(t, err, "free once released")

	// Another job's workload gets nothing of it.
	_, _, err = s.raftApply(structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: mock.Job("db")})
	require.NoError(t, err)
	db, err := s.State().JobByID(nil, "default", "db")
	require.NoError(t, err)
	other := mock.Alloc(db, "node-3")
	_, _, err = s.raftApply(structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{Job: db, AllocsUpdated: []*structs.Allocation{other}})
	require.NoError(t, err)
	_, err = acquire(aclOf(other))
	require.ErrorIs(t, err, structs.ErrPermissionDenied)
}

// TestVariablesKeyRotation: after a rotation new writes use the new key,
// older variables still decrypt with theirs, and a key that still
// encrypts a variable cannot be removed.
func TestVariablesKeyRotation(t *testing.T) {
	s := newVariablesServer(t, &fakeClock{t: time.Now()})
	mgmt := acl.ManagementACL()
	_, err := set(s, mgmt, "old", map[string]string{"k": "1"})
	require.NoError(t, err)
	oldKey, err := s.State().ActiveRootKey(nil)
	require.NoError(t, err)
	newKey, _, err := s.RotateRootKey(nil)
	require.NoError(t, err)
	_, err = set(s, mgmt, "new", map[string]string{"k": "2"})
	require.NoError(t, err)
	stored, err := s.State().VariableByPath(nil, "default", "new")
	require.NoError(t, err)
	require.Equal(t, newKey.KeyID, stored.KeyID)
	v, _, err := s.ReadVariable(mgmt, nil, s.State().Snapshot(), "default", "old")
	require.NoError(t, err)
	require.Equal(t, "1", v.Items["k"])
	_, err = s.DeleteRootKey(nil, oldKey.KeyID)
	require.ErrorContains(t, err, "root key in use, cannot delete")
	_, _, err = s.WriteVariable(mgmt, &VariableWrite{Op: structs.VarOpDelete, Path: "old"})
	require.NoError(t, err)
	_, err = s.DeleteRootKey(nil, oldKey.KeyID)
	require.NoError(t, err, "free once no variable uses it")

	// A ciphertext moved to another path does not decrypt there.
	moved := stored.Copy()
	moved.Path = "elsewhere"
	_, err = s.varCipher.decrypt(s.State().Snapshot(), moved)
	require.ErrorContains(t, err, "decrypt")
}
