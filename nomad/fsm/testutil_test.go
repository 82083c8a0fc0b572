package fsm

import (
	"bytes"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/mock"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// Fixtures shared with the other server packages' tests.
var (
	testJob        = mock.Job
	testNode       = mock.Node
	testAlloc      = mock.Alloc
	testEval       = mock.Eval
	testDeployment = mock.Deployment
)

// encode returns the raft entry for msg.
func encode(t testing.TB, typ structs.MessageType, msg any) []byte {
	t.Helper()
	buf, err := structs.Encode(typ, msg)
	require.NoError(t, err)
	return buf
}

// apply applies msg at index through raw encoded bytes and returns the
// response.
func apply(t testing.TB, f *FSM, index uint64, typ structs.MessageType, msg any) any {
	t.Helper()
	return f.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: encode(t, typ, msg)})
}

// mustApply applies msg and fails on an error response.
func mustApply(t testing.TB, f *FSM, index uint64, typ structs.MessageType, msg any) any {
	t.Helper()
	resp := apply(t, f, index, typ, msg)
	if err, ok := resp.(error); ok {
		require.NoError(t, err)
	}
	return resp
}

// newFSM returns an FSM over a fresh store.
func newFSM() *FSM { return New(state.NewStateStore(), nil) }

// memSink is an in-memory raft.SnapshotSink.
type memSink struct {
	bytes.Buffer
	cancelled, closed bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }
func (s *memSink) Close() error  { s.closed = true; return nil }
