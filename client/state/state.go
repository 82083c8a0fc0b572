package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/drover-project/drover/client/allocrunner/health"
	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/nomad/structs"
)

// ErrClosed is returned by every method after Close.
var ErrClosed = errors.New("state: database is closed")

var (
	bucketNode   = []byte("node")
	bucketAllocs = []byte("allocs")

	keyIdentity = []byte("identity")
	keyAlloc    = []byte("alloc")
	keyHealth   = []byte("health")
)

const (
	prefixHandle = "handle/"
	prefixState  = "state/"
	prefixIdent  = "identities/"
)

// NodeIdentity is the client's node ID and secret, created on first start.
type NodeIdentity struct {
	ID       string
	SecretID string
}

// DB is the client's state database. Create it with Open.
type DB struct {
	bdb *bolt.DB
}

// FileName is the database path relative to the client's state dir
// (<data_dir>/client).
const FileName = "state.db"

// Open opens (creating it and its directory when missing) the database at
// path. The file is locked: a second Open of the same path by another
// process fails after a second.
func Open(path string) (*DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("state: creating dir for %s: %w", path, err)
	}
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, fmt.Errorf("state: opening %s: %w", path, err)
	}
	err = bdb.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketNode, bucketAllocs, bucketImages} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		_ = bdb.Close()
		return nil, fmt.Errorf("state: initializing %s: %w", path, err)
	}
	return &DB{bdb: bdb}, nil
}

// Close closes the database; later calls return ErrClosed.
func (db *DB) Close() error {
	if err := db.bdb.Close(); err != nil {
		return fmt.Errorf("state: closing: %w", err)
	}
	return nil
}

// Path returns the database file path.
func (db *DB) Path() string { return db.bdb.Path() }

func (db *DB) update(fn func(tx *bolt.Tx) error) error {
	err := db.bdb.Update(fn)
	if errors.Is(err, bolt.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}

func (db *DB) view(fn func(tx *bolt.Tx) error) error {
	err := db.bdb.View(fn)
	if errors.Is(err, bolt.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}

// NodeIdentity returns the stored identity, or nil when none was stored.
func (db *DB) NodeIdentity() (*NodeIdentity, error) {
	var id *NodeIdentity
	err := db.view(func(tx *bolt.Tx) error {
		raw := tx.Bucket(bucketNode).Get(keyIdentity)
		if raw == nil {
			return nil
		}
		id = new(NodeIdentity)
		return json.Unmarshal(raw, id)
	})
	if err != nil {
		return nil, fmt.Errorf("state: reading node identity: %w", err)
	}
	return id, nil
}

// PutNodeIdentity stores the node identity.
func (db *DB) PutNodeIdentity(id *NodeIdentity) error {
	if id == nil || id.ID == "" || id.SecretID == "" {
		return errors.New("state: node identity needs an ID and a SecretID")
	}
	return db.put(func(tx *bolt.Tx) (*bolt.Bucket, error) { return tx.Bucket(bucketNode), nil }, keyIdentity, id, "node identity")
}

// allocBucket returns the bucket of allocID, creating it when create is set;
// it returns nil when it does not exist and create is false.
func allocBucket(tx *bolt.Tx, allocID string, create bool) (*bolt.Bucket, error) {
	if allocID == "" {
		return nil, errors.New("empty alloc ID")
	}
	root := tx.Bucket(bucketAllocs)
	if create {
		return root.CreateBucketIfNotExists([]byte(allocID))
	}
	return root.Bucket([]byte(allocID)), nil
}

// put JSON-encodes v under key in the bucket bucketFn returns.
func (db *DB) put(bucketFn func(tx *bolt.Tx) (*bolt.Bucket, error), key []byte, v any, what string) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("state: encoding %s: %w", what, err)
	}
	err = db.update(func(tx *bolt.Tx) error {
		b, err := bucketFn(tx)
		if err != nil {
			return err
		}
		return b.Put(key, raw)
	})
	if err != nil {
		return fmt.Errorf("state: writing %s: %w", what, err)
	}
	return nil
}

// getAllocKey decodes key of allocID's bucket into v; found is false when
// the bucket or the key is missing.
func (db *DB) getAllocKey(allocID string, key []byte, v any, what string) (found bool, err error) {
	err = db.view(func(tx *bolt.Tx) error {
		b, err := allocBucket(tx, allocID, false)
		if err != nil || b == nil {
			return err
		}
		raw := b.Get(key)
		if raw == nil {
			return nil
		}
		found = true
		return json.Unmarshal(raw, v)
	})
	if err != nil {
		return false, fmt.Errorf("state: reading %s: %w", what, err)
	}
	return found, nil
}

func (db *DB) putAllocKey(allocID string, key []byte, v any, what string) error {
	return db.put(func(tx *bolt.Tx) (*bolt.Bucket, error) { return allocBucket(tx, allocID, true) }, key, v, what)
}

// PutAlloc stores the allocation the client runs (with its Job).
func (db *DB) PutAlloc(a *structs.Allocation) error {
	if a == nil {
		return errors.New("state: nil allocation")
	}
	return db.putAllocKey(a.ID, keyAlloc, a, "alloc "+a.ID)
}

// Alloc returns the stored allocation, or nil when there is none.
func (db *DB) Alloc(allocID string) (*structs.Allocation, error) {
	a := new(structs.Allocation)
	found, err := db.getAllocKey(allocID, keyAlloc, a, "alloc "+allocID)
	if err != nil || !found {
		return nil, err
	}
	return a, nil
}

// Allocs returns every stored allocation, sorted by ID. An allocation bucket
// without an allocation record (task state written after the record was
// lost) is skipped; a record that fails to decode is reported in errs and
// skipped, so one corrupt record does not stop a client from restoring the
// others.
func (db *DB) Allocs() (allocs []*structs.Allocation, errs []error, err error) {
	err = db.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketAllocs).ForEachBucket(func(k []byte) error {
			raw := tx.Bucket(bucketAllocs).Bucket(k).Get(keyAlloc)
			if raw == nil {
				return nil
			}
			a := new(structs.Allocation)
			if err := json.Unmarshal(raw, a); err != nil {
				errs = append(errs, fmt.Errorf("state: decoding alloc %s: %w", k, err))
				return nil
			}
			allocs = append(allocs, a)
			return nil
		})
	})
	if err != nil {
		return nil, nil, fmt.Errorf("state: listing allocs: %w", err)
	}
	sort.Slice(allocs, func(i, j int) bool { return allocs[i].ID < allocs[j].ID })
	return allocs, errs, nil
}

// AllocIDs returns the IDs of every alloc bucket (with or without an
// allocation record), sorted.
func (db *DB) AllocIDs() ([]string, error) {
	var ids []string
	err := db.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketAllocs).ForEachBucket(func(k []byte) error {
			ids = append(ids, string(k))
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("state: listing allocs: %w", err)
	}
	return ids, nil
}

// PutTaskHandle stores the driver handle of a running task; a nil handle
// deletes the stored one.
func (db *DB) PutTaskHandle(allocID, task string, h *drivers.TaskHandle) error {
	key, what := []byte(prefixHandle+task), "task handle "+allocID+"/"+task
	if h == nil {
		return db.deleteAllocKey(allocID, key, what)
	}
	return db.putAllocKey(allocID, key, h, what)
}

// deleteAllocKey deletes key of allocID's bucket; missing is fine.
func (db *DB) deleteAllocKey(allocID string, key []byte, what string) error {
	err := db.update(func(tx *bolt.Tx) error {
		b, err := allocBucket(tx, allocID, false)
		if err != nil || b == nil {
			return err
		}
		return b.Delete(key)
	})
	if err != nil {
		return fmt.Errorf("state: deleting %s: %w", what, err)
	}
	return nil
}

// TaskHandle returns a task's driver handle, or nil when none was stored.
// GetTaskHandle is the same, for the alloc runner's StateDB interface.
func (db *DB) TaskHandle(allocID, task string) (*drivers.TaskHandle, error) {
	h := new(drivers.TaskHandle)
	found, err := db.getAllocKey(allocID, []byte(prefixHandle+task), h, "task handle "+allocID+"/"+task)
	if err != nil || !found {
		return nil, err
	}
	return h, nil
}

// GetTaskHandle is TaskHandle (alloc runner StateDB interface).
func (db *DB) GetTaskHandle(allocID, task string) (*drivers.TaskHandle, error) {
	return db.TaskHandle(allocID, task)
}

// PutTaskIdentities stores a task's renewed workload identities.
func (db *DB) PutTaskIdentities(allocID, task string, tokens map[string]string) error {
	return db.putAllocKey(allocID, []byte(prefixIdent+task), tokens, "task identities "+allocID+"/"+task)
}

// GetTaskIdentities returns a task's renewed workload identities, or nil.
func (db *DB) GetTaskIdentities(allocID, task string) (map[string]string, error) {
	var out map[string]string
	_, err := db.getAllocKey(allocID, []byte(prefixIdent+task), &out, "task identities "+allocID+"/"+task)
	return out, err
}

// PutTaskState stores a task's state; a nil state deletes the stored one.
func (db *DB) PutTaskState(allocID, task string, st *structs.TaskState) error {
	key, what := []byte(prefixState+task), "task state "+allocID+"/"+task
	if st == nil {
		return db.deleteAllocKey(allocID, key, what)
	}
	return db.putAllocKey(allocID, key, st, what)
}

// TaskState returns a task's state, or nil when none was stored.
func (db *DB) TaskState(allocID, task string) (*structs.TaskState, error) {
	st := new(structs.TaskState)
	found, err := db.getAllocKey(allocID, []byte(prefixState+task), st, "task state "+allocID+"/"+task)
	if err != nil || !found {
		return nil, err
	}
	return st, nil
}

// GetTaskState is TaskState (alloc runner StateDB interface).
func (db *DB) GetTaskState(allocID, task string) (*structs.TaskState, error) {
	return db.TaskState(allocID, task)
}

// TaskStates returns every stored task state of allocID by task name.
func (db *DB) TaskStates(allocID string) (map[string]*structs.TaskState, error) {
	out := map[string]*structs.TaskState{}
	err := db.view(func(tx *bolt.Tx) error {
		b, err := allocBucket(tx, allocID, false)
		if err != nil || b == nil {
			return err
		}
		c := b.Cursor()
		for k, v := c.Seek([]byte(prefixState)); k != nil && strings.HasPrefix(string(k), prefixState); k, v = c.Next() {
			st := new(structs.TaskState)
			if err := json.Unmarshal(v, st); err != nil {
				return fmt.Errorf("decoding %s: %w", k, err)
			}
			out[strings.TrimPrefix(string(k), prefixState)] = st
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("state: reading task states of %s: %w", allocID, err)
	}
	return out, nil
}

// PutDeploymentHealth stores the alloc runner's deployment health record
// of allocID; nil deletes it.
func (db *DB) PutDeploymentHealth(allocID string, r *health.Record) error {
	what := "deployment health of " + allocID
	if r == nil {
		return db.deleteAllocKey(allocID, keyHealth, what)
	}
	return db.putAllocKey(allocID, keyHealth, r, what)
}

// GetDeploymentHealth returns the stored deployment health record of
// allocID, or nil.
func (db *DB) GetDeploymentHealth(allocID string) (*health.Record, error) {
	r := new(health.Record)
	found, err := db.getAllocKey(allocID, keyHealth, r, "deployment health of "+allocID)
	if err != nil || !found {
		return nil, err
	}
	return r, nil
}

// DeleteAlloc removes everything stored for allocID; a missing alloc is not
// an error.
func (db *DB) DeleteAlloc(allocID string) error {
	err := db.update(func(tx *bolt.Tx) error {
		if allocID == "" {
			return errors.New("empty alloc ID")
		}
		err := tx.Bucket(bucketAllocs).DeleteBucket([]byte(allocID))
		if errors.Is(err, bolt.ErrBucketNotFound) {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("state: deleting alloc %s: %w", allocID, err)
	}
	return nil
}

// keyDynamicMeta holds the node's dynamic metadata (set through the API).
var keyDynamicMeta = []byte("dynamic_meta")

// DynamicNodeMeta returns the node's dynamic metadata: a nil value removes
// the static key of that name. It is empty when none was stored.
func (db *DB) DynamicNodeMeta() (map[string]*string, error) {
	out := map[string]*string{}
	err := db.view(func(tx *bolt.Tx) error {
		raw := tx.Bucket(bucketNode).Get(keyDynamicMeta)
		if raw == nil {
			return nil
		}
		return json.Unmarshal(raw, &out)
	})
	if err != nil {
		return nil, fmt.Errorf("state: reading dynamic node metadata: %w", err)
	}
	return out, nil
}

// PutDynamicNodeMeta stores the node's dynamic metadata.
func (db *DB) PutDynamicNodeMeta(meta map[string]*string) error {
	return db.put(func(tx *bolt.Tx) (*bolt.Bucket, error) { return tx.Bucket(bucketNode), nil }, keyDynamicMeta, meta, "dynamic node metadata")
}
