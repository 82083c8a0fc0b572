package scheduler

import (
	"fmt"
	"slices"

	"github.com/drover-project/drover/nomad/structs"
)

// systemPlanInput is what buildSystemPlan turns into a plan.
type systemPlanInput struct {
	eval   *structs.Evaluation
	job    *structs.Job // current version, or nil when purged
	nodes  []*structs.Node
	stored *structs.Deployment   // the job's latest deployment, or nil
	result SystemReconcileResult // owned by buildSystemPlan from now on
	state  State                 // read for the other allocations of placement nodes
	index  uint64                // state index planned against
	newID  func() string
}

// systemPlanBuilder carries out a SystemReconcileResult as a plan.
// Placements are checked against each node's resources and ports; those
// that do not fit are dropped and reported, and a destructive update that
// does not fit keeps its old allocation running.
type systemPlanBuilder struct {
	systemPlanInput
	plan       *structs.Plan
	deployment *structs.Deployment // joined by deployment groups, or nil
	// proposed holds the live allocations of nodes a later group may
	// place on again; written only while remember is set.
	proposed map[string][]*structs.Allocation
	remember bool // a later group has placements: keep proposed up to date
	// planned is set when the plan held allocations before the current
	// group's placements; unset, no node has any yet (a node appears at
	// most once in a group's placements).
	planned  bool
	stopped  bool                  // the same for stops
	scratch  []*structs.Allocation // othersOn's list while not remembering
	failures map[string]int
	arena    *resourceArena            // the resources of the current group's placements
	ptrs     slab[*structs.Allocation] // the one-element lists of fresh nodes
	out      planOutcome
}

// buildSystemPlan turns in.result into a plan. It reads only through in.state.
func buildSystemPlan(in systemPlanInput) (planOutcome, error) {
	b := &systemPlanBuilder{
		systemPlanInput: in,
		failures:        map[string]int{},
		scratch:         make([]*structs.Allocation, 0, 8),
		out:             planOutcome{queued: map[string]int{}, followupAt: in.result.FollowupAt},
	}
	b.plan = newPlan(in.eval, in.job, in.result.DesiredTGUpdates, in.result.DeploymentUpdates, in.index)
	b.out.plan = b.plan
	// Sized up front: a system job places on every node, and growing a
	// map of 10,000 nodes rehashes it again and again.
	if n := placements(in.result); n > 0 {
		b.plan.NodeAllocation = make(map[string][]*structs.Allocation, n)
	}
	b.deployment = joinedDeployment(in.result.Deployment, in.newID)
	// Stops and in-place updates first: placements see the room they free.
	for _, g := range in.result.Groups {
		b.appendStops(g)
	}
	base := newMetricBase(in.job, in.nodes)
	for i, g := range in.result.Groups {
		// A node appears at most once in a group's placements, so what
		// one group learns about a node is only read by a later group:
		// a system job's only group keeps no map of every node.
		b.remember = slices.ContainsFunc(in.result.Groups[i+1:], hasPlacements)
		if b.remember && b.proposed == nil {
			b.proposed = make(map[string][]*structs.Allocation, placements(in.result))
		}
		if err := b.appendPlacements(g, base); err != nil {
			return planOutcome{}, err
		}
	}
	b.finishDeployment()
	return b.out, nil
}

// placements counts the new allocations and in-place updates of r.
func placements(r SystemReconcileResult) int {
	n := 0
	for _, g := range r.Groups {
		n += len(g.Place) + len(g.DestructiveUpdate) + len(g.InplaceUpdate)
	}
	return n
}

// hasPlacements reports whether g places or replaces allocations.
func hasPlacements(g *SystemGroupResult) bool {
	return g.Group != nil && len(g.Place)+len(g.DestructiveUpdate) > 0
}

// appendStops adds g's stops, lost and unknown allocations and in-place
// updates.
func (b *systemPlanBuilder) appendStops(g *SystemGroupResult) {
	for _, s := range g.Stop {
		b.plan.AppendStop(s.Alloc, s.Reason)
	}
	for _, a := range g.Lost {
		appendLost(b.plan, a)
	}
	for _, a := range g.Unknown {
		appendUnknown(b.plan, a)
	}
	for _, a := range g.InplaceUpdate {
		b.plan.AppendAlloc(inplaceCopy(a, b.job, b.eval.ID, deploymentIDFor(b.deployment, g.Group)))
	}
}

// appendPlacements adds g's new allocations that fit, replacing Previous
// allocations of destructive updates.
func (b *systemPlanBuilder) appendPlacements(g *SystemGroupResult, base metricBase) error {
	if !hasPlacements(g) {
		return nil
	}
	b.planned = len(b.plan.NodeAllocation) > 0
	b.stopped = len(b.plan.NodeUpdate) > 0
	metric := base.forGroup(g)
	proto := b.allocPrototype(g.Group, metric)
	// One slab for the group's new allocations: a system job places one
	// per node. A placement that does not fit leaves its element unused.
	n := len(g.DestructiveUpdate) + len(g.Place)
	slab := make([]structs.Allocation, n)
	b.arena = newResourceArena(g.Group, n)
	b.ptrs.chunk = n
	i := 0
	for _, set := range [][]SystemPlacement{g.DestructiveUpdate, g.Place} {
		for _, p := range set {
			slab[i] = proto
			if err := b.place(g, p, &slab[i], base); err != nil {
				return err
			}
			i++
		}
	}
	return nil
}

// allocPrototype holds the fields every new allocation of tg shares.
// metric is shared by those allocations and must not be modified.
func (b *systemPlanBuilder) allocPrototype(tg *structs.TaskGroup, metric *structs.AllocationMetric) structs.Allocation {
	return structs.Allocation{
		Namespace:     b.job.Namespace,
		EvalID:        b.eval.ID,
		Name:          b.job.ID + "." + tg.Name + "[0]",
		JobID:         b.job.ID,
		JobVersion:    b.job.Version,
		TaskGroup:     tg.Name,
		Metrics:       metric,
		DesiredStatus: structs.AllocDesiredStatusRun,
		ClientStatus:  structs.AllocClientStatusPending,
		DeploymentID:  deploymentIDFor(b.deployment, tg),
	}
}

// place adds one new allocation, a (a copy of the group's prototype), when
// it fits on its node.
func (b *systemPlanBuilder) place(g *SystemGroupResult, p SystemPlacement, a *structs.Allocation, base metricBase) error {
	exclude := p.Previous
	if p.Surge {
		exclude = nil // Previous keeps running beside the new allocation
	}
	others, err := b.othersOn(p.Node.ID, exclude)
	if err != nil {
		return err
	}
	a.AllocatedResources, a.NodeID, a.NodeName = nil, p.Node.ID, p.Node.Name
	ar, dim := allocateResources(p.Node, g.Group, others, b.arena)
	var withA []*structs.Allocation
	if ar != nil {
		a.AllocatedResources = ar
		withA = b.ptrs.take(len(others) + 1)
		copy(withA, others)
		withA[len(others)] = a
		var fit bool
		fit, dim = structs.AllocsFit(p.Node, withA)
		if fit {
			dim = ""
		}
	}
	if dim != "" {
		// Invariants: a replacement that does not fit leaves Previous
		// running: its stop is only added with the replacement.
		b.fail(g, p.Node, dim, base)
		return nil
	}
	a.ID = b.newID()
	if p.Canary {
		markCanary(a, b.deployment, g.Name)
	}
	switch {
	case p.Surge:
		// Invariants: Previous keeps running; its stop comes with a later
		// evaluation, once this allocation is healthy (system_surge.go).
	case p.Previous != nil:
		a.PreviousAllocation = p.Previous.ID
		b.plan.AppendStop(p.Previous, DescUpdating)
	case p.Lingering != nil:
		a.PreviousAllocation = p.Lingering.ID
	}
	// Invariants: others holds the plan's allocations on the node (in-place
	// updates and earlier groups' placements; Previous is never among
	// them), so no others means the plan has none there yet.
	if len(others) == 0 && b.plan.NodeAllocation != nil {
		b.plan.NodeAllocation[a.NodeID] = withA // just [a], capped
	} else {
		b.plan.AppendAlloc(a)
	}
	if b.remember {
		b.proposed[p.Node.ID] = withA
	}
	return nil
}

// othersOn returns the live allocations node nodeID would run if the plan
// so far committed, without exclude (or nil). The slice is owned by the
// builder and valid until the next call; callers append to a clipped
// copy.
func (b *systemPlanBuilder) othersOn(nodeID string, exclude *structs.Allocation) ([]*structs.Allocation, error) {
	cur, ok := b.proposed[nodeID] // nil map while no group remembered
	if !ok {
		stored, err := b.state.AllocsByNode(nil, nodeID)
		if err != nil {
			return nil, fmt.Errorf("scheduler: read allocs of node %q: %w", nodeID, err)
		}
		if !b.remember {
			// Read once: built leaving exclude out, into the scratch list
			// which the next node reuses.
			b.scratch = b.liveAfterPlan(nodeID, stored, exclude, b.scratch[:0])
			return b.scratch, nil
		}
		cur = b.liveAfterPlan(nodeID, stored, nil, nil)
		b.proposed[nodeID] = cur
	}
	if exclude == nil {
		return cur, nil
	}
	out := make([]*structs.Allocation, 0, len(cur))
	for _, a := range cur {
		if a.ID != exclude.ID {
			out = append(out, a)
		}
	}
	return out, nil
}

// liveAfterPlan is stored minus what the plan stops or updates on the
// node, plus the plan's allocations there, without exclude (or nil). With
// buf (not nil) it always appends to buf; without, it may return the
// plan's own list of the node.
func (b *systemPlanBuilder) liveAfterPlan(nodeID string, stored []*structs.Allocation, exclude *structs.Allocation, buf []*structs.Allocation) []*structs.Allocation {
	var updates, stops []*structs.Allocation
	if b.planned {
		updates = b.plan.NodeAllocation[nodeID]
	}
	if len(stored) == 0 && exclude == nil && buf == nil {
		return updates // nil on a fresh node: nothing to copy
	}
	if b.stopped {
		stops = b.plan.NodeUpdate[nodeID]
	}
	gone := func(id string) bool {
		return slices.ContainsFunc(stops, func(a *structs.Allocation) bool { return a.ID == id }) ||
			slices.ContainsFunc(updates, func(a *structs.Allocation) bool { return a.ID == id })
	}
	kept := func(a *structs.Allocation) bool { return exclude == nil || a.ID != exclude.ID }
	out := buf
	if out == nil {
		out = make([]*structs.Allocation, 0, len(stored)+len(updates)+1)
	}
	for _, a := range stored {
		if !a.Terminal() && !gone(a.ID) && kept(a) {
			out = append(out, a)
		}
	}
	for _, a := range updates {
		if kept(a) {
			out = append(out, a)
		}
	}
	return out
}

// fail records a placement of g on node that did not fit.
func (b *systemPlanBuilder) fail(g *SystemGroupResult, node *structs.Node, dim string, base metricBase) {
	b.failures[g.Name]++
	if b.out.failed == nil {
		b.out.failed = map[string]*structs.AllocationMetric{}
	}
	m := b.out.failed[g.Name]
	if m == nil {
		m = base.forGroup(g)
		m.DimensionExhausted, m.ClassExhausted = map[string]int{}, map[string]int{}
		b.out.failed[g.Name] = m
	} else {
		m.CoalescedFailures++
	}
	m.NodesExhausted++
	m.DimensionExhausted[dim]++
	if node.NodeClass != "" {
		m.ClassExhausted[node.NodeClass]++
	}
}

// finishDeployment subtracts failed placements from the deployment's counts
// and keeps the deployment in the plan only when it is new and joined, or
// its counts changed.
func (b *systemPlanBuilder) finishDeployment() {
	for _, g := range b.result.Groups {
		if g.Group != nil {
			b.out.queued[g.Name] = b.failures[g.Name]
		}
	}
	d := b.deployment
	if d == nil {
		return
	}
	joined := 0
	for name, st := range d.TaskGroups {
		st.DesiredTotal -= b.failures[name]
		st.PlacedAllocs -= b.failures[name]
		joined += st.PlacedAllocs
	}
	isNew := b.stored == nil || b.stored.ID != d.ID
	switch {
	case isNew && joined == 0:
		return // nothing joined: no deployment yet
	case isNew || countsChanged(b.stored, d):
		b.plan.Deployment = d
	}
	b.out.deploymentID = d.ID
}
