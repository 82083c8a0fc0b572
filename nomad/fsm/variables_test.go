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

// varReq returns a set (or other op) of path with ciphertext data.
func varReq(op structs.VarOp, path, data string) *structs.VariablesApplyRequest {
	return &structs.VariablesApplyRequest{Op: op, Var: &structs.VariableEncrypted{
		VariableMeta: structs.VariableMeta{Namespace: "default", Path: path, CreateTime: 7, ModifyTime: 7},
		KeyID:        "key-1", Data: []byte(data),
	}}
}

// TestApplyVariables: writes through raft entries keep create index and
// time, check-and-set and locks refuse without writing, and every write is
// a Variables event carrying metadata only.
func TestApplyVariables(t *testing.T) {
	f := newFSM()
	resp := mustApply(t, f, 1, structs.VariablesApplyRequestType, varReq(structs.VarOpSet, "a/b", "c1")).(*structs.VariablesApplyResponse)
	require.Equal(t, structs.VarResultOK, resp.Result)
	require.Equal(t, uint64(1), resp.Written.CreateIndex)

	upd := varReq(structs.VarOpSet, "a/b", "c2")
	upd.Var.CreateTime = 99
	resp = mustApply(t, f, 2, structs.VariablesApplyRequestType, upd).(*structs.VariablesApplyResponse)
	require.Equal(t, uint64(1), resp.Written.CreateIndex)
	require.Equal(t, uint64(2), resp.Written.ModifyIndex)
	require.Equal(t, int64(7), resp.Written.CreateTime, "create time kept")

	stale := varReq(structs.VarOpSet, "a/b", "c3")
	one := uint64(1)
	stale.CheckIndex = &one
	resp = mustApply(t, f, 3, structs.VariablesApplyRequestType, stale).(*structs.VariablesApplyResponse)
	require.Equal(t, structs.VarResultConflict, resp.Result)
	require.Equal(t, []byte("c2"), resp.Conflict.Data)

	acq := varReq(structs.VarOpLockAcquire, "a/b", "")
	acq.KeepItems = true
	acq.Var.Lock = &structs.VariableLock{ID: "lock-1", TTL: 10 * time.Second, LockDelay: 10 * time.Second}
	resp = mustApply(t, f, 4, structs.VariablesApplyRequestType, acq).(*structs.VariablesApplyResponse)
	require.Equal(t, structs.VarResultOK, resp.Result)
	require.Equal(t, []byte("c2"), resp.Written.Data, "items kept")
	again := varReq(structs.VarOpLockAcquire, "a/b", "")
	again.Var.Lock = &structs.VariableLock{ID: "lock-2", TTL: 10 * time.Second, LockDelay: 10 * time.Second}
	resp = mustApply(t, f, 5, structs.VariablesApplyRequestType, again).(*structs.VariablesApplyResponse)
	require.Equal(t, structs.VarResultConflict, resp.Result, "a held lock is not acquired again")
	noLock := varReq(structs.VarOpSet, "a/b", "c4")
	resp = mustApply(t, f, 6, structs.VariablesApplyRequestType, noLock).(*structs.VariablesApplyResponse)
	require.Equal(t, structs.VarResultConflict, resp.Result, "a locked variable changes only with its lock ID")
	withLock := varReq(structs.VarOpSet, "a/b", "c5")
	withLock.LockID = "lock-1"
	resp = mustApply(t, f, 7, structs.VariablesApplyRequestType, withLock).(*structs.VariablesApplyResponse)
	require.Equal(t, structs.VarResultOK, resp.Result)
	require.Equal(t, "lock-1", resp.Written.Lock.ID, "the lock stays")
	rel := varReq(structs.VarOpLockRelease, "a/b", "")
	rel.LockID = "lock-1"
	resp = mustApply(t, f, 8, structs.VariablesApplyRequestType, rel).(*structs.VariablesApplyResponse)
	require.Nil(t, resp.Written.Lock)
	require.Equal(t, []byte("c5"), resp.Written.Data)
	mustApply(t, f, 9, structs.VariablesApplyRequestType, varReq(structs.VarOpDelete, "a/b", ""))

	got, err := f.State().VariableByPath(nil, "default", "a/b")
	require.NoError(t, err)
	require.Nil(t, got)

	sub := f.Events().Subscribe(stream.SubscribeRequest{Namespace: "*"})
	var types []string
	var indexes []uint64
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		b, err := sub.Next(ctx)
		cancel()
		if err != nil {
			break
		}
		for _, e := range b.Events {
			require.Equal(t, stream.TopicVariables, e.Topic)
			require.Equal(t, "a/b", e.Key)
			meta, ok := e.Payload.(structs.VariableMeta)
			require.True(t, ok, "payload is metadata, never ciphertext: %T", e.Payload)
			require.Equal(t, "a/b", meta.Path)
			types = append(types, e.Type)
			indexes = append(indexes, e.Index)
		}
	}
	// Conflicts (3, 5, 6) wrote nothing and published nothing.
	require.Equal(t, []uint64{1, 2, 4, 7, 8, 9}, indexes)
	require.Equal(t, stream.TypeVariableDeleted, types[len(types)-1])
	require.Equal(t, stream.TypeVariableUpserted, types[0])
}

// TestSnapshotVariables: variables, their locks and the table index
// survive a snapshot round trip.
func TestSnapshotVariables(t *testing.T) {
	src := newFSM()
	mustApply(t, src, 1, structs.VariablesApplyRequestType, varReq(structs.VarOpSet, "x/one", "d1"))
	lock := varReq(structs.VarOpLockAcquire, "x/two", "d2")
	lock.Var.Lock = &structs.VariableLock{ID: "l", TTL: 15 * time.Second, LockDelay: 20 * time.Second}
	mustApply(t, src, 2, structs.VariablesApplyRequestType, lock)
	want, err := src.State().Variables(nil, "*", "")
	require.NoError(t, err)
	require.Len(t, want, 2)

	snap, err := src.Snapshot()
	require.NoError(t, err)
	sink := &memSink{}
	require.NoError(t, snap.Persist(sink))
	dst := newFSM()
	require.NoError(t, dst.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))))
	got, err := dst.State().Variables(nil, "*", "")
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Equal(t, uint64(2), dst.State().Index("variables"))
	prefixed, err := dst.State().Variables(nil, "default", "x/t")
	require.NoError(t, err)
	require.Len(t, prefixed, 1)
	require.Equal(t, "l", prefixed[0].Lock.ID)
}
