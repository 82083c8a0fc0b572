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

func TestSiblingKill(t *testing.T) {
	for _, tc := range []struct {
		name        string
		states      map[string]*structs.TaskState
		leaders     map[string]bool
		wantReason  string
		wantSibling string
	}{
		{"all running", map[string]*structs.TaskState{"a": running, "b": running}, nil, killNone, ""},
		{"one complete", map[string]*structs.TaskState{"a": complete, "b": running}, nil, killNone, ""},
		{"one failed", map[string]*structs.TaskState{"a": running, "b": failed}, nil, killSiblingDied, "b"},
		{"first failed by name", map[string]*structs.TaskState{"c": failed, "b": failed, "a": running}, nil, killSiblingDied, "b"},
		{"failed while others pending", map[string]*structs.TaskState{"a": pending, "b": failed}, nil, killSiblingDied, "b"},
		{"everything dead: nothing to kill", map[string]*structs.TaskState{"a": complete, "b": failed}, nil, killNone, ""},
		{"leader complete", map[string]*structs.TaskState{"l": complete, "b": running}, map[string]bool{"l": true}, killLeaderDead, "l"},
		{"leader running", map[string]*structs.TaskState{"l": running, "b": complete}, map[string]bool{"l": true}, killNone, ""},
		{"failure beats leader", map[string]*structs.TaskState{"l": complete, "b": failed, "c": running}, map[string]bool{"l": true}, killSiblingDied, "b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, sibling := siblingKill(tc.states, tc.leaders)
			require.Equal(t, tc.wantReason, reason)
			require.Equal(t, tc.wantSibling, sibling)
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
