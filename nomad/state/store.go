package state

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/structs"
)

// Sentinel errors. Callers test them with errors.Is; the HTTP layer maps
// ErrNotFound to 404 and ErrConflict to 400/409.
var (
	// ErrNotFound: the object a write refers to does not exist.
	ErrNotFound = errors.New("state: not found")
	// ErrConflict: the write contradicts the stored state (for example
	// promoting a terminal deployment).
	ErrConflict = errors.New("state: conflict")
)

// StateStore is the server's in-memory database. Reads see the latest
// committed state; writes come only from the FSM, each at a raft index.
//
// Objects returned by reads, and objects handed to writes, are owned by the
// store and shared: never mutate them, copy first.
type StateStore struct {
	reader // reads against the current database

	db atomic.Pointer[memdb.MemDB] // swapped by Restore.Commit

	writeMu sync.Mutex // serialises writes and restore commits

	// tracking and changes are guarded by writeMu (changes.go).
	tracking bool
	changes  []Change

	abandonMu sync.Mutex
	abandonCh chan struct{} // guarded by abandonMu; closed when db is replaced
}

// Snapshot is a consistent, read-only view of the store at one moment. The
// scheduler reads only through snapshots.
type Snapshot struct {
	reader
	db atomic.Pointer[memdb.MemDB] // set once
}

// QueryFn is the body of a blocking query. It reads from snap, adds what it
// read to ws (every read method does this), and returns its result with the
// index the result is current at.
type QueryFn func(ws memdb.WatchSet, snap *Snapshot) (result any, index uint64, err error)

// NewStateStore returns an empty store.
func NewStateStore() *StateStore {
	s := &StateStore{abandonCh: make(chan struct{})}
	s.db.Store(newMemDB())
	s.reader = reader{db: &s.db}
	return s
}

// newMemDB returns a database with the store's schema, empty but for the
// default namespace (which a snapshot restore may overwrite).
func newMemDB() *memdb.MemDB {
	db, err := memdb.NewMemDB(dbSchema())
	if err != nil {
		panic(fmt.Sprintf("state: invalid schema: %v", err)) // a programming error
	}
	txn := db.Txn(true)
	if err := txn.Insert(TableNamespaces, defaultNamespace()); err != nil {
		panic(fmt.Sprintf("state: seed default namespace: %v", err))
	}
	txn.Commit()
	return db
}

// Snapshot returns a consistent read-only view of the current state. It is
// cheap (no copy) and stays valid after later writes.
func (s *StateStore) Snapshot() *Snapshot {
	snap := &Snapshot{}
	snap.db.Store(s.db.Load().Snapshot())
	snap.reader = reader{db: &snap.db}
	return snap
}

// AbandonCh returns a channel closed when the store's contents are replaced
// by a snapshot restore. Watchers of the old contents must re-read.
func (s *StateStore) AbandonCh() <-chan struct{} {
	s.abandonMu.Lock()
	defer s.abandonMu.Unlock()
	return s.abandonCh
}

// swap installs db as the store's database and wakes everyone watching the
// old one.
func (s *StateStore) swap(db *memdb.MemDB) {
	s.writeMu.Lock()
	s.db.Store(db)
	s.writeMu.Unlock()

	s.abandonMu.Lock()
	close(s.abandonCh)
	s.abandonCh = make(chan struct{})
	s.abandonMu.Unlock()
}

// BlockingQuery runs fn against a fresh snapshot. When minIndex is 0, or fn's
// index is above minIndex, or minIndex is above the store's latest index (a
// client that saw a higher index before a restart), it answers at once.
// Otherwise it waits until something fn watched changes, or the store is
// restored, or ctx is done, and runs fn again. When ctx ends it returns the
// last result without error, as Nomad's blocking queries do.
//
// The returned index is at least 1, so clients never loop on index 0.
func (s *StateStore) BlockingQuery(ctx context.Context, minIndex uint64, fn QueryFn) (any, uint64, error) {
	for {
		ws := memdb.NewWatchSet()
		ws.Add(s.AbandonCh())
		snap := s.Snapshot()
		res, idx, err := fn(ws, snap)
		if idx < 1 {
			idx = 1
		}
		if err != nil || minIndex == 0 || idx > minIndex || minIndex > max(snap.LatestIndex(), 1) {
			return res, idx, err
		}
		if ctx.Err() != nil || ws.WatchCtx(ctx) != nil {
			return res, idx, nil
		}
	}
}

// reader holds the read methods shared by *StateStore and *Snapshot. Each
// method opens its own read transaction on db.
type reader struct {
	db *atomic.Pointer[memdb.MemDB]
}

// txn opens a read transaction.
func (r reader) txn() *memdb.Txn { return r.db.Load().Txn(false) }

// writeTxn is one write transaction at one raft index. It records the tables
// it touched (their index entries are set on commit) and the jobs whose
// status must be recomputed.
type writeTxn struct {
	*memdb.Txn
	index   uint64
	touched map[string]struct{}
	refresh map[structs.NamespacedID]struct{}
	// jobCounts are the transaction's copies of the allocation counts
	// of the jobs whose allocations it wrote (job_counts.go).
	jobCounts map[structs.NamespacedID]*jobCounts
	// before reads the state the transaction started from, and allocs
	// holds the allocations it wrote (nil: deleted): allocByID answers
	// from them instead of reading through the write transaction, because
	// a memdb read in a write transaction clones the index's radix
	// transaction and drops its cache of writable nodes, and the next
	// insert then copies the whole path again (one read per allocation
	// made a plan's inserts several times slower).
	before *memdb.Txn
	allocs map[string]*structs.Allocation
	// health holds the changes of deployment health counts not yet
	// applied (deployment_health.go).
	health healthDeltas
}

// write runs fn in one write transaction at index and commits it unless fn
// fails; on failure nothing is written.
func (s *StateStore) write(index uint64, fn func(tx *writeTxn) error) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	db := s.db.Load()
	tx := &writeTxn{
		Txn:     db.Txn(true),
		before:  db.Txn(false),
		allocs:  map[string]*structs.Allocation{},
		index:   index,
		touched: map[string]struct{}{},
		refresh: map[structs.NamespacedID]struct{}{},
	}
	defer tx.Abort()
	if s.tracking {
		tx.TrackChanges()
	}
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.finish(); err != nil {
		return err
	}
	if s.tracking {
		s.recordChanges(tx.Changes())
	}
	tx.Commit()
	return nil
}

// insert inserts obj into table and marks the table touched. An
// allocation's job counts follow.
func (tx *writeTxn) insert(table string, obj any) error {
	if a, ok := obj.(*structs.Allocation); ok && table == TableAllocs {
		before, err := tx.allocByID(a.ID)
		if err != nil {
			return err
		}
		return tx.insertAlloc(before, a)
	}
	if err := tx.Insert(table, obj); err != nil {
		return fmt.Errorf("state: insert into %s: %w", table, err)
	}
	tx.touched[table] = struct{}{}
	return nil
}

// insertAlloc inserts a, replacing before (the stored version of a, or nil
// when a is new), and moves its job's counts.
func (tx *writeTxn) insertAlloc(before, a *structs.Allocation) error {
	if err := tx.countAlloc(before, a); err != nil {
		return err
	}
	tx.noteAllocHealth(before, a)
	if err := tx.Insert(TableAllocs, a); err != nil {
		return fmt.Errorf("state: insert into %s: %w", TableAllocs, err)
	}
	tx.allocs[a.ID] = a
	tx.touched[TableAllocs] = struct{}{}
	return nil
}

// expectAllocs sizes tx.allocs for n more allocation writes (a plan's
// placements), so that a large plan does not regrow it again and again.
func (tx *writeTxn) expectAllocs(n int) {
	if len(tx.allocs) == 0 && n > 0 {
		tx.allocs = make(map[string]*structs.Allocation, n)
	}
}

// allocByID returns the allocation id as the transaction has it so far, or
// nil. Every write of an allocation goes through insertAlloc or delete,
// which record it in tx.allocs.
func (tx *writeTxn) allocByID(id string) (*structs.Allocation, error) {
	if a, ok := tx.allocs[id]; ok {
		return a, nil
	}
	return allocByID(tx.before, nil, id)
}

// delete deletes obj from table and marks the table touched. An
// allocation's job counts follow.
func (tx *writeTxn) delete(table string, obj any) error {
	if a, ok := obj.(*structs.Allocation); ok && table == TableAllocs {
		before, err := tx.allocByID(a.ID)
		if err != nil {
			return err
		}
		if before != nil {
			if err := tx.countAlloc(before, nil); err != nil {
				return err
			}
			tx.noteAllocHealth(before, nil)
		}
	}
	if err := tx.Delete(table, obj); err != nil {
		return fmt.Errorf("state: delete from %s: %w", table, err)
	}
	if a, ok := obj.(*structs.Allocation); ok && table == TableAllocs {
		tx.allocs[a.ID] = nil
		tx.touched[IndexAllocDeletes] = struct{}{}
		// A collected allocation's services go with it.
		if err := tx.deleteServicesBy(indexAlloc, a.ID); err != nil {
			return err
		}
	}
	if n, ok := obj.(*structs.Node); ok && table == TableNodes {
		// So do a deleted node's.
		if err := tx.deleteServicesBy(indexNode, n.ID); err != nil {
			return err
		}
	}
	tx.touched[table] = struct{}{}
	return nil
}

// markJob asks for the status of job (ns, id) to be recomputed on commit.
func (tx *writeTxn) markJob(ns, id string) {
	tx.refresh[structs.NamespacedID{Namespace: nsOrDefault(ns), ID: id}] = struct{}{}
}

// finish stores the changed job counts, recomputes the status of marked
// jobs, then records the index of every touched table.
func (tx *writeTxn) finish() error {
	if tx.health.byKey != nil || tx.health.full != nil {
		// Writes that do not apply their health changes themselves
		// (garbage collection, canary flags) still move the counts.
		if err := tx.applyHealthChanges(nil, 0); err != nil {
			return err
		}
	}
	if err := tx.writeJobCounts(); err != nil {
		return err
	}
	ids := make([]structs.NamespacedID, 0, len(tx.refresh))
	for id := range tx.refresh {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		if ids[i].Namespace != ids[j].Namespace {
			return ids[i].Namespace < ids[j].Namespace
		}
		return ids[i].ID < ids[j].ID
	})
	for _, id := range ids {
		if err := tx.refreshJobStatus(id.Namespace, id.ID); err != nil {
			return err
		}
	}
	tables := make([]string, 0, len(tx.touched))
	for t := range tx.touched {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	for _, t := range tables {
		if err := setIndex(tx.Txn, t, tx.index); err != nil {
			return err
		}
	}
	return nil
}

// watch adds ch to ws; ws may be nil.
func watch(ws memdb.WatchSet, ch <-chan struct{}) {
	if ws != nil {
		ws.Add(ch)
	}
}

// nsOrDefault maps the empty namespace to the default one.
func nsOrDefault(ns string) string {
	if ns == "" {
		return structs.DefaultNamespace
	}
	return ns
}

// allNamespaces is the namespace argument that matches every namespace.
const allNamespaces = "*"

// nsMatch reports whether an object in namespace have matches the query
// namespace want ("*" matches all).
func nsMatch(want, have string) bool {
	return want == allNamespaces || nsOrDefault(want) == nsOrDefault(have)
}

// first returns the object at index args of table, watching it.
func first(txn *memdb.Txn, ws memdb.WatchSet, table, index string, args ...any) (any, error) {
	ch, obj, err := txn.FirstWatch(table, index, args...)
	if err != nil {
		return nil, fmt.Errorf("state: lookup in %s: %w", table, err)
	}
	watch(ws, ch)
	return obj, nil
}

// list collects every object at index args of table, in index order,
// watching the range.
func list[T any](txn *memdb.Txn, ws memdb.WatchSet, table, index string, args ...any) ([]T, error) {
	it, err := txn.Get(table, index, args...)
	if err != nil {
		return nil, fmt.Errorf("state: list %s: %w", table, err)
	}
	watch(ws, it.WatchCh())
	out := []T{}
	for raw := it.Next(); raw != nil; raw = it.Next() {
		out = append(out, raw.(T))
	}
	return out, nil
}
