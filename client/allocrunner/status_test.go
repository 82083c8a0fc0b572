package allocrunner

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

func ts(state string, failed bool) *structs.TaskState {
	return &structs.TaskState{State: state, Failed: failed}
}

var (
	pending  = ts("pending", false)
	running  = ts("running", false)
	complete = ts("dead", false)
	failed   = ts("dead", true)
)

func TestClientStatus(t *testing.T) {
	for _, tc := range []struct {
		name   string
		states map[string]*structs.TaskState
		want   string
		desc   string
	}{
		{"no tasks", nil, structs.AllocClientStatusPending, DescPending},
		{"nothing started", map[string]*structs.TaskState{"a": pending, "b": pending}, structs.AllocClientStatusPending, DescPending},
		{"nil state is pending", map[string]*structs.TaskState{"a": nil}, structs.AllocClientStatusPending, DescPending},
		{"all running", map[string]*structs.TaskState{"a": running, "b": running}, structs.AllocClientStatusRunning, DescRunning},
		{"one running one pending", map[string]*structs.TaskState{"a": running, "b": pending}, structs.AllocClientStatusRunning, DescRunning},
		{"one running one complete", map[string]*structs.TaskState{"a": running, "b": complete}, structs.AllocClientStatusRunning, DescRunning},
		{"restarting is pending", map[string]*structs.TaskState{"a": pending, "b": complete}, structs.AllocClientStatusPending, DescPending},
		{"all complete", map[string]*structs.TaskState{"a": complete, "b": complete}, structs.AllocClientStatusComplete, DescComplete},
		{"one failed wins over running", map[string]*structs.TaskState{"a": failed, "b": running}, structs.AllocClientStatusFailed, DescFailed},
		{"one failed one complete", map[string]*structs.TaskState{"a": failed, "b": complete}, structs.AllocClientStatusFailed, DescFailed},
		{"unknown state is pending", map[string]*structs.TaskState{"a": ts("", false)}, structs.AllocClientStatusPending, DescPending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, desc := ClientStatus(tc.states)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.desc, desc)
		})
	}
}

func TestMemDBRoundTrip(t *testing.T) {
	db := NewMemDB()
	h, err := db.GetTaskHandle("a", "web")
	require.NoError(t, err)
	require.Nil(t, h)
	st := &structs.TaskState{State: "running", Events: []*structs.TaskEvent{{Type: "Started", Details: map[string]string{"k": "v"}}}}
	require.NoError(t, db.PutTaskState("a", "web", st))
	require.NoError(t, db.PutTaskState("ab", "web", st))
	got, err := db.GetTaskState("a", "web")
	require.NoError(t, err)
	require.Equal(t, st, got)
	require.NotSame(t, st, got)
	require.NoError(t, db.DeleteAlloc("a"))
	got, err = db.GetTaskState("a", "web")
	require.NoError(t, err)
	require.Nil(t, got)
	require.Equal(t, 1, db.Len(), "alloc ab is another alloc")
}
