package nomad

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/state"
)

// A default read is answered only after a quorum round confirms this
// server still leads: a leader that believes it leads (ready for reads,
// raft state Leader) but is refused by the quorum (it was paused or cut
// off, and another leader took over) refuses the read; a stale read is
// still answered from its state.
func TestDefaultReadRefusedWhenQuorumDisownsTheLeader(t *testing.T) {
	s, err := NewServer(Config{NodeName: "verify", DataDir: t.TempDir(), RPCAddr: "127.0.0.1:0", BootstrapExpect: 1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Shutdown() })
	require.Eventually(t, s.ReadyForConsistentReads, 20*time.Second, 20*time.Millisecond)
	ctx := context.Background()

	require.NoError(t, s.WaitConsistentRead(ctx), "a leader its quorum confirms answers")

	asked := 0
	s.verifyLeader = func() error { asked++; return errors.New("deposed") }
	require.True(t, s.ReadyForConsistentReads(), "it still believes it leads")
	require.ErrorIs(t, s.WaitConsistentRead(ctx), ErrNotReadyForReads)
	require.Equal(t, 1, asked, "the quorum is asked once per read")

	_, err = s.blockingQuery(ctx, &QueryOptions{}, func(_ memdb.WatchSet, _ *state.Snapshot) (uint64, error) { return 1, nil })
	require.ErrorIs(t, err, ErrNotReadyForReads, "a default query is refused")
	_, err = s.blockingQuery(ctx, &QueryOptions{AllowStale: true}, func(_ memdb.WatchSet, _ *state.Snapshot) (uint64, error) { return 1, nil })
	require.NoError(t, err, "a stale query is answered locally")
}
