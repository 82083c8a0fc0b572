package scheduler

import (
	"cmp"
	"slices"

	"github.com/drover-project/drover/nomad/structs"
)

// This file holds the wave-size and partition extensions of a system
// job's rollout (group meta drover.max_parallel and drover.partition,
// parsed in nomad/structs/drover_waves.go).

// waveSize is g's max_parallel for this decision: drover.max_parallel (a
// percentage of the group's feasible nodes, rounded up, at least 1; or a
// whole number) when set, else update { max_parallel }.
//
// Assumptions: the feasible nodes are the ready, eligible nodes in the
// job's scope that meet the group's constraints, counted afresh at every
// evaluation, so the wave grows and shrinks as nodes come and go. Nodes
// the partition holds count: the percentage is of the fleet, not of what
// is left to update.
func (g *SystemGroupResult) waveSize() int {
	return g.Group.DroverWaveSize(g.NodesEvaluated - len(g.Filtered))
}

// holdPartitions applies every group's drover.partition before the
// deployment gates the rest. It runs on the visited groups of a system
// job, deployment or not.
//
// Rules, per group with drover.partition = N > 0:
//   - a node is behind when its kept live allocation runs a group spec
//     other than the job's, drover.* meta aside (SameApartFromDroverMeta):
//     a node to update destructively, a node to update in place to a
//     different spec, or an initializing or ineligible node whose
//     allocation waits there;
//   - the last N behind nodes by node ID (the rollout goes in node ID
//     order, so these are the nodes it would reach last) are held: their
//     replacement is deferred and their in-place update kept back, and
//     they leave DesiredTotal, so the deployment completes without them;
//   - an allocation whose spec differs from the job's only in drover.*
//     keys is not behind: lowering the partition (a new job version) moves
//     the nodes already updated to it in place, and only the nodes the
//     partition had held are replaced, in waves;
//   - a fresh placement (a node without an allocation of the group) always
//     gets the job's version: the partition never places an older one, and
//     a held node that leaves is not replaced by an old allocation; the
//     next behind node, if any, is held instead.
//
// Invariants: while at least N nodes are behind, at least N nodes stay
// behind; raising N never moves a node back to an older version.
func (r *systemReconciler) holdPartitions() {
	if r.job == nil || r.sysbatch {
		return
	}
	var nodes map[string]*structs.Node
	for _, g := range r.groups {
		if g.Group == nil {
			continue
		}
		n := g.Group.DroverPartition()
		if n <= 0 {
			continue
		}
		if nodes == nil {
			nodes = make(map[string]*structs.Node, len(r.in.Nodes))
			for _, node := range r.in.Nodes {
				nodes[node.ID] = node
			}
		}
		r.holdPartition(g, n, nodes)
	}
}

// holdPartition holds the last n behind nodes of g (see holdPartitions).
func (r *systemReconciler) holdPartition(g *SystemGroupResult, n int, nodes map[string]*structs.Node) {
	same := map[*structs.TaskGroup]bool{} // old group → same spec as g's, drover.* aside
	behind := func(a *structs.Allocation) bool {
		if a.Job == nil {
			return true
		}
		old := a.Job.LookupTaskGroup(a.TaskGroup)
		if old == nil {
			return true
		}
		ok, seen := same[old]
		if !seen {
			ok = old.SameApartFromDroverMeta(g.Group)
			same[old] = ok
		}
		return !ok
	}
	var ids []string
	for _, pl := range g.DestructiveUpdate {
		ids = append(ids, pl.Node.ID)
	}
	for _, a := range g.InplaceUpdate {
		if behind(a) {
			ids = append(ids, a.NodeID)
		}
	}
	for _, a := range g.Ignore {
		if !a.Terminal() && !r.isCurrent(a) && r.classify(nodes[a.NodeID]) == nodeNotReady && behind(a) {
			ids = append(ids, a.NodeID)
		}
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(b, a) })
	held := make(map[string]bool, n)
	for _, id := range ids[:min(n, len(ids))] {
		held[id] = true
	}
	g.DestructiveUpdate = g.filterPlacements(g.DestructiveUpdate, func(pl SystemPlacement) (bool, bool) {
		if held[pl.Node.ID] {
			g.DesiredTotal--
			return false, false
		}
		return true, pl.Canary
	})
	kept := g.InplaceUpdate[:0]
	for _, a := range g.InplaceUpdate {
		if held[a.NodeID] && behind(a) {
			g.Ignore = append(g.Ignore, a)
			g.DesiredTotal--
			continue
		}
		kept = append(kept, a)
	}
	g.InplaceUpdate = kept
}
