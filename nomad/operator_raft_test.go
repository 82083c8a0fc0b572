package nomad

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// RemoveRaftPeer is checked before it reads the raft configuration: a
// refused caller does not learn whether the peer exists, a permitted one
// gets the configuration's answer.
func TestRemoveRaftPeer_NeedsOperatorWrite(t *testing.T) {
	srv := queryTestServer(t)
	refused, allowed := operatorWriters(t)
	for who, a := range refused {
		err := srv.RemoveRaftPeer(a, "no-such-peer", "")
		require.ErrorIs(t, err, structs.ErrForbidden, who)
	}
	err := srv.RemoveRaftPeer(allowed, "no-such-peer", "")
	require.ErrorIs(t, err, structs.ErrBadRequest)
	require.EqualError(t, err, `id "no-such-peer" was not found in the Raft configuration`)
	peers, _, err := srv.RaftConfiguration(nil)
	require.NoError(t, err)
	require.Len(t, peers, 1, "nothing was removed")
}
