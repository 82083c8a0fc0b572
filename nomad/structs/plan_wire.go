package structs

import (
	"reflect"
	"unsafe"
)

// ApplyPlanResultsCompactRequestType carries a PlanResultsWire: an
// ApplyPlanResultsRequest whose allocations are encoded against what
// they share. A system job's plan places one allocation per node, all
// alike but for a few fields; encoding each in full made the raft entry of
// a 10,000-node plan several megabytes, and its encode and decode (by
// reflection, field by field) most of the plan's commit time.
const ApplyPlanResultsCompactRequestType MessageType = 123

// PlanResultsWire is the wire form of an ApplyPlanResultsRequest
// (CompactPlanResults, then Expand). Stops carry only what a stop
// applies (state.UpsertPlanResults reads nothing else of them); each
// placed or updated allocation is a PlanAlloc naming a Base with the
// fields it shares with others and, when its task resources are shared, a
// Tasks map.
type PlanResultsWire struct {
	Job               *Job
	Deployment        *Deployment
	DeploymentUpdates []*DeploymentStatusUpdate
	EvalID            string
	UpdatedAt         int64
	Stops             []PlanStop
	// Bases hold the shared fields of the allocations; their per-placement
	// fields (PlanAlloc's) are zero.
	Bases []*Allocation
	Tasks []map[string]*AllocatedTaskResources
	// Allocs are AllocsUpdated, in order, but for those in Full.
	Allocs []PlanAlloc
	// Full are allocations sent whole (those with task states, a
	// reschedule tracker, a network status, a desired transition or a
	// DisconnectedAt: in-place updates of allocations a client or operator
	// touched, or that were once marked unknown or lost), with their
	// positions in AllocsUpdated.
	Full    []*Allocation
	FullPos []int
}

// PlanStop is one entry of AllocsStopped on the wire. Like PlanAlloc it
// is encoded as an array, its fields by position: add fields only at the
// end, never reorder or remove one. Entries written as maps keyed by field
// name (before) still decode.
type PlanStop struct {
	_struct            bool `codec:",toarray"` // the codec reads this tag
	ID                 string
	DesiredStatus      string
	DesiredDescription string
	ClientStatus       string
	ClientDescription  string
	FollowupEvalID     string
}

// PlanAlloc is one allocation of AllocsUpdated on the wire: its Base's
// fields plus its own. It is encoded as an array, its fields by position
// (a plan carries thousands: field names took more than half of a
// 10,000-placement entry), so add fields only at the end, never reorder or
// remove one. Entries written as maps keyed by field name (before) still
// decode, and a server of the previous version decodes arrays.
type PlanAlloc struct {
	_struct            bool `codec:",toarray"` // the codec reads this tag
	Base               int
	ID                 string
	NodeID             string
	NodeName           string
	PreviousAllocation string
	DeploymentStatus   *AllocDeploymentStatus
	SignedIdentities   map[string]string
	// HasResources is false when AllocatedResources is nil. Tasks is an
	// index into PlanResultsWire.Tasks, or -1 when the allocation has its
	// own (in OwnTasks).
	HasResources bool
	Tasks        int
	OwnTasks     map[string]*AllocatedTaskResources
	Shared       AllocatedSharedResources
}

// allocBase is the comparable part of an Allocation that PlanAlloc does
// not carry. Pointer fields compare by identity: the scheduler shares one
// metric among a group's placements.
type allocBase struct {
	Namespace, EvalID, Name, JobID               string
	JobVersion                                   uint64
	TaskGroup                                    string
	Metrics                                      *AllocationMetric
	DesiredStatus, DesiredDescription            string
	ClientStatus, ClientDescription              string
	DeploymentID, NextAllocation, FollowupEvalID string
	CreateIndex, ModifyIndex, AllocModifyIndex   uint64
	CreateTime, ModifyTime                       int64
}

func baseOf(a *Allocation) allocBase {
	return allocBase{
		Namespace: a.Namespace, EvalID: a.EvalID, Name: a.Name, JobID: a.JobID, JobVersion: a.JobVersion,
		TaskGroup: a.TaskGroup, Metrics: a.Metrics, DesiredStatus: a.DesiredStatus,
		DesiredDescription: a.DesiredDescription, ClientStatus: a.ClientStatus,
		ClientDescription: a.ClientDescription, DeploymentID: a.DeploymentID,
		NextAllocation: a.NextAllocation, FollowupEvalID: a.FollowupEvalID,
		CreateIndex: a.CreateIndex, ModifyIndex: a.ModifyIndex, AllocModifyIndex: a.AllocModifyIndex,
		CreateTime: a.CreateTime, ModifyTime: a.ModifyTime,
	}
}

// CompactPlanResults returns req's wire form. It shares req's objects and
// does not modify them. Allocation.Job is not encoded (as in the full
// form).
func CompactPlanResults(req *ApplyPlanResultsRequest) *PlanResultsWire {
	w := &PlanResultsWire{
		Job: req.Job, Deployment: req.Deployment, DeploymentUpdates: req.DeploymentUpdates,
		EvalID: req.EvalID, UpdatedAt: req.UpdatedAt,
	}
	if len(req.AllocsStopped) > 0 {
		w.Stops = make([]PlanStop, len(req.AllocsStopped))
		for i, s := range req.AllocsStopped {
			w.Stops[i] = PlanStop{ID: s.ID, DesiredStatus: s.DesiredStatus, DesiredDescription: s.DesiredDescription,
				ClientStatus: s.ClientStatus, ClientDescription: s.ClientDescription, FollowupEvalID: s.FollowupEvalID}
		}
	}
	bases := map[allocBase]int{}
	tasks := map[unsafe.Pointer]int{} // by the map's identity
	var lastBase allocBase
	lastIdx := -1
	w.Allocs = make([]PlanAlloc, 0, len(req.AllocsUpdated))
	for pos, a := range req.AllocsUpdated {
		if a.TaskStates != nil || a.RescheduleTracker != nil || a.NetworkStatus != nil || a.DesiredTransition != (DesiredTransition{}) ||
			a.DisconnectedAt != 0 {
			w.Full = append(w.Full, a)
			w.FullPos = append(w.FullPos, pos)
			continue
		}
		k := baseOf(a)
		idx := lastIdx
		if idx < 0 || k != lastBase {
			var ok bool
			if idx, ok = bases[k]; !ok {
				idx = len(w.Bases)
				bases[k] = idx
				b := &Allocation{}
				b.setBase(k)
				w.Bases = append(w.Bases, b)
			}
			lastBase, lastIdx = k, idx
		}
		pa := PlanAlloc{Base: idx, ID: a.ID, NodeID: a.NodeID, NodeName: a.NodeName,
			PreviousAllocation: a.PreviousAllocation, DeploymentStatus: a.DeploymentStatus,
			SignedIdentities: a.SignedIdentities, Tasks: -1}
		if ar := a.AllocatedResources; ar != nil {
			pa.HasResources, pa.Shared = true, ar.Shared
			pa.Tasks, pa.OwnTasks = sharedTasks(w, tasks, ar.Tasks)
		}
		w.Allocs = append(w.Allocs, pa)
	}
	return w
}

// sharedTasks returns the index of m in w.Tasks, adding it, and nil; or,
// for a map with no task, -1 and m. Maps are told apart by identity: the
// scheduler gives a group's placements one map when they are granted the
// same task resources.
func sharedTasks(w *PlanResultsWire, seen map[unsafe.Pointer]int, m map[string]*AllocatedTaskResources) (int, map[string]*AllocatedTaskResources) {
	if len(m) == 0 {
		return -1, m
	}
	id := reflect.ValueOf(m).UnsafePointer()
	if i, ok := seen[id]; ok {
		return i, nil
	}
	seen[id] = len(w.Tasks)
	w.Tasks = append(w.Tasks, m)
	return len(w.Tasks) - 1, nil
}

func (a *Allocation) setBase(k allocBase) {
	a.Namespace, a.EvalID, a.Name, a.JobID, a.JobVersion = k.Namespace, k.EvalID, k.Name, k.JobID, k.JobVersion
	a.TaskGroup, a.Metrics, a.DesiredStatus = k.TaskGroup, k.Metrics, k.DesiredStatus
	a.DesiredDescription, a.ClientStatus, a.ClientDescription = k.DesiredDescription, k.ClientStatus, k.ClientDescription
	a.DeploymentID, a.NextAllocation, a.FollowupEvalID = k.DeploymentID, k.NextAllocation, k.FollowupEvalID
	a.CreateIndex, a.ModifyIndex, a.AllocModifyIndex = k.CreateIndex, k.ModifyIndex, k.AllocModifyIndex
	a.CreateTime, a.ModifyTime = k.CreateTime, k.ModifyTime
}

// Expand returns the request w encodes. Allocations of one Base share its
// Metrics, and those of one Tasks entry their task resources: stored
// allocations are never modified in place (Allocation.Copy shares both
// too). The allocations are cut from slabs, a few allocations in all
// instead of several per allocation.
func (w *PlanResultsWire) Expand() *ApplyPlanResultsRequest {
	req := &ApplyPlanResultsRequest{
		Job: w.Job, Deployment: w.Deployment, DeploymentUpdates: w.DeploymentUpdates,
		EvalID: w.EvalID, UpdatedAt: w.UpdatedAt,
	}
	if len(w.Stops) > 0 {
		stops := make([]Allocation, len(w.Stops))
		req.AllocsStopped = make([]*Allocation, len(w.Stops))
		for i, s := range w.Stops {
			stops[i] = Allocation{ID: s.ID, DesiredStatus: s.DesiredStatus, DesiredDescription: s.DesiredDescription,
				ClientStatus: s.ClientStatus, ClientDescription: s.ClientDescription, FollowupEvalID: s.FollowupEvalID}
			req.AllocsStopped[i] = &stops[i]
		}
	}
	n := len(w.Allocs) + len(w.Full)
	if n == 0 {
		return req
	}
	req.AllocsUpdated = make([]*Allocation, 0, n)
	allocs := make([]Allocation, len(w.Allocs))
	resources := 0
	for i := range w.Allocs {
		if w.Allocs[i].HasResources {
			resources++
		}
	}
	ars := make([]AllocatedResources, resources)
	full := 0
	for i := range w.Allocs {
		for full < len(w.Full) && w.FullPos[full] == len(req.AllocsUpdated) {
			req.AllocsUpdated = append(req.AllocsUpdated, w.Full[full])
			full++
		}
		pa := &w.Allocs[i]
		a := &allocs[i]
		if pa.Base >= 0 && pa.Base < len(w.Bases) {
			*a = *w.Bases[pa.Base]
		}
		a.ID, a.NodeID, a.NodeName, a.PreviousAllocation = pa.ID, pa.NodeID, pa.NodeName, pa.PreviousAllocation
		a.DeploymentStatus, a.SignedIdentities = pa.DeploymentStatus, pa.SignedIdentities
		if pa.HasResources {
			ar := &ars[0]
			ars = ars[1:]
			ar.Shared = pa.Shared
			if pa.Tasks >= 0 && pa.Tasks < len(w.Tasks) {
				ar.Tasks = w.Tasks[pa.Tasks]
			} else {
				ar.Tasks = pa.OwnTasks
			}
			a.AllocatedResources = ar
		}
		req.AllocsUpdated = append(req.AllocsUpdated, a)
	}
	for ; full < len(w.Full); full++ {
		req.AllocsUpdated = append(req.AllocsUpdated, w.Full[full])
	}
	return req
}
