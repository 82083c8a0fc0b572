package fsm

import (
	"bytes"
	"testing"

	"github.com/google/uuid"
	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// testJob returns a system job with one group "web".
func testJob(id string) *structs.Job {
	return &structs.Job{
		Namespace: structs.DefaultNamespace,
		ID:        id,
		Name:      id,
		Type:      structs.JobTypeSystem,
		Priority:  50,
		TaskGroups: []*structs.TaskGroup{{
			Name: "web",
			Tasks: []*structs.Task{{
				Name:   "server",
				Driver: "docker",
				Config: map[string]any{"image": "nginx:1"},
			}},
			Update: &structs.UpdateStrategy{MaxParallel: 1, Canary: 50},
		}},
	}
}

// testNode returns a ready node.
func testNode() *structs.Node {
	return &structs.Node{
		ID:         uuid.NewString(),
		SecretID:   uuid.NewString(),
		Name:       "node",
		Datacenter: "dc1",
		Status:     structs.NodeStatusReady,
		Attributes: map[string]string{"kernel.name": "linux"},
	}
}

// testAlloc returns a pending allocation of job's group "web" on nodeID.
func testAlloc(job *structs.Job, nodeID string) *structs.Allocation {
	return &structs.Allocation{
		ID:            uuid.NewString(),
		Namespace:     job.Namespace,
		EvalID:        uuid.NewString(),
		Name:          job.ID + ".web[0]",
		NodeID:        nodeID,
		JobID:         job.ID,
		JobVersion:    job.Version,
		TaskGroup:     "web",
		DesiredStatus: structs.AllocDesiredStatusRun,
		ClientStatus:  structs.AllocClientStatusPending,
	}
}

// testEval returns a pending evaluation of job.
func testEval(job *structs.Job) *structs.Evaluation {
	return &structs.Evaluation{
		ID:          uuid.NewString(),
		Namespace:   job.Namespace,
		Priority:    job.Priority,
		Type:        job.Type,
		TriggeredBy: structs.EvalTriggerJobRegister,
		JobID:       job.ID,
		Status:      structs.EvalStatusPending,
	}
}

// testDeployment returns a running deployment of job with a canary group.
func testDeployment(job *structs.Job) *structs.Deployment {
	return &structs.Deployment{
		ID:             uuid.NewString(),
		Namespace:      job.Namespace,
		JobID:          job.ID,
		JobVersion:     job.Version,
		JobCreateIndex: job.CreateIndex,
		TaskGroups: map[string]*structs.DeploymentState{
			"web": {DesiredCanaries: 1, DesiredTotal: 2, PlacedCanaries: []string{}},
		},
		Status:            structs.DeploymentStatusRunning,
		StatusDescription: structs.DeploymentStatusDescriptionRunningNeedsPromotion,
	}
}

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
