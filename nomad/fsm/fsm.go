package fsm

import (
	"fmt"
	"io"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/stream"
	"github.com/drover-project/drover/nomad/structs"
)

// FSM applies raft log entries to a state store. It implements raft.FSM.
type FSM struct {
	state  *state.StateStore
	logger hclog.Logger
	events *stream.Broker // fed with the events of every applied entry

	// evalsHook, or nil, is called after every entry that upserted
	// evaluations, with their stored copies.
	evalsHook atomic.Pointer[func([]*structs.Evaluation)]
}

var _ raft.FSM = (*FSM)(nil)

// RegisterResult is Apply's response to a JobRegisterRequest (as a
// *RegisterResult): the version and job modify index the job was
// registered at.
type RegisterResult struct {
	Version        uint64
	JobModifyIndex uint64
}

// New returns an FSM applying entries to store. logger may be nil.
func New(store *state.StateStore, logger hclog.Logger) *FSM {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	store.TrackChanges(true)
	return &FSM{state: store, logger: logger.Named("fsm"), events: stream.NewBroker(0)}
}

// Events returns the broker the FSM publishes the events of every applied
// entry to.
func (f *FSM) Events() *stream.Broker { return f.events }

// SetEventBufferSize replaces the event broker with one keeping size
// entries' events (0: the default). Call it before the FSM applies entries.
func (f *FSM) SetEventBufferSize(size int) { f.events = stream.NewBroker(size) }

// State returns the state store the FSM writes to.
func (f *FSM) State() *state.StateStore { return f.state }

// SetEvalsHook sets fn (or nil) to be called, on the applying goroutine and
// after the entry committed, with every evaluation an entry upserted:
// register, deregister, eval update, node updates, alloc client and desired
// updates, and deployment messages (plan results carry none). fn must not
// block for long: raft waits for it. The evals are the store's; do not
// modify them.
func (f *FSM) SetEvalsHook(fn func(evals []*structs.Evaluation)) {
	if fn == nil {
		f.evalsHook.Store(nil)
		return
	}
	f.evalsHook.Store(&fn)
}

// notifyEvals hands evals to the hook, if any.
func (f *FSM) notifyEvals(evals []*structs.Evaluation) {
	if len(evals) == 0 {
		return
	}
	if fn := f.evalsHook.Load(); fn != nil {
		(*fn)(evals)
	}
}

// Apply applies one committed log entry. It returns nil, an error (the
// request was rejected and nothing, or only its valid prefix, was written),
// or for a job registration a *RegisterResult.
func (f *FSM) Apply(log *raft.Log) any {
	if len(log.Data) == 0 {
		panic(fmt.Sprintf("fsm: empty log entry at index %d", log.Index))
	}
	msgType := structs.MessageType(log.Data[0])
	ignoreUnknown := msgType&structs.IgnoreUnknownTypeFlag != 0
	msgType &^= structs.IgnoreUnknownTypeFlag
	buf, index := log.Data[1:], log.Index
	res := f.apply(msgType, ignoreUnknown, index, buf)
	// The entry's committed writes (all, or a valid prefix) are its events.
	f.events.Publish(index, stream.EventsFromChanges(msgType, index, f.state.TakeChanges()))
	return res
}

// apply applies the entry of type msgType at index.
func (f *FSM) apply(msgType structs.MessageType, ignoreUnknown bool, index uint64, buf []byte) any {
	switch msgType {
	case structs.JobRegisterRequestType:
		return f.applyJobRegister(index, buf)
	case structs.JobDeregisterRequestType:
		return f.applyJobDeregister(index, buf)
	case structs.EvalUpdateRequestType:
		return f.applyEvalUpdate(index, buf)
	case structs.NodeRegisterRequestType:
		return f.applyNodeRegister(index, buf)
	case structs.NodeUpdateStatusRequestType:
		return f.applyNodeUpdateStatus(index, buf)
	case structs.NodeUpdateEligibilityRequestType:
		return f.applyNodeUpdateEligibility(index, buf)
	case structs.NodeUpdateDrainRequestType:
		return f.applyNodeUpdateDrain(index, buf)
	case structs.NodeDeregisterRequestType:
		return f.applyNodeDeregister(index, buf)
	case structs.AllocClientUpdateRequestType:
		return f.applyAllocClientUpdate(index, buf)
	case structs.ApplyPlanResultsRequestType:
		return f.applyPlanResults(index, buf)
	case structs.ApplyPlanResultsCompactRequestType:
		return f.applyPlanResultsCompact(index, buf)
	case structs.DeploymentStatusUpdateRequestType:
		return f.applyDeploymentStatusUpdate(index, buf)
	case structs.DeploymentPromoteRequestType:
		return f.applyDeploymentPromote(index, buf)
	case structs.DeploymentAllocHealthRequestType:
		return f.applyDeploymentAllocHealth(index, buf)
	case structs.JobStabilityRequestType:
		return f.applyJobStability(index, buf)
	case structs.AllocDesiredTransitionRequestType:
		return f.applyAllocDesiredTransition(index, buf)
	case structs.KeyringUpsertRequestType:
		return f.applyKeyringUpsert(index, buf)
	case structs.KeyringDeleteRequestType:
		return f.applyKeyringDelete(index, buf)
	case structs.ImageWatchUpdateRequestType:
		return f.applyImageWatchUpdate(index, buf)
	case structs.GCRequestType:
		return f.applyGC(index, buf)
	case structs.PeriodicLaunchRequestType:
		return f.applyPeriodicLaunch(index, buf)
	case structs.ScalingEventRequestType:
		return f.applyScalingEvent(index, buf)
	case structs.SchedulerConfigRequestType:
		return f.applySchedulerConfig(index, buf)
	case structs.EvalDeleteRequestType:
		return f.applyEvalDelete(index, buf)
	case structs.AutopilotConfigRequestType:
		return f.applyAutopilotConfig(index, buf)
	case structs.NodePoolUpsertRequestType:
		return f.applyNodePoolUpsert(index, buf)
	case structs.NodePoolDeleteRequestType:
		return f.applyNodePoolDelete(index, buf)
	case structs.VariablesApplyRequestType:
		return f.applyVariables(index, buf)
	case structs.ServiceRegistrationUpsertRequestType:
		return f.applyServiceRegistrationUpsert(index, buf)
	case structs.ServiceRegistrationDeleteRequestType:
		return f.applyServiceRegistrationDelete(index, buf)
	}
	if resp, ok := f.applyACL(msgType, index, buf); ok {
		return resp
	}
	if resp, ok := f.applyACLAuth(msgType, index, buf); ok {
		return resp
	}
	if resp, ok := f.applyHostVolumes(msgType, index, buf); ok {
		return resp
	}
	if ignoreUnknown {
		f.logger.Warn("ignoring unknown message type", "type", msgType, "index", index)
		return nil
	}
	panic(fmt.Sprintf("fsm: unknown message type %d at index %d", msgType, index))
}

// decode decodes buf into out. The entry was committed, so a failure means
// a corrupt log: it panics.
func decode(index uint64, buf []byte, out any) {
	if err := structs.Decode(buf, out); err != nil {
		panic(fmt.Sprintf("fsm: decode %T at index %d: %v", out, index, err))
	}
}

// Snapshot captures a consistent view of the store; Persist writes it.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	return &fsmSnapshot{snap: f.state.Snapshot()}, nil
}

// Restore replaces the store's contents with the snapshot read from rc.
// On error the store keeps its contents.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	r := f.state.Restore()
	defer r.Abort()
	if err := readSnapshot(rc, r); err != nil {
		return err
	}
	if err := r.Commit(); err != nil {
		return err
	}
	// Buffered events describe the replaced state: subscribers start over.
	f.state.TakeChanges()
	f.events.Reset()
	return nil
}

// fsmSnapshot is a point-in-time view of the store waiting to be persisted.
type fsmSnapshot struct {
	snap *state.Snapshot
}

// Persist writes the snapshot to sink and closes it, or cancels it on error.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := writeSnapshot(sink, s.snap); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

// Release is a no-op: the snapshot holds no resources.
func (s *fsmSnapshot) Release() {}
