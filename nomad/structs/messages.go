package structs

import (
	"bytes"
	"fmt"
	"reflect"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// MessageType identifies a raft log entry. The first byte of every entry is
// its MessageType; the rest is the msgpack-encoded request.
type MessageType uint8

// Raft message types. Never renumber: they are persisted in raft logs.
const (
	JobRegisterRequestType MessageType = iota + 1
	JobDeregisterRequestType
	EvalUpdateRequestType
	NodeRegisterRequestType
	NodeUpdateStatusRequestType
	NodeUpdateEligibilityRequestType
	NodeUpdateDrainRequestType
	NodeDeregisterRequestType
	AllocClientUpdateRequestType
	ApplyPlanResultsRequestType
	DeploymentStatusUpdateRequestType
	DeploymentPromoteRequestType
	DeploymentAllocHealthRequestType
	JobStabilityRequestType
	AllocDesiredTransitionRequestType
)

// Image watcher message types (range 40-49).
const (
	// ImageWatchUpdateRequestType carries an ImageWatchUpdateRequest.
	ImageWatchUpdateRequestType MessageType = 40
)

// Keyring messages (range 60-69).
const (
	KeyringUpsertRequestType MessageType = 60
	KeyringDeleteRequestType MessageType = 61
)

// Periodic, dispatch and scaling messages (range 100-109).
const (
	// PeriodicLaunchRequestType carries a PeriodicLaunchRequest.
	PeriodicLaunchRequestType MessageType = 100
	// ScalingEventRequestType carries a ScalingEventRequest.
	ScalingEventRequestType MessageType = 101
	// HostVolumeUpsertRequestType carries a HostVolumeUpsertRequest.
	HostVolumeUpsertRequestType MessageType = 105
	// HostVolumeDeleteRequestType carries a HostVolumeDeleteRequest.
	HostVolumeDeleteRequestType MessageType = 106
)

// IgnoreUnknownTypeFlag set on a MessageType tells an older FSM to skip an
// entry it does not know instead of failing.
const IgnoreUnknownTypeFlag MessageType = 128

// JobRegisterRequest registers a job version and, unless Eval is nil, an
// evaluation for it.
type JobRegisterRequest struct {
	Job        *Job
	Submission *JobSubmission
	Eval       *Evaluation
	// SubmitTime is set by the leader before the entry is proposed so that
	// every server stores the same value.
	SubmitTime int64
	// EnforceIndex makes the register a check-and-set: the FSM applies it
	// only if the job's JobModifyIndex is still JobModifyIndex (0: the job
	// must not exist), and refuses it otherwise (CheckJobModifyIndex).
	EnforceIndex   bool
	JobModifyIndex uint64
}

// CheckJobModifyIndex enforces a register's check-index against the
// current job (nil when there is none), with Nomad's wording (the CLI
// reformats these messages).
func CheckJobModifyIndex(current *Job, want uint64) error {
	switch {
	case current == nil && want != 0:
		return BadRequestf("Enforcing job modify index %d: job does not exist", want)
	case current != nil && want == 0:
		return BadRequestf("Enforcing job modify index %d: job already exists", want)
	case current != nil && current.JobModifyIndex != want:
		return BadRequestf("Enforcing job modify index %d: job exists with conflicting job modify index: %d", want, current.JobModifyIndex)
	}
	return nil
}

// JobSubmission is the source a job version was submitted from.
type JobSubmission struct {
	Source         string
	Format         string
	VariableFlags  map[string]string
	Variables      string
	Namespace      string
	JobID          string
	Version        uint64
	JobModifyIndex uint64
}

// JobDeregisterRequest stops (or with Purge, deletes) a job.
type JobDeregisterRequest struct {
	Namespace string
	JobID     string
	Purge     bool
	Eval      *Evaluation
	// SubmitTime is the time the stop is recorded as, set by the leader.
	SubmitTime int64
	// NoShutdownDelay marks the job's live allocations to be killed
	// without their shutdown_delay.
	NoShutdownDelay bool
}

// EvalUpdateRequest inserts or updates evaluations.
type EvalUpdateRequest struct {
	Evals []*Evaluation
}

// NodeRegisterRequest registers or re-registers a node.
type NodeRegisterRequest struct {
	Node *Node
	Eval *Evaluation // or nil
}

// NodeUpdateStatusRequest changes a node's status.
type NodeUpdateStatusRequest struct {
	NodeID    string
	Status    string
	UpdatedAt int64 // unix seconds
	Event     *NodeEvent
	Evals     []*Evaluation
}

// NodeUpdateEligibilityRequest changes a node's scheduling eligibility.
type NodeUpdateEligibilityRequest struct {
	NodeID      string
	Eligibility string
	UpdatedAt   int64
	Evals       []*Evaluation
}

// NodeUpdateDrainRequest starts or stops a node drain.
type NodeUpdateDrainRequest struct {
	NodeID string
	Drain  bool
	// MarkEligible makes the node eligible again when the drain ends.
	MarkEligible bool
	UpdatedAt    int64
	Evals        []*Evaluation
	// Spec is the drain asked for (when Drain); Meta is kept in the
	// node's LastDrain. Complete says the drain ended because the node has
	// no live allocation left (the drainer), not because it was canceled.
	Spec     DrainSpec
	Meta     map[string]string
	Complete bool
	// DeadlineReached (with Complete): the drain's deadline passed before
	// it completed.
	DeadlineReached bool
	// Time is when the leader proposed the change (zero in entries
	// written before it existed: UpdatedAt is used).
	Time time.Time
}

// NodeDeregisterRequest removes nodes.
type NodeDeregisterRequest struct {
	NodeIDs []string
	// Evals re-evaluate the jobs the nodes ran (a purge).
	Evals []*Evaluation
}

// AllocClientUpdateRequest carries client-side status of allocations: their
// ClientStatus, ClientDescription, TaskStates and DeploymentStatus.
type AllocClientUpdateRequest struct {
	Allocs []*Allocation
	Evals  []*Evaluation
	// UpdatedAt is the modify time recorded for every alloc, set by the leader.
	UpdatedAt int64
}

// ApplyPlanResultsRequest commits the accepted part of a plan.
type ApplyPlanResultsRequest struct {
	// Job is the job version that new allocations run.
	Job *Job
	// AllocsUpdated are new or in-place updated allocations.
	AllocsUpdated []*Allocation
	// AllocsStopped are allocations the plan stops (DesiredStatus set).
	AllocsStopped []*Allocation
	// Deployment is created or updated, or nil.
	Deployment        *Deployment
	DeploymentUpdates []*DeploymentStatusUpdate
	EvalID            string
	// UpdatedAt is the create/modify time for every touched object.
	UpdatedAt int64
}

// DeploymentStatusUpdateRequest changes a deployment's status, optionally
// registering a job (an auto-revert) and an evaluation.
type DeploymentStatusUpdateRequest struct {
	Update    *DeploymentStatusUpdate
	Job       *Job
	Eval      *Evaluation
	UpdatedAt int64
}

// DeploymentPromoteRequest promotes the canaries of all or some groups.
type DeploymentPromoteRequest struct {
	DeploymentID string
	All          bool
	Groups       []string
	Eval         *Evaluation
	UpdatedAt    int64
}

// DeploymentAllocHealthRequest records allocation health within a deployment.
type DeploymentAllocHealthRequest struct {
	DeploymentID           string
	HealthyAllocationIDs   []string
	UnhealthyAllocationIDs []string
	Timestamp              int64
	DeploymentUpdate       *DeploymentStatusUpdate
	Job                    *Job
	Eval                   *Evaluation
}

// JobStabilityRequest marks a job version stable or not.
type JobStabilityRequest struct {
	Namespace string
	JobID     string
	Version   uint64
	Stable    bool
}

// AllocDesiredTransitionRequest stops allocations by ID (server-initiated)
// and records Transition on them (merged with what they had).
type AllocDesiredTransitionRequest struct {
	AllocIDs    []string
	Description string
	Evals       []*Evaluation
	Transition  DesiredTransition
}

// msgpackHandle decodes nested maps as map[string]any, so driver configs
// survive a raft round trip with the same shape they had in JSON.
var msgpackHandle = func() *codec.MsgpackHandle {
	h := &codec.MsgpackHandle{}
	h.RawToString = true
	h.MapType = reflect.TypeOf(map[string]any(nil))
	return h
}()

// Encode returns t followed by the msgpack encoding of msg.
func Encode(t MessageType, msg any) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte(uint8(t))
	if err := codec.NewEncoder(&buf, msgpackHandle).Encode(msg); err != nil {
		return nil, fmt.Errorf("structs: encode message %d: %w", t, err)
	}
	return buf.Bytes(), nil
}

// Decode decodes msgpack data into out.
func Decode(data []byte, out any) error {
	return codec.NewDecoderBytes(data, msgpackHandle).Decode(out)
}

// EncodeValue msgpack-encodes v (for snapshots).
func EncodeValue(w interface{ Write([]byte) (int, error) }, v any) error {
	return codec.NewEncoder(w, msgpackHandle).Encode(v)
}

// NewDecoder returns a msgpack stream decoder (for snapshot restore).
func NewDecoder(r interface{ Read([]byte) (int, error) }) *codec.Decoder {
	return codec.NewDecoder(r, msgpackHandle)
}
