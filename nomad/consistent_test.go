package nomad

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/mock"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
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

// A register, revert or scale with an enforced index is checked against
// this server's state, so that state must hold every acknowledged write:
// a leader its quorum disowns (resumed from a pause, its state behind)
// must not refuse for certain what the cluster would accept.
func TestEnforcedWritesRefusedWhenQuorumDisownsTheLeader(t *testing.T) {
	s := queryTestServer(t)
	job := mock.Job("web")
	job.Type, job.Datacenters = structs.JobTypeBatch, []string{"dc1"}
	job.TaskGroups[0].Update = nil
	job.TaskGroups[0].Tasks[0].Driver = "raw_exec"
	job.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/true"}
	job.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 100, MemoryMB: 64}
	reply, err := s.JobRegister(&JobRegisterArgs{Job: job.Copy()})
	require.NoError(t, err)

	s.verifyLeader = func() error { return errors.New("deposed") }
	// An index that this server's state says is stale: a deposed leader
	// cannot tell, so it must not answer "conflicting job modify index".
	_, err = s.JobRegister(&JobRegisterArgs{Job: job.Copy(), EnforceIndex: true, JobModifyIndex: reply.JobModifyIndex + 1})
	require.ErrorIs(t, err, ErrNotReadyForReads)
	prior := uint64(7)
	_, err = s.JobRevert(nil, job.Namespace, job.ID, 0, &prior)
	require.ErrorIs(t, err, ErrNotReadyForReads)
	count := int64(2)
	_, err = s.JobScale(&JobScaleArgs{Namespace: job.Namespace, JobID: job.ID, Group: job.TaskGroups[0].Name, Count: &count, EnforceIndex: reply.JobModifyIndex + 1})
	require.ErrorIs(t, err, ErrNotReadyForReads)

	s.verifyLeader = nil // confirmed again: the same requests get Nomad's refusals
	_, err = s.JobRegister(&JobRegisterArgs{Job: job.Copy(), EnforceIndex: true, JobModifyIndex: reply.JobModifyIndex + 1})
	require.ErrorContains(t, err, "Enforcing job modify index")
	_, err = s.JobRevert(nil, job.Namespace, job.ID, 0, &prior)
	require.ErrorContains(t, err, "Current job has version")
}
