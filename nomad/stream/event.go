package stream

import (
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// Topic is the kind of object an event is about.
type Topic string

// Topics, with Nomad's names. TopicAll in a subscription matches every
// topic.
const (
	TopicJob        Topic = "Job"
	TopicEvaluation Topic = "Evaluation"
	TopicAllocation Topic = "Allocation"
	TopicDeployment Topic = "Deployment"
	TopicNode       Topic = "Node"
	TopicNodePool   Topic = "NodePool"
	TopicVariables  Topic = "Variables"
	TopicService    Topic = "Service"
	// TopicImageUpdate is Drover's: a change of an image watch record
	// (nomad/imagewatcher), keyed "job/group/task" and filterable by job
	// ID and held digest. A digest held for an operator
	// (auto_update = "notify", or waiting for approval) is one: the
	// payload's Held and HeldReason name it.
	TopicImageUpdate Topic = "ImageUpdate"
	TopicAll         Topic = "*"
)

// Event types, with Nomad's names: the type of every event of an entry is
// given by the entry's message type.
const (
	TypeJobRegistered                 = "JobRegistered"
	TypeJobDeregistered               = "JobDeregistered"
	TypeEvalUpdated                   = "EvaluationUpdated"
	TypeNodeRegistration              = "NodeRegistration"
	TypeNodeDeregistration            = "NodeDeregistration"
	TypeNodeEvent                     = "NodeStreamEvent"
	TypeNodeEligibility               = "NodeEligibility"
	TypeNodeDrain                     = "NodeDrain"
	TypeAllocationUpdated             = "AllocationUpdated"
	TypeAllocationUpdateDesiredStatus = "AllocationUpdateDesiredStatus"
	TypePlanResult                    = "PlanResult"
	TypeDeploymentUpdate              = "DeploymentStatusUpdate"
	TypeDeploymentPromotion           = "DeploymentPromotion"
	TypeDeploymentAllocHealth         = "DeploymentAllocHealth"
	TypeNodePoolUpserted              = "NodePoolUpserted"
	TypeNodePoolDeleted               = "NodePoolDeleted"
	TypeVariableUpserted              = "VariableUpserted"
	TypeVariableDeleted               = "VariableDeleted"
	TypeServiceRegistration           = "ServiceRegistration"
	TypeServiceDeregistration         = "ServiceDeregistration"
	TypeImageWatchUpdated             = "ImageWatchUpdated"
)

// msgTypeEvents names the event type of each message type that produces
// events. Entries of other types (keyring, job stability) produce none.
var msgTypeEvents = map[structs.MessageType]string{
	structs.JobRegisterRequestType:               TypeJobRegistered,
	structs.JobDeregisterRequestType:             TypeJobDeregistered,
	structs.EvalUpdateRequestType:                TypeEvalUpdated,
	structs.NodeRegisterRequestType:              TypeNodeRegistration,
	structs.NodeDeregisterRequestType:            TypeNodeDeregistration,
	structs.NodeUpdateStatusRequestType:          TypeNodeEvent,
	structs.NodeUpdateEligibilityRequestType:     TypeNodeEligibility,
	structs.NodeUpdateDrainRequestType:           TypeNodeDrain,
	structs.AllocClientUpdateRequestType:         TypeAllocationUpdated,
	structs.AllocDesiredTransitionRequestType:    TypeAllocationUpdateDesiredStatus,
	structs.ApplyPlanResultsRequestType:          TypePlanResult,
	structs.ApplyPlanResultsCompactRequestType:   TypePlanResult,
	structs.DeploymentStatusUpdateRequestType:    TypeDeploymentUpdate,
	structs.DeploymentPromoteRequestType:         TypeDeploymentPromotion,
	structs.DeploymentAllocHealthRequestType:     TypeDeploymentAllocHealth,
	structs.NodePoolUpsertRequestType:            TypeNodePoolUpserted,
	structs.NodePoolDeleteRequestType:            TypeNodePoolDeleted,
	structs.VariablesApplyRequestType:            TypeVariableUpserted,
	structs.ServiceRegistrationUpsertRequestType: TypeServiceRegistration,
	structs.ServiceRegistrationDeleteRequestType: TypeServiceDeregistration,
	structs.ImageWatchUpdateRequestType:          TypeImageWatchUpdated,
}

// RegisterEventType makes entries of message type t produce events of type
// name. It is meant for init functions of packages that add message types.
func RegisterEventType(t structs.MessageType, name string) { msgTypeEvents[t] = name }

// Event is one change of one object.
type Event struct {
	Topic Topic
	Type  string
	// Key is the object's ID; FilterKeys are further keys a subscription
	// may match it by (an allocation's and an evaluation's job and
	// deployment, a deployment's job).
	Key        string
	FilterKeys []string
	// Namespace is the object's namespace, "" for objects without one
	// (nodes).
	Namespace string
	Index     uint64
	// Payload is the object after the change (before it, for a deletion):
	// a *structs.Job, *structs.Evaluation, *structs.Allocation,
	// *structs.Deployment, *structs.Node, *structs.NodePool,
	// *structs.ImageWatch or *structs.ServiceRegistration, shared with
	// the state store, or a structs.VariableMeta (a copy).
	Payload any
	// Deleted is true when the change deleted the object.
	Deleted bool
}

// Batch is the events of one raft entry.
type Batch struct {
	Index  uint64
	Events []Event
}

// EventsFromChanges returns the events of the entry of type t committed at
// index that made changes: one per changed object, in the order objects
// were first changed, carrying the object's last state (an entry may write
// one object several times). Changes of tables without a topic (job
// versions, submissions, keys) produce no event.
func EventsFromChanges(t structs.MessageType, index uint64, changes []state.Change) []Event {
	typ, ok := msgTypeEvents[t]
	if !ok {
		return nil
	}
	type objKey struct {
		topic   Topic
		ns, key string
	}
	var out []Event
	pos := map[objKey]int{}
	for _, c := range changes {
		obj, deleted := c.After, false
		if obj == nil {
			obj, deleted = c.Before, true
		}
		e, ok := eventFor(obj, deleted)
		if !ok {
			continue
		}
		e.Type, e.Index, e.Deleted = typ, index, deleted
		if e.Topic == TopicVariables && deleted {
			e.Type = TypeVariableDeleted
		}
		if e.Topic == TopicService {
			// A registration removed by another entry (its allocation
			// ended, its node went down) is a deregistration too.
			e.Type = TypeServiceRegistration
			if deleted {
				e.Type = TypeServiceDeregistration
			}
		}
		k := objKey{e.Topic, e.Namespace, e.Key}
		if i, seen := pos[k]; seen {
			out[i] = e
			continue
		}
		pos[k] = len(out)
		out = append(out, e)
	}
	return out
}

// eventFor returns the topic, keys and payload of an event about obj. Of
// deletions only those of jobs and nodes are events (allocations and
// evaluations are deleted only by garbage collection).
func eventFor(obj any, deleted bool) (Event, bool) {
	switch o := obj.(type) {
	case *structs.Job:
		return Event{Topic: TopicJob, Key: o.ID, Namespace: o.Namespace, Payload: o}, true
	case *structs.Node:
		return Event{Topic: TopicNode, Key: o.ID, Payload: o}, true
	case *structs.NodePool:
		return Event{Topic: TopicNodePool, Key: o.Name, Payload: o}, true
	case *structs.ServiceRegistration:
		return Event{Topic: TopicService, Key: o.ID, FilterKeys: keys(o.JobID, o.ServiceName, o.AllocID),
			Namespace: o.Namespace, Payload: o}, true
	case *structs.VariableEncrypted:
		// Only the metadata travels: never the ciphertext.
		return Event{Topic: TopicVariables, Key: o.Path, Namespace: o.Namespace, Payload: o.VariableMeta}, true
	}
	if deleted {
		return Event{}, false
	}
	switch o := obj.(type) {
	case *structs.Evaluation:
		return Event{Topic: TopicEvaluation, Key: o.ID, FilterKeys: keys(o.JobID, o.DeploymentID),
			Namespace: o.Namespace, Payload: o}, true
	case *structs.Allocation:
		return Event{Topic: TopicAllocation, Key: o.ID, FilterKeys: keys(o.JobID, o.DeploymentID),
			Namespace: o.Namespace, Payload: o}, true
	case *structs.Deployment:
		return Event{Topic: TopicDeployment, Key: o.ID, FilterKeys: keys(o.JobID),
			Namespace: o.Namespace, Payload: o}, true
	case *structs.ImageWatch:
		return Event{Topic: TopicImageUpdate, Key: o.JobID + "/" + o.Group + "/" + o.Task, FilterKeys: keys(o.JobID, o.Held),
			Namespace: o.Namespace, Payload: o}, true
	}
	return Event{}, false
}

// keys returns the non-empty ks.
func keys(ks ...string) []string {
	var out []string
	for _, k := range ks {
		if k != "" {
			out = append(out, k)
		}
	}
	return out
}
