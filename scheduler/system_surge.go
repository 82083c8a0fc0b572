package scheduler

import (
	"cmp"
	"slices"

	"github.com/drover-project/drover/nomad/structs"
)

// This file holds the surge rollout of a system job's group (group meta
// drover.surge = "true", validated in nomad/structs/drover_surge.go): the
// new allocation starts beside the old one on its node, and the old one
// stops once the new one is healthy.
//
// Rules, per surge group and node:
//   - a replacement (destructive update) is a surge placement: the new
//     allocation is placed while the old one keeps running; it names no
//     PreviousAllocation (so the client does not stop the old one when
//     the new one is prepared) and the plan fits it beside the old one.
//     Waves, stagger, canaries, pause and failure gate surge placements as
//     they gate replacements (system_rollout.go);
//   - a node with a live allocation of the job's version (the newest one)
//     and older ones: while it is not ready (surgeReady), one older
//     allocation is kept beside it (the healthiest: healthy, then running,
//     then newest) and the others stop; once it is ready, every older one
//     stops;
//   - a node with only older live allocations, several of them (a version
//     registered while a surge was under way): the healthiest is kept, the
//     others stop, and the kept one is updated as usual.
//
// Invariants, per node: never two live allocations older than the job's
// version, never more than one older plus one of the job's version; an
// older allocation beside one of the job's version stops only once that
// one is ready. A new allocation that fails (unhealthy, or failed on the
// client) leaves the old one running; the deployment fails as usual
// (auto_revert registers the stable version, which updates the old one).
//
// Assumptions: the deployment watcher asks for an evaluation when an
// allocation becomes healthy, also when that completes the deployment
// (so the last wave's old allocations stop); a paused deployment asks
// for none, so old allocations beside healthy new ones stop on resume.

// surgeReady reports whether a, a live allocation of the job's version,
// lets the older allocation beside it stop: it is healthy, or it joined no
// deployment (placed after the version's deployment ended, so nothing will
// ever mark its health) and its client runs it.
func surgeReady(a *structs.Allocation) bool {
	if a.DeploymentStatus.IsHealthy() {
		return true
	}
	return a.DeploymentID == "" && a.ClientStatus == structs.AllocClientStatusRunning
}

// keepSurge is keepOne for a surge group: ranked are the node's live
// allocations of g, current version first, then newest. It stops what the
// rules above stop, puts an older allocation kept beside the current one
// in Ignore, and returns the allocation the visit decides on.
func (r *systemReconciler) keepSurge(g *SystemGroupResult, ranked []*structs.Allocation) *structs.Allocation {
	var cur *structs.Allocation
	var older []*structs.Allocation
	for _, a := range ranked {
		switch {
		case !r.isCurrent(a):
			older = append(older, a)
		case cur == nil:
			cur = a
		default:
			g.Stop = append(g.Stop, AllocStop{Alloc: a, Reason: DescNotNeeded})
		}
	}
	if len(older) == 0 {
		return cur
	}
	if cur != nil && surgeReady(cur) {
		g.stopAll(older, DescUpdating)
		return cur
	}
	slices.SortStableFunc(older, func(a, b *structs.Allocation) int {
		return cmp.Or(-cmp.Compare(surgeRank(a), surgeRank(b)),
			cmp.Compare(b.CreateIndex, a.CreateIndex), cmp.Compare(a.ID, b.ID))
	})
	g.stopAll(older[1:], DescNotNeeded)
	if cur == nil {
		return older[0]
	}
	g.Ignore = append(g.Ignore, older[0])
	return cur
}

// surgeRank orders older allocations by how well they serve: healthy (2),
// running (1), other (0).
func surgeRank(a *structs.Allocation) int {
	switch {
	case a.DeploymentStatus.IsHealthy() && a.ClientStatus == structs.AllocClientStatusRunning:
		return 2
	case a.ClientStatus == structs.AllocClientStatusRunning:
		return 1
	}
	return 0
}
