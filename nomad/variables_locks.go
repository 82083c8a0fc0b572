package nomad

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/drover-project/drover/nomad/structs"
)

// lockKey names a variable.
type lockKey struct{ namespace, path string }

// lockLease is the leader's view of one held lock: it stays held until
// deadline (the last acquire or renew plus its TTL); once the deadline has
// passed it cannot be renewed, and deadline+delay later the leader releases
// it, so that no other holder gets it during the lock delay.
type lockLease struct {
	id       string
	deadline time.Time
	delay    time.Duration
	// expired: due returned it and the leader releases it; the holder
	// can no longer use or renew it, whatever the times say.
	expired bool
}

// lockLeases holds the leases of the locks the leader knows. Every method
// takes the time as a parameter; only runVariableLocks reads the clock.
//
// Leases are the leader's of this term only: they are forgotten when
// leadership is lost (reset), and until rebuild has matched them against
// the state of a new term every lock the state holds counts as live and
// renewable. A lease left from an earlier term (or recorded by a write
// still in flight when leadership was lost) would otherwise name a lock
// another leader has since released and granted again, and refuse its new
// holder.
type lockLeases struct {
	mu      sync.Mutex
	leases  map[lockKey]lockLease
	rebuilt bool          // rebuild has run since the last reset
	wake    chan struct{} // poked when the earliest release time may have moved
}

func newLockLeases() *lockLeases {
	return &lockLeases{leases: map[lockKey]lockLease{}, wake: make(chan struct{}, 1)}
}

func (l *lockLeases) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// start records a lease for lock of k from now.
func (l *lockLeases) start(k lockKey, lock *structs.VariableLock, now time.Time) {
	l.mu.Lock()
	l.leases[k] = lockLease{id: lock.ID, deadline: now.Add(lock.TTL), delay: lock.LockDelay}
	l.mu.Unlock()
	l.poke()
}

// renew extends the lease of lock id on k by ttl from now. It fails when
// the leader knows no such lease or its deadline has passed.
func (l *lockLeases) renew(k lockKey, id string, ttl time.Duration, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.rebuilt {
		return true // the caller found the lock held by id; rebuild gives it a full TTL
	}
	le, ok := l.leases[k]
	if !ok || le.id != id || le.expired || now.After(le.deadline) {
		return false
	}
	le.deadline = now.Add(ttl)
	l.leases[k] = le
	return true
}

// live reports whether lock id on k is held and not past its deadline.
// A lock the leader has no lease for (none recorded), or any lock before
// rebuild, is live: it was acquired before this leader took office and
// rebuild adds it.
func (l *lockLeases) live(k lockKey, id string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.rebuilt {
		return true
	}
	le, ok := l.leases[k]
	return !ok || (le.id == id && !le.expired && !now.After(le.deadline))
}

// reset forgets every lease: leadership was lost.
func (l *lockLeases) reset() {
	l.mu.Lock()
	l.leases, l.rebuilt = map[lockKey]lockLease{}, false
	l.mu.Unlock()
	l.poke()
}

// remove forgets the lease of k.
func (l *lockLeases) remove(k lockKey) {
	l.mu.Lock()
	delete(l.leases, k)
	l.mu.Unlock()
}

// dueLock is a lock whose lease and delay are over.
type dueLock struct {
	key lockKey
	id  string
}

// due marks expired and returns the leases whose deadline plus delay is
// not after now, in key order (none before rebuild). Each stays, neither
// live nor renewable, until released (its release applied) or retry (it
// failed): without a lease a lock would count as live (see live) while it
// is being released.
func (l *lockLeases) due(now time.Time) []dueLock {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.rebuilt {
		return nil // nothing recorded before rebuild is this term's
	}
	var out []dueLock
	for k, le := range l.leases {
		if !now.Before(le.deadline.Add(le.delay)) {
			out = append(out, dueLock{key: k, id: le.id})
			le.expired = true
			l.leases[k] = le
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].key.namespace != out[j].key.namespace {
			return out[i].key.namespace < out[j].key.namespace
		}
		return out[i].key.path < out[j].key.path
	})
	return out
}

// retry schedules the release of d again, lockRetry after now; the lock
// stays expired meanwhile.
func (l *lockLeases) retry(d dueLock, now time.Time) {
	l.mu.Lock()
	l.leases[d.key] = lockLease{id: d.id, deadline: now, delay: lockRetry, expired: true}
	l.mu.Unlock()
}

// released forgets the lease of d once its release applied (or found the
// lock gone), unless a newer holder's lease replaced it meanwhile.
func (l *lockLeases) released(d dueLock) {
	l.mu.Lock()
	if le, ok := l.leases[d.key]; ok && le.id == d.id {
		delete(l.leases, d.key)
	}
	l.mu.Unlock()
}

// next returns the earliest release time, and false when no lease is held.
func (l *lockLeases) next() (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var at time.Time
	for _, le := range l.leases {
		if t := le.deadline.Add(le.delay); at.IsZero() || t.Before(at) {
			at = t
		}
	}
	return at, !at.IsZero()
}

// rebuild makes the leases match the locks in state: locks without a lease
// get a full TTL from now (a new leader cannot know when they were last
// renewed), leases of locks no longer held are dropped.
func (l *lockLeases) rebuild(vars []*structs.VariableEncrypted, now time.Time) {
	l.mu.Lock()
	held := map[lockKey]bool{}
	for _, v := range vars {
		if v.Lock == nil {
			continue
		}
		k := lockKey{v.Namespace, v.Path}
		held[k] = true
		if le, ok := l.leases[k]; ok && le.id == v.Lock.ID {
			continue
		}
		l.leases[k] = lockLease{id: v.Lock.ID, deadline: now.Add(v.Lock.TTL), delay: v.Lock.LockDelay}
	}
	for k := range l.leases {
		if !held[k] {
			delete(l.leases, k)
		}
	}
	l.rebuilt = true
	l.mu.Unlock()
	l.poke()
}

// lockRetry is the pause before retrying a failed release of an expired lock.
const lockRetry = time.Second

// runVariableLocks releases locks whose TTL ran out without a renewal, a
// lock delay after the deadline. It runs on the leader until ctx ends.
func (s *Server) runVariableLocks(ctx context.Context) {
	vars, err := s.State().Variables(nil, "*", "")
	if err != nil {
		s.logger.Error("variable locks: read state", "error", err)
	}
	s.varLocks.rebuild(vars, s.now())
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		for _, d := range s.varLocks.due(s.now()) {
			if err := s.expireVariableLock(d); err != nil {
				s.logger.Warn("variable lock: release after TTL failed; retrying",
					"namespace", d.key.namespace, "path", d.key.path, "error", err)
				s.varLocks.retry(d, s.now())
				continue
			}
			s.varLocks.released(d)
		}
		wait := time.Hour
		if at, ok := s.varLocks.next(); ok {
			wait = max(at.Sub(s.now()), 0)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-s.varLocks.wake:
			timer.Stop() // Go 1.23+: no stale tick is delivered after Stop
		case <-timer.C:
		}
	}
}

// expireVariableLock releases lock d (if it still holds the variable).
func (s *Server) expireVariableLock(d dueLock) error {
	cur, err := s.State().VariableByPath(nil, d.key.namespace, d.key.path)
	if err != nil || cur == nil || cur.Lock == nil || cur.Lock.ID != d.id {
		return err
	}
	v := &structs.VariableEncrypted{VariableMeta: structs.VariableMeta{
		Namespace: d.key.namespace, Path: d.key.path, ModifyTime: s.now().UnixNano(),
	}}
	_, _, err = s.applyVariable(&structs.VariablesApplyRequest{Op: structs.VarOpLockRelease, Var: v, LockID: d.id})
	if err == nil {
		s.logger.Info("variable lock expired and released", "namespace", d.key.namespace, "path", d.key.path)
	}
	return err
}
