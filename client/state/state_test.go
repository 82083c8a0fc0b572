package state

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/client/allocrunner/health"
	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/nomad/structs"
)

func openTemp(t *testing.T) (*DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "client", FileName)
	db, err := Open(path)
	require.NoError(t, err)
	return db, path
}

func TestNodeIdentity_PersistsAcrossReopen(t *testing.T) {
	db, path := openTemp(t)
	id, err := db.NodeIdentity()
	require.NoError(t, err)
	require.Nil(t, id, "a new database has no identity")

	require.Error(t, db.PutNodeIdentity(&NodeIdentity{ID: "x"}), "a secret is required")
	require.NoError(t, db.PutNodeIdentity(&NodeIdentity{ID: "node-1", SecretID: "secret-1"}))
	require.NoError(t, db.Close())

	db, err = Open(path)
	require.NoError(t, err)
	defer db.Close()
	id, err = db.NodeIdentity()
	require.NoError(t, err)
	require.Equal(t, &NodeIdentity{ID: "node-1", SecretID: "secret-1"}, id)
}

func TestAllocs_RoundTripWithJob(t *testing.T) {
	db, _ := openTemp(t)
	defer db.Close()
	job := &structs.Job{ID: "web", Type: structs.JobTypeSysBatch, TaskGroups: []*structs.TaskGroup{{
		Name:  "g",
		Tasks: []*structs.Task{{Name: "t", Driver: "mock", Config: map[string]any{"run_for": "1s", "exit_code": 3}}},
	}}}
	a := &structs.Allocation{ID: "b-alloc", NodeID: "n", TaskGroup: "g", Job: job, AllocModifyIndex: 7,
		DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning}
	require.NoError(t, db.PutAlloc(a))
	require.NoError(t, db.PutAlloc(&structs.Allocation{ID: "a-alloc"}))
	// A bucket with only a task state and no alloc record is not listed.
	require.NoError(t, db.PutTaskState("c-orphan", "t", &structs.TaskState{State: "dead"}))

	got, err := db.Alloc("b-alloc")
	require.NoError(t, err)
	require.Equal(t, "web", got.Job.ID)
	require.Equal(t, "1s", got.Job.TaskGroups[0].Tasks[0].Config["run_for"])
	require.EqualValues(t, 3, got.Job.TaskGroups[0].Tasks[0].Config["exit_code"])
	require.EqualValues(t, 7, got.AllocModifyIndex)

	missing, err := db.Alloc("nope")
	require.NoError(t, err)
	require.Nil(t, missing)

	all, errs, err := db.Allocs()
	require.NoError(t, err)
	require.Empty(t, errs)
	require.Len(t, all, 2)
	require.Equal(t, []string{"a-alloc", "b-alloc"}, []string{all[0].ID, all[1].ID})

	ids, err := db.AllocIDs()
	require.NoError(t, err)
	require.Equal(t, []string{"a-alloc", "b-alloc", "c-orphan"}, ids)
}

func TestTaskHandlesAndStates(t *testing.T) {
	db, _ := openTemp(t)
	defer db.Close()
	started := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h := &drivers.TaskHandle{Driver: "mock", TaskID: "a1/web", DriverState: []byte(`{"x":1}`), StartedAt: started,
		Config: &drivers.TaskConfig{ID: "a1/web", AllocID: "a1", TaskName: "web", Config: map[string]any{"run_for": "1s"}}}
	require.NoError(t, db.PutTaskHandle("a1", "web", h))
	st := &structs.TaskState{State: "running", StartedAt: started, Events: []*structs.TaskEvent{{Type: "Started", Time: 42}}}
	require.NoError(t, db.PutTaskState("a1", "web", st))
	require.NoError(t, db.PutTaskState("a1", "sidecar", &structs.TaskState{State: "pending"}))

	gotH, err := db.GetTaskHandle("a1", "web")
	require.NoError(t, err)
	require.Equal(t, h.DriverState, gotH.DriverState)
	require.True(t, started.Equal(gotH.StartedAt))
	require.Equal(t, "1s", gotH.Config.Config["run_for"])

	gotS, err := db.GetTaskState("a1", "web")
	require.NoError(t, err)
	require.Equal(t, "running", gotS.State)
	require.Equal(t, "Started", gotS.Events[0].Type)

	all, err := db.TaskStates("a1")
	require.NoError(t, err)
	require.Len(t, all, 2)
	require.Equal(t, "pending", all["sidecar"].State)

	none, err := db.GetTaskHandle("a1", "sidecar")
	require.NoError(t, err)
	require.Nil(t, none)
	none2, err := db.GetTaskState("zz", "web")
	require.NoError(t, err)
	require.Nil(t, none2)

	require.NoError(t, db.PutTaskHandle("a1", "sidecar", nil), "clearing a missing handle is fine")
	require.NoError(t, db.PutTaskHandle("zz", "web", nil), "even in a missing alloc")
	require.NoError(t, db.PutTaskHandle("a1", "web", nil))
	cleared, err := db.GetTaskHandle("a1", "web")
	require.NoError(t, err)
	require.Nil(t, cleared, "a nil handle clears the stored one")
	require.NoError(t, db.PutTaskHandle("a1", "web", h))

	require.NoError(t, db.DeleteAlloc("a1"))
	require.NoError(t, db.DeleteAlloc("a1"), "deleting twice is fine")
	gotH, err = db.GetTaskHandle("a1", "web")
	require.NoError(t, err)
	require.Nil(t, gotH)
	states, err := db.TaskStates("a1")
	require.NoError(t, err)
	require.Empty(t, states)
}

func TestClosed(t *testing.T) {
	db, _ := openTemp(t)
	require.NoError(t, db.Close())
	_, err := db.NodeIdentity()
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, db.PutTaskState("a", "t", &structs.TaskState{}), ErrClosed)
}

func TestDeploymentHealth(t *testing.T) {
	db, path := openTemp(t)
	r, err := db.GetDeploymentHealth("a1")
	require.NoError(t, err)
	require.Nil(t, r)

	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	healthy := true
	want := &health.Record{DeploymentID: "d1", Start: start, Healthy: &healthy, Timestamp: start.Add(time.Minute), Reason: "ok"}
	require.NoError(t, db.PutDeploymentHealth("a1", want))
	require.NoError(t, db.Close())
	db, err = Open(path)
	require.NoError(t, err)
	defer db.Close()
	r, err = db.GetDeploymentHealth("a1")
	require.NoError(t, err)
	require.Equal(t, want, r)
	tasks, err := db.TaskStates("a1")
	require.NoError(t, err)
	require.Empty(t, tasks, "the record is not a task state")

	require.NoError(t, db.PutDeploymentHealth("a1", nil))
	r, err = db.GetDeploymentHealth("a1")
	require.NoError(t, err)
	require.Nil(t, r)

	require.NoError(t, db.PutDeploymentHealth("a1", want))
	require.NoError(t, db.DeleteAlloc("a1"))
	r, err = db.GetDeploymentHealth("a1")
	require.NoError(t, err)
	require.Nil(t, r)
}
