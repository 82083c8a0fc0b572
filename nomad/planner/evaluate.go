package planner

import (
	"sort"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/structs"
)

// Snapshot is the state the applier checks plans against. *state.Snapshot
// implements it.
type Snapshot interface {
	NodeByID(ws memdb.WatchSet, id string) (*structs.Node, error)
	AllocsByNode(ws memdb.WatchSet, nodeID string) ([]*structs.Allocation, error)
	AllocByID(ws memdb.WatchSet, id string) (*structs.Allocation, error)
	LatestIndex() uint64
}

// Rejection says why the allocations of a plan on one node were not committed.
type Rejection struct {
	NodeID string
	Reason string
}

// EvaluatePlan decides which part of plan still holds against snap. It never
// writes. The result's RefreshIndex is set when any node was rejected.
func EvaluatePlan(snap Snapshot, plan *structs.Plan) (*structs.PlanResult, []Rejection, error) {
	result := &structs.PlanResult{
		NodeUpdate:        map[string][]*structs.Allocation{},
		NodeAllocation:    map[string][]*structs.Allocation{},
		Deployment:        plan.Deployment,
		DeploymentUpdates: plan.DeploymentUpdates,
	}
	var rejected []Rejection
	for _, nodeID := range planNodeIDs(plan) {
		reason, err := evaluateNode(snap, plan, nodeID)
		if err != nil {
			return nil, nil, err
		}
		if reason != "" {
			rejected = append(rejected, Rejection{NodeID: nodeID, Reason: reason})
			// Stops on a rejected node still commit: they never need room.
			if stops := plan.NodeUpdate[nodeID]; len(stops) > 0 {
				result.NodeUpdate[nodeID] = stops
			}
			continue
		}
		if stops := plan.NodeUpdate[nodeID]; len(stops) > 0 {
			result.NodeUpdate[nodeID] = stops
		}
		if allocs := plan.NodeAllocation[nodeID]; len(allocs) > 0 {
			result.NodeAllocation[nodeID] = allocs
		}
	}
	if len(rejected) > 0 {
		result.RefreshIndex = snap.LatestIndex()
	}
	return result, rejected, nil
}

// planNodeIDs lists every node the plan touches, sorted.
func planNodeIDs(plan *structs.Plan) []string {
	seen := map[string]bool{}
	var ids []string
	for id := range plan.NodeUpdate {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	for id := range plan.NodeAllocation {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// evaluateNode returns "" when the plan's allocations for nodeID may commit,
// or the reason they may not.
func evaluateNode(snap Snapshot, plan *structs.Plan, nodeID string) (string, error) {
	placing := plan.NodeAllocation[nodeID]
	if len(placing) == 0 {
		return "", nil
	}
	node, err := snap.NodeByID(nil, nodeID)
	if err != nil {
		return "", err
	}
	if node == nil {
		return "node does not exist", nil
	}
	existing, err := snap.AllocsByNode(nil, nodeID)
	if err != nil {
		return "", err
	}
	if !node.Ready() && hasNewAlloc(placing, existing) {
		return "node is not ready for placements", nil
	}
	proposed := proposedAllocs(existing, plan.NodeUpdate[nodeID], placing)
	if fit, dim := structs.AllocsFit(node, proposed); !fit {
		return "node resources exhausted: " + dim, nil
	}
	if dup := duplicateGroup(proposed, plan.Job); dup != "" {
		return "a live allocation of " + dup + " already runs on the node", nil
	}
	return "", nil
}

// hasNewAlloc reports whether placing creates an allocation that is not yet
// on the node.
func hasNewAlloc(placing, existing []*structs.Allocation) bool {
	ids := map[string]bool{}
	for _, a := range existing {
		ids[a.ID] = true
	}
	for _, a := range placing {
		if !ids[a.ID] {
			return true
		}
	}
	return false
}

// proposedAllocs is the node's set of live allocations if the plan committed:
// existing ones minus stopped and updated ones, plus the plan's.
func proposedAllocs(existing, stops, placing []*structs.Allocation) []*structs.Allocation {
	removed := map[string]bool{}
	for _, a := range stops {
		removed[a.ID] = true
	}
	for _, a := range placing {
		removed[a.ID] = true
	}
	var out []*structs.Allocation
	for _, a := range existing {
		if !removed[a.ID] && !a.Terminal() {
			out = append(out, a)
		}
	}
	return append(out, placing...)
}

// duplicateGroup returns "job/group" when two live allocations of one task
// group of a system or sysbatch job are proposed, or "". Service and batch
// groups may run several allocations on one node. An allocation's job is
// its stored version, or planJob for the plan's new ones.
//
// Exception (drover.surge, scheduler/system_surge.go): a group may run two
// allocations of different job versions when the newer one's version of
// the group has drover.surge; never three.
func duplicateGroup(allocs []*structs.Allocation, planJob *structs.Job) string {
	seen := map[[3]string]*structs.Allocation{}
	surged := map[[3]string]bool{}
	for _, a := range allocs {
		if a.Terminal() {
			continue
		}
		job := a.Job
		if job == nil {
			job = planJob
		}
		if job != nil && job.Type != structs.JobTypeSystem && job.Type != structs.JobTypeSysBatch {
			continue
		}
		key := [3]string{a.Namespace, a.JobID, a.TaskGroup}
		other, dup := seen[key]
		if !dup {
			seen[key] = a
			continue
		}
		if surged[key] || !surgePair(other, a, planJob) {
			return "task group \"" + a.TaskGroup + "\" of job \"" + a.JobID + "\""
		}
		surged[key] = true
	}
	return ""
}

// surgePair reports whether a and b, live allocations of one group, may run
// on one node together: their job versions differ and the newer version's
// group has drover.surge.
func surgePair(a, b *structs.Allocation, planJob *structs.Job) bool {
	if a.JobVersion == b.JobVersion {
		return false
	}
	newer := a
	if b.JobVersion > a.JobVersion {
		newer = b
	}
	job := newer.Job
	if job == nil {
		job = planJob
	}
	return job != nil && job.LookupTaskGroup(newer.TaskGroup).DroverSurge()
}
