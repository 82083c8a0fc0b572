package allocrunner

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/drover-project/drover/client/allocrunner/health"
	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/nomad/structs"
)

// MemDB is an in-memory StateDB for tests and for clients without a data
// dir. Values go through JSON, like the client's bbolt DB, so what a test
// restores is what a real client would. It is safe for concurrent use.
type MemDB struct {
	mu      sync.Mutex
	handles map[string][]byte // "<alloc>/<task>" → JSON
	states  map[string][]byte
	health  map[string][]byte // "<alloc>/" → JSON
}

var (
	_ StateDB  = (*MemDB)(nil)
	_ HealthDB = (*MemDB)(nil)
)

// NewMemDB returns an empty MemDB.
func NewMemDB() *MemDB {
	return &MemDB{handles: map[string][]byte{}, states: map[string][]byte{}, health: map[string][]byte{}}
}

func memKey(allocID, task string) string { return allocID + "/" + task }

// PutTaskHandle stores h; nil clears it.
func (m *MemDB) PutTaskHandle(allocID, task string, h *drivers.TaskHandle) error {
	return m.put(m.handles, memKey(allocID, task), h)
}

// GetTaskHandle returns the stored handle or nil.
func (m *MemDB) GetTaskHandle(allocID, task string) (*drivers.TaskHandle, error) {
	var h *drivers.TaskHandle
	return h, m.get(m.handles, memKey(allocID, task), &h)
}

// PutTaskState stores st; nil clears it.
func (m *MemDB) PutTaskState(allocID, task string, st *structs.TaskState) error {
	return m.put(m.states, memKey(allocID, task), st)
}

// GetTaskState returns the stored state or nil.
func (m *MemDB) GetTaskState(allocID, task string) (*structs.TaskState, error) {
	var st *structs.TaskState
	return st, m.get(m.states, memKey(allocID, task), &st)
}

// PutDeploymentHealth stores r; nil clears it.
func (m *MemDB) PutDeploymentHealth(allocID string, r *health.Record) error {
	return m.put(m.health, memKey(allocID, ""), r)
}

// GetDeploymentHealth returns the stored record or nil.
func (m *MemDB) GetDeploymentHealth(allocID string) (*health.Record, error) {
	var r *health.Record
	return r, m.get(m.health, memKey(allocID, ""), &r)
}

// DeleteAlloc removes everything stored for allocID.
func (m *MemDB) DeleteAlloc(allocID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	prefix := allocID + "/"
	for _, tbl := range []map[string][]byte{m.handles, m.states, m.health} {
		for k := range tbl {
			if strings.HasPrefix(k, prefix) {
				delete(tbl, k)
			}
		}
	}
	return nil
}

// Len returns how many handles, states and health records are stored.
func (m *MemDB) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.handles) + len(m.states) + len(m.health)
}

func (m *MemDB) put(tbl map[string][]byte, key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("memdb: encoding %s: %w", key, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if string(raw) == "null" {
		delete(tbl, key)
		return nil
	}
	tbl[key] = raw
	return nil
}

func (m *MemDB) get(tbl map[string][]byte, key string, v any) error {
	m.mu.Lock()
	raw, ok := tbl[key]
	m.mu.Unlock()
	if !ok {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("memdb: decoding %s: %w", key, err)
	}
	return nil
}
