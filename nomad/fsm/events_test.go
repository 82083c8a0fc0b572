package fsm

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/stream"
	"github.com/drover-project/drover/nomad/structs"
)

// TestAppliedEntriesPublishEvents: every applied entry publishes one event
// per changed job, evaluation, node (and so on), typed by the entry's
// message type, at the entry's index; rejected entries publish nothing.
func TestAppliedEntriesPublishEvents(t *testing.T) {
	f := newFSM()
	node := testNode()
	job := testJob("web")
	eval := testEval(job)
	mustApply(t, f, 1, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node})
	mustApply(t, f, 2, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job, Eval: eval, SubmitTime: 100})
	// A drain of an unknown node is rejected: no events at index 3.
	resp := apply(t, f, 3, structs.NodeUpdateDrainRequestType, &structs.NodeUpdateDrainRequest{NodeID: "missing", Drain: true})
	require.Error(t, resp.(error))
	mustApply(t, f, 4, structs.NodeUpdateDrainRequestType, &structs.NodeUpdateDrainRequest{NodeID: node.ID, Drain: true})
	mustApply(t, f, 5, structs.JobDeregisterRequestType, &structs.JobDeregisterRequest{Namespace: job.Namespace, JobID: job.ID, Purge: true})

	sub := f.Events().Subscribe(stream.SubscribeRequest{Namespace: "*"})
	type seen struct {
		index uint64
		topic stream.Topic
		typ   string
		key   string
		del   bool
	}
	var got []seen
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		batch, err := sub.Next(ctx)
		cancel()
		if err != nil {
			break
		}
		for _, e := range batch.Events {
			require.Equal(t, batch.Index, e.Index)
			got = append(got, seen{e.Index, e.Topic, e.Type, e.Key, e.Deleted})
		}
	}
	require.ElementsMatch(t, []seen{
		{1, stream.TopicNode, "NodeRegistration", node.ID, false},
		{2, stream.TopicJob, "JobRegistered", job.ID, false},
		{2, stream.TopicEvaluation, "JobRegistered", eval.ID, false},
		{4, stream.TopicNode, "NodeDrain", node.ID, false},
		{5, stream.TopicJob, "JobDeregistered", job.ID, true},
	}, got)
}

// TestRestoreResetsEvents: a snapshot restore closes subscriptions, whose
// events described the replaced state.
func TestRestoreResetsEvents(t *testing.T) {
	f := newFSM()
	mustApply(t, f, 1, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: testNode()})
	snap, err := f.Snapshot()
	require.NoError(t, err)
	sink := &memSink{}
	require.NoError(t, snap.Persist(sink))

	sub := f.Events().Subscribe(stream.SubscribeRequest{})
	_, err = sub.Next(context.Background())
	require.NoError(t, err)
	require.NoError(t, f.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))))
	_, err = sub.Next(context.Background())
	require.ErrorIs(t, err, stream.ErrSubscriptionClosed)
}

// TestSchedulerConfigSnapshot: the scheduler configuration and node pools
// are applied from the log and survive a snapshot and restore.
func TestSchedulerConfigSnapshot(t *testing.T) {
	f := newFSM()
	cfg := structs.DefaultSchedulerConfiguration()
	cfg.PauseEvalBroker = true
	res := mustApply(t, f, 3, structs.SchedulerConfigRequestType, &structs.SchedulerSetConfigRequest{Config: *cfg, CAS: true})
	require.True(t, res.(*structs.SchedulerSetConfigResult).Updated)
	mustApply(t, f, 4, structs.NodePoolUpsertRequestType, &structs.NodePoolUpsertRequest{
		NodePools: []*structs.NodePool{{Name: "gpu", Description: "GPUs"}}})
	snap, err := f.Snapshot()
	require.NoError(t, err)
	sink := &memSink{}
	require.NoError(t, snap.Persist(sink))
	dst := newFSM()
	require.NoError(t, dst.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))))
	got, err := dst.State().SchedulerConfig(nil)
	require.NoError(t, err)
	require.True(t, got.PauseEvalBroker)
	require.Equal(t, uint64(3), got.ModifyIndex)
	pool, err := dst.State().NodePoolByName(nil, "gpu")
	require.NoError(t, err)
	require.Equal(t, "GPUs", pool.Description)
	require.Equal(t, uint64(4), pool.CreateIndex)
}
