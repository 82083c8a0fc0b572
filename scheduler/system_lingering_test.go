package scheduler

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// An allocation the server stopped while its client still runs it (its stop
// held for a replacement whose prepare failed) is named as the previous
// allocation of the next placement on its node, so the client stops it
// before starting the new one; a finished one is not.
func TestPlacementNamesLingeringAllocation(t *testing.T) {
	f := newFleet(2, update(1, 0), nil)
	f.old("tg1", 0, 1)
	held, finished := f.allocs[0], f.allocs[1]
	held.DesiredStatus, held.ClientStatus = structs.AllocDesiredStatusStop, structs.AllocClientStatusRunning
	finished.DesiredStatus, finished.ClientStatus = structs.AllocDesiredStatusStop, structs.AllocClientStatusComplete

	res := f.reconcile()
	g := groupNamed(res, "tg1")
	byNode := map[string]SystemPlacement{}
	for _, p := range g.Place {
		byNode[p.Node.ID] = p
	}
	require.Len(t, byNode, 2)
	require.Same(t, held, byNode[held.NodeID].Lingering)
	require.Nil(t, byNode[finished.NodeID].Lingering)
	require.Nil(t, byNode[held.NodeID].Previous, "nothing to stop again")
}
