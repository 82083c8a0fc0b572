package nomad

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/mock"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// TestMigrationPeers: which replacements get a peer to fetch their
// previous allocation's data from.
func TestMigrationPeers(t *testing.T) {
	cases := []struct {
		name     string
		disk     *structs.EphemeralDisk
		sameNode bool                      // the previous allocation ran on the replacement's node
		prevNode func(*structs.Node)       // changes the previous node
		prev     func(*structs.Allocation) // changes the previous allocation
		repl     func(*structs.Allocation) // changes the replacement
		want     bool
	}{
		{name: "migrate from another node", disk: &structs.EphemeralDisk{Migrate: true}, want: true},
		{name: "sticky only", disk: &structs.EphemeralDisk{Sticky: true}},
		{name: "no ephemeral disk block", disk: nil},
		{name: "same node: moved locally", disk: &structs.EphemeralDisk{Migrate: true}, sameNode: true},
		{name: "previous node down", disk: &structs.EphemeralDisk{Migrate: true}, prevNode: func(n *structs.Node) { n.Status = structs.NodeStatusDown }},
		{name: "previous node without an address", disk: &structs.EphemeralDisk{Migrate: true}, prevNode: func(n *structs.Node) { n.HTTPAddr = "" }},
		{name: "previous allocation lost", disk: &structs.EphemeralDisk{Migrate: true},
			prev: func(a *structs.Allocation) { a.ClientStatus = structs.AllocClientStatusLost }},
		{name: "replacement already stopped", disk: &structs.EphemeralDisk{Migrate: true},
			repl: func(a *structs.Allocation) { a.DesiredStatus = structs.AllocDesiredStatusStop }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := state.NewStateStore()
			job := mock.Job("cache")
			job.Type = structs.JobTypeService
			job.TaskGroups[0].EphemeralDisk = tc.disk
			require.NoError(t, s.UpsertJob(1, nil, job))
			from, to := mock.Node(), mock.Node()
			from.HTTPAddr, to.HTTPAddr = "10.0.0.1:4646", "10.0.0.2:4646"
			if tc.prevNode != nil {
				tc.prevNode(from)
			}
			require.NoError(t, s.UpsertNode(2, from))
			require.NoError(t, s.UpsertNode(3, to))
			prev := mock.Alloc(job, from.ID)
			prev.DesiredStatus, prev.ClientStatus = structs.AllocDesiredStatusStop, structs.AllocClientStatusComplete
			if tc.sameNode {
				prev.NodeID = to.ID
			}
			if tc.prev != nil {
				tc.prev(prev)
			}
			repl := mock.Alloc(job, to.ID)
			repl.PreviousAllocation = prev.ID
			if tc.repl != nil {
				tc.repl(repl)
			}
			require.NoError(t, s.UpsertAllocs(4, []*structs.Allocation{prev, repl}))
			snap := s.Snapshot()
			allocs, err := snap.AllocsByNode(nil, to.ID)
			require.NoError(t, err)

			peers, err := migrationPeers(snap, to.ID, allocs)
			require.NoError(t, err)
			if !tc.want {
				require.Empty(t, peers)
				return
			}
			require.Equal(t, map[string]migrationPeer{repl.ID: {addr: from.HTTPAddr, token: structs.MigrateToken(prev.ID, from.SecretID)}}, peers)
		})
	}
}
