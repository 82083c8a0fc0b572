package fsm

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// TestApplyGC: a GC entry deletes the collectable objects it names through
// the state store, and the snapshot no longer carries them.
func TestApplyGC(t *testing.T) {
	f := newFSM()
	node := testNode()
	mustApply(t, f, 1, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node})
	job := testJob("web")
	mustApply(t, f, 2, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job})
	stored, err := f.State().JobByID(nil, job.Namespace, job.ID)
	require.NoError(t, err)
	done, live := testAlloc(stored, node.ID), testAlloc(stored, node.ID)
	require.NoError(t, f.State().UpsertAllocs(3, []*structs.Allocation{done, live}))
	mustApply(t, f, 4, structs.AllocClientUpdateRequestType, &structs.AllocClientUpdateRequest{Allocs: []*structs.Allocation{
		{ID: done.ID, ClientStatus: structs.AllocClientStatusComplete},
		{ID: live.ID, ClientStatus: structs.AllocClientStatusRunning},
	}})

	mustApply(t, f, 5, structs.GCRequestType, &structs.GCRequest{Allocs: []string{done.ID, live.ID}})

	a, err := f.State().AllocByID(nil, done.ID)
	require.NoError(t, err)
	require.Nil(t, a)
	a, err = f.State().AllocByID(nil, live.ID)
	require.NoError(t, err)
	require.NotNil(t, a, "the running allocation is not deleted")
	require.Equal(t, uint64(5), f.State().Index("allocs"))
}
