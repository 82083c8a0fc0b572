package allocrunner

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/drivers/mock"
	"github.com/drover-project/drover/nomad/structs"
)

// noRestarts fails a task at its first failure.
var noRestarts = &structs.RestartPolicy{Attempts: 0, Interval: time.Hour, Delay: time.Second, Mode: "fail"}

func newJob(jobType string, tasks ...*structs.Task) *structs.Job {
	return &structs.Job{
		ID: "web", Name: "web", Region: "global", Namespace: "default", Type: jobType, Version: 1,
		TaskGroups: []*structs.TaskGroup{{Name: "g", Count: 1, Tasks: tasks, RestartPolicy: noRestarts}},
	}
}

func mockTask(name string, config map[string]any) *structs.Task {
	return &structs.Task{
		Name: name, Driver: mock.Name, Config: config, KillTimeout: time.Second,
		Resources: &structs.Resources{CPU: 100, MemoryMB: 64},
	}
}

func newAlloc(job *structs.Job) *structs.Allocation {
	return &structs.Allocation{
		ID:               uuid.NewString(),
		Namespace:        job.Namespace,
		Name:             job.ID + ".g[0]",
		NodeID:           "node-1",
		JobID:            job.ID,
		JobVersion:       job.Version,
		Job:              job,
		TaskGroup:        "g",
		DesiredStatus:    structs.AllocDesiredStatusRun,
		ClientStatus:     structs.AllocClientStatusPending,
		AllocModifyIndex: 10,
	}
}

// harness holds what the runners of a test share: one mock driver (one
// client process), a MemDB, an alloc root and the published updates.
type harness struct {
	t      *testing.T
	root   string
	db     *MemDB
	driver *mock.Driver
	node   *structs.Node

	mu      sync.Mutex
	updates map[string][]*structs.Allocation // by alloc ID
}

func newHarness(t *testing.T) *harness {
	return &harness{
		t: t, root: t.TempDir(), db: NewMemDB(), driver: mock.New(nil),
		node: &structs.Node{
			ID: "node-1", Name: "node-1", Datacenter: "dc1",
			Attributes: map[string]string{"unique.network.ip-address": "10.0.0.1", "kernel.name": "linux"},
			Meta:       map[string]string{"rack": "r1"},
		},
		updates: map[string][]*structs.Allocation{},
	}
}

func (h *harness) config(alloc *structs.Allocation) *Config {
	return &Config{
		Alloc:        alloc,
		Node:         h.node,
		AllocRootDir: h.root,
		Drivers:      drivers.Catalog{mock.Name: h.driver},
		StateDB:      h.db,
		Logger:       hclog.NewNullLogger(),
		StateUpdater: func(a *structs.Allocation) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.updates[a.ID] = append(h.updates[a.ID], a)
		},
	}
}

func (h *harness) runner(alloc *structs.Allocation, mutate ...func(*Config)) *AllocRunner {
	cfg := h.config(alloc)
	for _, m := range mutate {
		m(cfg)
	}
	ar, err := NewAllocRunner(cfg)
	require.NoError(h.t, err)
	// On failure too, leave nothing running in the synctest bubble.
	h.t.Cleanup(ar.Destroy)
	return ar
}

// published returns every update the runner of allocID published.
func (h *harness) published(allocID string) []*structs.Allocation {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*structs.Allocation(nil), h.updates[allocID]...)
}

func (h *harness) lastPublished(allocID string) *structs.Allocation {
	all := h.published(allocID)
	require.NotEmpty(h.t, all)
	return all[len(all)-1]
}

// taskState returns the state of task in the runner's alloc.
func taskState(t *testing.T, ar *AllocRunner, task string) *structs.TaskState {
	t.Helper()
	st := ar.Alloc().TaskStates[task]
	require.NotNil(t, st, "task %s", task)
	return st
}

func eventTypes(st *structs.TaskState) []string {
	out := make([]string, len(st.Events))
	for i, e := range st.Events {
		out[i] = e.Type
	}
	return out
}

// findEvent returns the last event of type typ, or nil.
func findEvent(st *structs.TaskState, typ string) *structs.TaskEvent {
	for i := len(st.Events) - 1; i >= 0; i-- {
		if st.Events[i].Type == typ {
			return st.Events[i]
		}
	}
	return nil
}

// recordingPrev wraps a PrevAllocController and records when it was used.
type recordingPrev struct {
	inner PrevAllocController

	mu       sync.Mutex
	calls    []string
	stopAt   time.Time
	waitedAt time.Time
	onStop   func() // called before the inner Stop, or nil
}

func (r *recordingPrev) Stop() {
	if r.onStop != nil {
		r.onStop()
	}
	r.mu.Lock()
	r.calls = append(r.calls, "stop")
	r.stopAt = time.Now()
	r.mu.Unlock()
	r.inner.Stop()
}

func (r *recordingPrev) Wait(ctx context.Context) error {
	err := r.inner.Wait(ctx)
	r.mu.Lock()
	r.calls = append(r.calls, "waited")
	r.waitedAt = time.Now()
	r.mu.Unlock()
	return err
}

func (r *recordingPrev) Calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// driverState reports the mock driver's view of a task.
func driverState(t *testing.T, d *mock.Driver, taskID string) string {
	t.Helper()
	st, err := d.InspectTask(taskID)
	if err != nil {
		return "gone"
	}
	return st.State
}
