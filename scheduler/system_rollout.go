package scheduler

import (
	"cmp"
	"slices"
	"time"

	"github.com/drover-project/drover/nomad/structs"
)

// This file gates a deployment group's work: which of the placements and
// updates that visiting the nodes found go ahead in this evaluation, and
// which wait for health, promotion, resume or the stagger delay.
//
// Vocabulary, per group g and deployment d of the job's version:
//   - fresh placement: a Place on a node where g has no allocation of d;
//     never limited by max_parallel;
//   - retry: a Place on a node whose allocation of d is terminal (failed,
//     lost, stopped); limited like a destructive update, and a canary when
//     the allocation it retries was one;
//   - in flight: a live allocation of d that stays (in Ignore) and is not
//     healthy: pending, or marked unhealthy (an unhealthy allocation keeps
//     its slot until the deployment fails or a newer version replaces it);
//   - budget: max_parallel minus the allocations in flight;
//   - wave: the limited work (retries, destructive updates, canaries)
//     placed by one evaluation.

// groupProgress is what the allocations of deployment d say about one
// group.
type groupProgress struct {
	inFlight     int // live allocations of d kept and not healthy
	liveCanaries int // live canaries of d kept
	// liveCanaryNodes are the nodes of those live canaries.
	liveCanaryNodes []string
	lastWave        int64 // newest CreateTime of an allocation of d (unix ns), or 0
	// canaryIDs are the group's PlacedCanaries: the stored list without
	// IDs of unknown allocations (a partly rejected plan may have listed
	// them), then canaries of d the list missed, oldest first.
	canaryIDs []string
	// retries maps a node where g has a terminal allocation of d to
	// whether one of those was a canary.
	retries map[string]bool
}

// gateGroups gates every group that uses deployment d and creates the
// missing group states. It returns the earliest time a group held back by
// its stagger may start its next wave, or zero.
func (r *systemReconciler) gateGroups(d *structs.Deployment, allocs map[string][]*structs.Allocation) time.Time {
	var followup time.Time
	for _, g := range r.groups {
		if !g.usesDeployment() {
			continue
		}
		st := d.TaskGroups[g.Name]
		if st == nil {
			st = newDeploymentState(g.Group, r.in.Now)
			d.TaskGroups[g.Name] = st
		}
		at := r.gateGroup(g, d, st, allocs[g.Name])
		if !at.IsZero() && (followup.IsZero() || at.Before(followup)) {
			followup = at
		}
	}
	return followup
}

// gateGroup gates g (see system_rollout.go) and updates DesiredCanaries and
// PlacedCanaries of st. allocs are g's allocations of d.
func (r *systemReconciler) gateGroup(g *SystemGroupResult, d *structs.Deployment, st *structs.DeploymentState, allocs []*structs.Allocation) time.Time {
	p := progressOf(g, d, st, allocs)
	if !st.Promoted {
		// Invariants: promotion is one-way and freezes DesiredCanaries.
		st.DesiredCanaries = r.desiredCanaries(g, p)
	}
	st.PlacedCanaries = p.canaryIDs
	switch {
	case d.Status != structs.DeploymentStatusRunning:
		// Assumptions: paused (or a multi-region wait state, which Drover
		// does not use) means the operator wants the rollout to stand
		// still: no placement, canary, replacement or in-place update of
		// the version. Stops (drains, lost nodes) still happen.
		g.holdAll()
		return time.Time{}
	case st.DesiredCanaries > 0 && !st.Promoted:
		return r.gateCanaries(g, st, p)
	case structs.GateHoldsWave(g.Group, st):
		// Invariants: a group with a metric or webhook gate starts no
		// wave after its first until the deployment watcher recorded
		// that its gates passed at its current healthy count
		// (structs.DeploymentGate.PassedAt); fresh placements and
		// in-place updates go ahead as in any wave.
		r.gateWavesWithin(g, p, 0)
		return time.Time{}
	}
	return r.gateWaves(g, p)
}

// progressOf reads g's allocations of d. A deployment still to be created
// (no ID) has none.
func progressOf(g *SystemGroupResult, d *structs.Deployment, st *structs.DeploymentState, allocs []*structs.Allocation) groupProgress {
	p := groupProgress{retries: map[string]bool{}}
	if d.ID == "" {
		return p
	}
	listed := make(map[string]bool, len(st.PlacedCanaries))
	for _, id := range st.PlacedCanaries {
		listed[id] = true
	}
	known := make(map[string]bool, len(allocs))
	var unlisted []*structs.Allocation
	for _, a := range allocs {
		known[a.ID] = true
		p.lastWave = max(p.lastWave, a.CreateTime)
		canary := listed[a.ID] || isCanary(a)
		if canary && !listed[a.ID] {
			unlisted = append(unlisted, a)
		}
		if a.Terminal() {
			p.retries[a.NodeID] = p.retries[a.NodeID] || canary
		}
	}
	for _, id := range st.PlacedCanaries {
		if known[id] {
			p.canaryIDs = append(p.canaryIDs, id)
		}
	}
	slices.SortFunc(unlisted, func(a, b *structs.Allocation) int {
		return cmp.Or(cmp.Compare(a.CreateIndex, b.CreateIndex), cmp.Compare(a.ID, b.ID))
	})
	for _, a := range unlisted {
		p.canaryIDs = append(p.canaryIDs, a.ID)
	}
	for _, a := range g.Ignore {
		if a.DeploymentID != d.ID || a.Terminal() {
			continue
		}
		if !a.DeploymentStatus.IsHealthy() {
			p.inFlight++
		}
		if listed[a.ID] || isCanary(a) {
			p.liveCanaries++
			p.liveCanaryNodes = append(p.liveCanaryNodes, a.NodeID)
		}
	}
	return p
}

func isCanary(a *structs.Allocation) bool {
	return a.DeploymentStatus != nil && a.DeploymentStatus.Canary
}

// desiredCanaries returns DesiredCanaries of an unpromoted group: the
// canary percentage of the feasible nodes that need a destructive update
// (those running a canary or retrying a failed one included, so the number
// holds while canaries are placed), rounded up, capped by max_parallel, and
// never below the canaries already running; drover.canary_count and
// drover.canary_selector change the number (desiredCanaryCount).
//
// Assumptions: job version 0 has nothing to compare against, so it gets no
// canaries, nor does a rollout back to a stable spec (RevertsToStable). The percentage is validated to 0..100 when the job is
// registered; it is clamped here so that a job stored without validation
// cannot ask for more canaries than there are nodes.
func (r *systemReconciler) desiredCanaries(g *SystemGroupResult, p groupProgress) int {
	u := g.Group.Update
	pct := min(max(u.Canary, 0), 100)
	t := canaryTargetOf(g.Group)
	if (pct == 0 && t.count == 0) || r.job.Version == 0 || r.in.RevertsToStable {
		return p.liveCanaries
	}
	nodes := len(g.DestructiveUpdate) + p.liveCanaries
	for _, pl := range g.Place {
		if p.retries[pl.Node.ID] {
			nodes++
		}
	}
	want := desiredCanaryCount(t, pct, nodes, r.canaryEligible(g, p, t), g.waveSize())
	return max(want, p.liveCanaries)
}

// budget is how many limited placements g may start now; the wave size
// is update { max_parallel } or drover.max_parallel (system_waves.go).
func budget(g *SystemGroupResult, p groupProgress) int {
	return max(0, g.waveSize()-p.inFlight)
}

// staggerHolds reports whether g's stagger forbids a wave now, and when
// the next one may start.
//
// Assumptions: a wave starts when its allocations are created, so the
// newest CreateTime of the deployment's allocations is the start of the
// last wave; fresh placements move it too.
func (r *systemReconciler) staggerHolds(g *SystemGroupResult, p groupProgress) (bool, time.Time) {
	s := g.Group.Update.Stagger
	if s <= 0 || p.lastWave == 0 {
		return false, time.Time{}
	}
	next := time.Unix(0, p.lastWave).Add(s)
	return r.in.Now.Before(next), next
}

// gateCanaries handles a group whose canaries await promotion: only
// canaries are placed, up to DesiredCanaries and the budget.
//
// Invariants: while canarying, the version reaches no node but canary
// nodes: fresh placements (nodes that joined), other destructive updates,
// retries of non-canaries and in-place updates wait for promotion. Live
// canaries + new canaries ≤ DesiredCanaries ≤ max_parallel, except that a
// drover.canary_count may exceed max_parallel (canaries then start
// max_parallel at a time, within the budget).
func (r *systemReconciler) gateCanaries(g *SystemGroupResult, st *structs.DeploymentState, p groupProgress) time.Time {
	var followup time.Time
	n := min(st.DesiredCanaries-p.liveCanaries, budget(g, p))
	if n > 0 {
		if hold, next := r.staggerHolds(g, p); hold {
			n, followup = 0, next
		}
	}
	chosen := r.pickCanaries(g, p, n)
	g.Place = g.filterPlacements(g.Place, func(pl SystemPlacement) (bool, bool) {
		return chosen[pl.Node.ID], true
	})
	g.DestructiveUpdate = g.filterPlacements(g.DestructiveUpdate, func(pl SystemPlacement) (bool, bool) {
		return chosen[pl.Node.ID], true
	})
	g.holdInplace()
	return followup
}

// pickCanaries chooses up to n canary nodes: nodes retrying a failed
// canary, then nodes needing a destructive update that ran a canary of the
// group before (in any deployment), then the others, each in node ID order;
// the group's selector and spread then choose among them
// (chooseCanaryNodes).
//
// Assumptions: operators watch the nodes that canaried the last version;
// reusing them keeps the blast radius on the same machines.
func (r *systemReconciler) pickCanaries(g *SystemGroupResult, p groupProgress, n int) map[string]bool {
	chosen := map[string]bool{}
	if n <= 0 {
		return chosen
	}
	var candidates []*structs.Node
	for _, pl := range g.Place {
		if p.retries[pl.Node.ID] {
			candidates = append(candidates, pl.Node)
		}
	}
	before := r.canaryNodes(g.Name)
	var others []*structs.Node
	for _, pl := range g.DestructiveUpdate {
		if before[pl.Node.ID] {
			candidates = append(candidates, pl.Node)
		} else {
			others = append(others, pl.Node)
		}
	}
	t := canaryTargetOf(g.Group)
	for _, id := range chooseCanaryNodes(t, append(candidates, others...), r.liveCanaryNodes(p, t), n) {
		chosen[id] = true
	}
	return chosen
}

// canaryNodes returns the nodes where group ran a canary: allocations of
// the job flagged canary, and those the input deployment (of any version)
// lists as placed canaries.
func (r *systemReconciler) canaryNodes(group string) map[string]bool {
	listed := map[string]bool{}
	if d := r.in.Deployment; d != nil && d.TaskGroups[group] != nil {
		for _, id := range d.TaskGroups[group].PlacedCanaries {
			listed[id] = true
		}
	}
	nodes := map[string]bool{}
	for _, a := range r.in.Allocs {
		if a.TaskGroup == group && (isCanary(a) || listed[a.ID]) {
			nodes[a.NodeID] = true
		}
	}
	return nodes
}

// gateWaves handles a group rolling out in waves: fresh placements and
// in-place updates go ahead, retries then destructive updates fill the
// budget, in node ID order.
//
// Invariants: allocations in flight + limited placements ≤ max_parallel;
// nothing limited starts within stagger of the last wave.
func (r *systemReconciler) gateWaves(g *SystemGroupResult, p groupProgress) time.Time {
	return r.gateWavesWithin(g, p, budget(g, p))
}

// gateWavesWithin is gateWaves with n limited placements allowed.
func (r *systemReconciler) gateWavesWithin(g *SystemGroupResult, p groupProgress, n int) time.Time {
	var followup time.Time
	limited := len(g.DestructiveUpdate)
	for _, pl := range g.Place {
		if _, retry := p.retries[pl.Node.ID]; retry {
			limited++
		}
	}
	if n > 0 && limited > 0 {
		if hold, next := r.staggerHolds(g, p); hold {
			n, followup = 0, next
		}
	}
	g.Place = g.filterPlacements(g.Place, func(pl SystemPlacement) (bool, bool) {
		if _, retry := p.retries[pl.Node.ID]; !retry {
			return true, false
		}
		n--
		return n >= 0, false
	})
	g.DestructiveUpdate = g.filterPlacements(g.DestructiveUpdate, func(SystemPlacement) (bool, bool) {
		n--
		return n >= 0, false
	})
	return followup
}

// filterPlacements returns the placements of ps that decide (called in
// order) lets go ahead, marked canary as it says; the others are deferred
// and their Previous allocations kept.
func (g *SystemGroupResult) filterPlacements(ps []SystemPlacement, decide func(SystemPlacement) (ok, canary bool)) []SystemPlacement {
	out := ps[:0] // in place: out never overtakes the element read
	for _, pl := range ps {
		ok, canary := decide(pl)
		if !ok {
			g.deferPlacement(pl)
			continue
		}
		pl.Canary = canary
		out = append(out, pl)
	}
	return out
}

// holdAll defers every placement and keeps every allocation to update.
func (g *SystemGroupResult) holdAll() {
	for _, pl := range g.Place {
		g.deferPlacement(pl)
	}
	for _, pl := range g.DestructiveUpdate {
		g.deferPlacement(pl)
	}
	g.Place, g.DestructiveUpdate = nil, nil
	g.holdInplace()
}

// holdInplace keeps the allocations that an in-place update would move to
// the version as they are.
func (g *SystemGroupResult) holdInplace() {
	g.Ignore = append(g.Ignore, g.InplaceUpdate...)
	g.InplaceUpdate = nil
}

func (g *SystemGroupResult) deferPlacement(pl SystemPlacement) {
	g.Deferred = append(g.Deferred, pl)
	if pl.Previous != nil {
		g.Ignore = append(g.Ignore, pl.Previous)
	}
}

func (g *SystemGroupResult) usesDeployment() bool {
	return g.Group != nil && g.Group.UsesDeployment()
}
