package scheduler

import (
	"cmp"
	"slices"
	"time"

	"github.com/drover-project/drover/nomad/structs"
)

// SystemReconcileInput is everything the system (node) reconciler decides
// from. The reconciler reads it and never modifies or retains it.
type SystemReconcileInput struct {
	// Job is the job's current version, or nil when the job was purged. A
	// stopped job (Job.Stop) is treated like a purged one.
	Job *structs.Job
	// Nodes are all registered nodes, in any order.
	Nodes []*structs.Node
	// Allocs are all allocations of the job, terminal ones included. Their
	// Job field is the version they run, or nil when unknown.
	Allocs []*structs.Allocation
	// Deployment is the job's latest deployment, or nil.
	Deployment *structs.Deployment
	// Now is the time decisions are made at.
	Now time.Time
	// Feasible judges constraints and drivers; nil accepts every node.
	Feasible FeasibleFunc
	// RevertsToStable is set when Job's spec equals an earlier version that
	// is stable (an auto-revert or `job revert` to a known-good version).
	// Such a rollout gets no canaries: the spec has already proven itself,
	// and a rollback must not wait for a manual promotion.
	RevertsToStable bool
}

// SystemReconcileResult is the system reconciler's decision. Every set is
// sorted by node ID, then allocation ID, so equal inputs give equal
// results.
type SystemReconcileResult struct {
	// Groups holds one entry per task group of the job or of a live
	// allocation, sorted by name.
	Groups []*SystemGroupResult
	// DesiredTGUpdates counts the decisions per group.
	DesiredTGUpdates map[string]*structs.DesiredUpdates
	// Deployment is the deployment of Job's version that placements and
	// in-place updates of deployment groups join, with DesiredTotal,
	// PlacedAllocs, DesiredCanaries, PlacedCanaries (without this
	// decision's canaries, whose IDs the plan builder assigns) and the
	// status description recomputed assuming every placement succeeds; or
	// nil when they join none. A deployment to create has an empty ID (the
	// plan builder assigns one); otherwise it is a copy of
	// Input.Deployment.
	Deployment *structs.Deployment
	// DeploymentUpdates cancel deployments of older versions or of a
	// stopped job.
	DeploymentUpdates []*structs.DeploymentStatusUpdate
	// FollowupAt is when a group that the stagger held back may start its
	// next wave, or the earliest lost_after deadline of an unknown
	// allocation, whichever comes first; or zero. The scheduler creates an evaluation for then.
	FollowupAt time.Time
}

// SystemGroupResult is the decision for one task group, as named sets.
//
// Invariants: every live allocation of the group is in exactly one of
// InplaceUpdate, DestructiveUpdate (as Previous), Stop, Lost, Unknown and
// Ignore;
// Ignore may also hold a terminal sysbatch allocation that keeps its node
// from running again. A node appears at most once across Place,
// DestructiveUpdate and Deferred, and never with a kept allocation except
// as the Previous of a deferred replacement, or (drover.surge) as the
// Previous of a surge replacement, or the older allocation kept in Ignore
// beside one of the job's version that is not yet healthy.
type SystemGroupResult struct {
	Name string
	// Group is the job's group, or nil when the job is stopped or purged or
	// no longer has a group of this name.
	Group *structs.TaskGroup
	// Place lists nodes that get a new allocation (Previous is nil).
	Place []SystemPlacement
	// InplaceUpdate lists allocations to update to Job's version where they
	// run, keeping their ID.
	InplaceUpdate []*structs.Allocation
	// DestructiveUpdate lists replacements: Previous stops and a new
	// allocation is placed on the same node.
	DestructiveUpdate []SystemPlacement
	// Deferred lists placements and replacements the group's deployment
	// holds back for now (max_parallel, stagger, canaries awaiting
	// promotion, paused, failed or cancelled); the Previous allocation of
	// a deferred replacement is in Ignore. In-place updates held back are
	// only in Ignore.
	Deferred []SystemPlacement
	// Stop lists allocations to stop, with why.
	Stop []AllocStop
	// Lost lists live allocations on down or missing nodes, to stop and
	// mark lost.
	Lost []*structs.Allocation
	// Unknown lists live allocations to mark unknown (disconnect.go): on
	// disconnected nodes within their group's lost_after, or on
	// disconnected or down nodes with replace = false; they keep running.
	Unknown []*structs.Allocation
	// Ignore lists allocations left as they are.
	Ignore []*structs.Allocation
	// Filtered lists ready candidate nodes that Feasible rejected. They
	// are not placement failures.
	Filtered []SystemNodeFilter
	// NodesEvaluated counts the ready candidate nodes judged by Feasible.
	NodesEvaluated int
	// DesiredTotal counts the nodes that run Job's version of the group
	// once the decision is carried out (before resource failures).
	DesiredTotal int
}

// SystemPlacement is one new allocation of a group on Node. Previous is the
// allocation it replaces (destructive update), or nil. Canary marks a
// canary of the deployment.
type SystemPlacement struct {
	Node     *structs.Node
	Previous *structs.Allocation
	Canary   bool
	// Lingering, on a placement without Previous, is an allocation of the
	// group on the node that the server already stopped but whose client
	// still runs it (its stop is held for a replacement whose prepare
	// failed). The new allocation names it as its previous allocation so
	// the client stops it before starting the new one.
	Lingering *structs.Allocation
	// Surge, on a replacement, starts the new allocation beside Previous,
	// which keeps running until the new one is healthy (system_surge.go):
	// the plan neither stops Previous nor names it PreviousAllocation.
	Surge bool
}

// SystemNodeFilter is a node Feasible rejected and the reason it gave.
type SystemNodeFilter struct {
	Node   *structs.Node
	Reason string
}

// nodeGroup keys allocations by node and task group.
type nodeGroup struct{ node, group string }

// nodeClass is what a node's status means for a job's allocations.
type nodeClass uint8

const (
	nodeGone     nodeClass = iota + 1 // missing or down: live allocations are lost
	nodeDraining                      // live allocations left to the drainer; no placements
	nodeOutside                       // outside the job's datacenters or pool
	nodeNotReady                      // initializing or ineligible: allocations stay
	nodeReady                         // a placement candidate
	// nodeDisconnected: missed its heartbeat; live allocations are unknown
	// within their group's lost_after, else lost (disconnect.go).
	nodeDisconnected
)

// systemReconciler holds the indexes of one ReconcileSystem call.
type systemReconciler struct {
	in       SystemReconcileInput
	job      *structs.Job // nil when stopped or purged
	sysbatch bool
	groups   []*SystemGroupResult                // sorted by name
	allocs   map[nodeGroup][]*structs.Allocation // by node ID and group
	dcMatch  map[string]bool                     // datacenter → matches the job
	inPlace  map[*structs.TaskGroup]bool         // old group → in-place updatable to the job's
	live     map[string]int                      // live allocations per group
	// followupAt is the earliest lost_after deadline of an unknown
	// allocation, or zero.
	followupAt time.Time
}

// ReconcileSystem decides, for every task group of in.Job and every node,
// whether to place, update, stop or keep allocations. It is a pure
// function of in.
//
// Rules, per group and node (one allocation per group per node):
//   - node missing or down: live allocations are lost;
//   - node disconnected: live allocations are unknown within their group's
//     lost_after (not replaced), lost past it; with replace = false they
//     stay unknown, on a down node too, until the node reconnects;
//   - job stopped or purged, or group removed: live allocations stop;
//   - node draining: live allocations stop, nothing is placed;
//   - node outside the job's datacenters or node pool: live allocations stop;
//   - node initializing or ineligible: allocations stay; an older version
//     is updated in place when that is possible and the node is feasible;
//     nothing is placed and nothing is replaced destructively;
//   - node ready but infeasible (constraints, drivers): live allocations
//     stop, nothing is placed;
//   - node ready and feasible: an allocation of the current version stays,
//     an older one is updated in place or destructively (per
//     TaskGroup.UpdateType), and a node without one gets a placement,
//     except that sysbatch does not run the current version again on a
//     node where it completed or failed.
//
// Extra live allocations of a group on one node stop (the newest of the
// current version is kept). Terminal allocations are otherwise ignored.
//
// Then the groups that use a deployment are gated (system_deployment.go,
// system_rollout.go): fresh placements, in-place updates, and destructive
// updates up to max_parallel minus the allocations not yet healthy, as
// canaries first when the update block asks for them; nothing while the
// deployment is paused, failed or cancelled.
func ReconcileSystem(in SystemReconcileInput) SystemReconcileResult {
	r := newSystemReconciler(in)
	r.eachNode(func(id string, node *structs.Node, class nodeClass) int {
		found := 0
		for _, g := range r.groups {
			allocs, ok := r.allocs[nodeGroup{node: id, group: g.Name}]
			if ok {
				found++
			}
			r.visit(g, node, class, allocs)
		}
		return found
	})
	return r.result()
}

func newSystemReconciler(in SystemReconcileInput) *systemReconciler {
	r := &systemReconciler{
		in:      in,
		allocs:  make(map[nodeGroup][]*structs.Allocation, len(in.Allocs)),
		dcMatch: map[string]bool{},
		inPlace: map[*structs.TaskGroup]bool{},
	}
	if !in.Job.Stopped() {
		r.job = in.Job
		r.sysbatch = in.Job.Type == structs.JobTypeSysBatch
	}
	names := map[string]*structs.TaskGroup{}
	if r.job != nil {
		for _, tg := range r.job.TaskGroups {
			names[tg.Name] = tg
		}
	}
	live := map[string]int{} // live allocations per group
	// Most keys hold one allocation: their lists are cut from one slab
	// (capped, so a second allocation of a key copies its list).
	one := slab[*structs.Allocation]{chunk: len(in.Allocs)}
	for _, a := range in.Allocs {
		k := nodeGroup{node: a.NodeID, group: a.TaskGroup}
		if cur, ok := r.allocs[k]; ok {
			r.allocs[k] = append(cur, a)
		} else {
			l := one.take(1)
			l[0] = a
			r.allocs[k] = l
		}
		if a.Terminal() {
			continue
		}
		live[a.TaskGroup]++
		if _, ok := names[a.TaskGroup]; !ok {
			names[a.TaskGroup] = nil
		}
	}
	for name, tg := range names {
		r.groups = append(r.groups, &SystemGroupResult{Name: name, Group: tg})
	}
	r.live = live
	slices.SortFunc(r.groups, func(a, b *SystemGroupResult) int { return cmp.Compare(a.Name, b.Name) })
	return r
}

// eachNode calls fn for all nodes in order of ID, with the node's class,
// and then for every node an allocation names that is missing (nil node,
// nodeGone), in order of ID. fn returns how many of r.allocs' keys it read
// for the node: when all keys were read no node is missing, and the
// allocations are not searched. A duplicate ID keeps its last node. Before
// the first call it sizes the groups' placements (sizePlace).
//
// Invariants: a missing node only adds to its groups' Lost sets, which
// result sorts by node, so visiting missing nodes last decides the same.
func (r *systemReconciler) eachNode(fn func(id string, node *structs.Node, class nodeClass) int) {
	nodes := r.in.Nodes
	// The state store gives nodes sorted by ID: then the order is theirs,
	// without a map of every node.
	if !slices.IsSortedFunc(nodes, func(a, b *structs.Node) int { return cmp.Compare(a.ID, b.ID) }) ||
		hasAdjacentDup(nodes) {
		idx := make(map[string]*structs.Node, len(nodes))
		for _, n := range nodes {
			idx[n.ID] = n
		}
		nodes = make([]*structs.Node, 0, len(idx))
		for _, n := range idx {
			nodes = append(nodes, n)
		}
		slices.SortFunc(nodes, func(a, b *structs.Node) int { return cmp.Compare(a.ID, b.ID) })
	}
	classes := make([]nodeClass, len(nodes))
	ready := 0
	for i, n := range nodes {
		if classes[i] = r.classify(n); classes[i] == nodeReady {
			ready++
		}
	}
	r.sizePlace(ready)
	read := 0
	for i, n := range nodes {
		read += fn(n.ID, n, classes[i])
	}
	if read == len(r.allocs) {
		return
	}
	// Some allocation is on a missing node (or of a group no longer
	// visited): find the missing nodes by binary search.
	byID := func(a *structs.Node, id string) int { return cmp.Compare(a.ID, id) }
	var missing []string
	seen := map[string]bool{}
	for _, a := range r.in.Allocs {
		if _, ok := slices.BinarySearchFunc(nodes, a.NodeID, byID); ok || seen[a.NodeID] {
			continue
		}
		seen[a.NodeID] = true
		missing = append(missing, a.NodeID)
	}
	slices.Sort(missing)
	for _, id := range missing {
		fn(id, nil, r.classify(nil))
	}
}

// sizePlace sizes the placements of the job's groups once instead of
// growing them over every node: only a ready node in the job's scope
// without a live allocation of the group gets one.
func (r *systemReconciler) sizePlace(ready int) {
	for _, g := range r.groups {
		if g.Group != nil && g.Place == nil {
			if n := min(ready, len(r.in.Nodes)-r.live[g.Name]); n > 0 {
				g.Place = make([]SystemPlacement, 0, n)
			}
		}
	}
}

// hasAdjacentDup reports whether two neighbours of nodes share an ID.
func hasAdjacentDup(nodes []*structs.Node) bool {
	for i := 1; i < len(nodes); i++ {
		if nodes[i].ID == nodes[i-1].ID {
			return true
		}
	}
	return false
}

// classify says what node (nil when missing) means for the job.
func (r *systemReconciler) classify(node *structs.Node) nodeClass {
	switch {
	case node == nil || node.Status == structs.NodeStatusDown:
		return nodeGone
	case node.Status == structs.NodeStatusDisconnected:
		return nodeDisconnected
	case node.Drain:
		return nodeDraining
	case r.job == nil:
		return nodeOutside // no placements anywhere
	case !r.inJobScope(node):
		return nodeOutside
	case !node.Ready():
		return nodeNotReady
	}
	return nodeReady
}

// inJobScope reports whether node is in the job's datacenters and pool.
func (r *systemReconciler) inJobScope(node *structs.Node) bool {
	if !PoolMatches(r.job.NodePool, node.NodePool) {
		return false
	}
	ok, seen := r.dcMatch[node.Datacenter]
	if !seen {
		ok = DatacenterMatches(r.job.Datacenters, node.Datacenter)
		r.dcMatch[node.Datacenter] = ok
	}
	return ok
}

// visit decides for group g on one node (nil when missing) given the
// group's allocations there.
func (r *systemReconciler) visit(g *SystemGroupResult, node *structs.Node, class nodeClass, allocs []*structs.Allocation) {
	live, done := splitTerminal(allocs)
	switch {
	case class == nodeGone && (node == nil || g.Group.ReplaceDisconnected()):
		g.Lost = append(g.Lost, live...)
	case class == nodeGone || class == nodeDisconnected:
		r.visitDisconnected(g, node, live)
	case g.Group == nil:
		g.stopAll(live, DescNotNeeded)
	case class == nodeDraining:
		// The drainer stops it once the node's other allocations have
		// migrated, or at the drain's deadline.
		if keep := r.keepOne(g, live); keep != nil {
			g.Ignore = append(g.Ignore, keep)
		}
	case class == nodeOutside:
		g.stopAll(live, DescNotNeeded)
	case class == nodeNotReady:
		r.visitNotReady(g, node, live)
	default:
		r.visitReady(g, node, live, done)
	}
}

// visitDisconnected handles a disconnected node, or a down one of a group
// with replace = false: the live allocation kept is marked unknown (once)
// within its group's lost_after or, with replace = false, until the node
// reconnects; it is never replaced (a system job runs one per node), and
// lost past the deadline, which a follow-up evaluation brings.
func (r *systemReconciler) visitDisconnected(g *SystemGroupResult, node *structs.Node, live []*structs.Allocation) {
	if g.Group == nil {
		g.Lost = append(g.Lost, live...)
		return
	}
	// A surge pair (keepSurge keeps the older allocation in Ignore) is
	// marked as one: both unknown, or both lost.
	before := len(g.Ignore)
	keep := r.keepOne(g, live)
	if keep == nil {
		return
	}
	kept := append([]*structs.Allocation{keep}, g.Ignore[before:]...)
	g.Ignore = g.Ignore[:before]
	for _, a := range kept {
		switch classifyDisconnect(a, node, g.Group, r.in.Now) {
		case unknownState:
			if deadline, ok := lostDeadline(a, g.Group, r.in.Now); ok && (r.followupAt.IsZero() || deadline.Before(r.followupAt)) {
				r.followupAt = deadline
			}
			if a.ClientStatus == structs.AllocClientStatusUnknown {
				g.Ignore = append(g.Ignore, a)
			} else {
				g.Unknown = append(g.Unknown, a)
			}
		default:
			g.Lost = append(g.Lost, a)
		}
	}
}

// visitNotReady handles an initializing or ineligible node.
//
// Assumptions: the operator made the node ineligible to keep new work off
// it, not to evict what runs there, so allocations stay. An in-place update
// changes nothing the node must provide, so it is allowed when the node
// still meets the group's constraints; a destructive one would be a new
// placement and waits until the node is eligible again.
func (r *systemReconciler) visitNotReady(g *SystemGroupResult, node *structs.Node, live []*structs.Allocation) {
	keep := r.keepOne(g, live)
	switch {
	case keep == nil:
	case r.isCurrent(keep):
		g.Ignore = append(g.Ignore, keep)
	case r.inPlaceUpdatable(keep, g.Group) && r.feasible(node, g.Group):
		g.InplaceUpdate = append(g.InplaceUpdate, keep)
		g.DesiredTotal++
	default:
		g.Ignore = append(g.Ignore, keep)
	}
}

// visitReady handles a ready, eligible node in the job's scope.
func (r *systemReconciler) visitReady(g *SystemGroupResult, node *structs.Node, live, done []*structs.Allocation) {
	g.NodesEvaluated++
	if ok, reason := r.feasibleWhy(node, g.Group); !ok {
		// Invariants: an infeasible node runs nothing of the group.
		g.Filtered = append(g.Filtered, SystemNodeFilter{Node: node, Reason: reason})
		g.stopAll(live, DescNotNeeded)
		return
	}
	keep := r.keepOne(g, live)
	switch {
	case keep == nil:
		// Assumptions: sysbatch runs each version once per node; a node
		// where the current version finished (either way) is done.
		if prev := r.finishedHere(done); prev != nil {
			g.Ignore = append(g.Ignore, prev)
		} else {
			g.Place = append(g.Place, SystemPlacement{Node: node, Lingering: lingering(done)})
		}
	case r.isCurrent(keep):
		g.Ignore = append(g.Ignore, keep)
	case r.inPlaceUpdatable(keep, g.Group):
		g.InplaceUpdate = append(g.InplaceUpdate, keep)
	default:
		g.DestructiveUpdate = append(g.DestructiveUpdate, SystemPlacement{Node: node, Previous: keep, Surge: g.Group.DroverSurge()})
	}
	g.DesiredTotal++
}

// keepOne returns the live allocation to keep and stops the others: the
// current version first, then the newest, then the lowest ID. A surge
// group may keep an older allocation beside the current one
// (keepSurge).
func (r *systemReconciler) keepOne(g *SystemGroupResult, live []*structs.Allocation) *structs.Allocation {
	switch len(live) {
	case 0:
		return nil
	case 1:
		return live[0]
	}
	ranked := slices.Clone(live)
	slices.SortFunc(ranked, func(a, b *structs.Allocation) int {
		if ca, cb := r.isCurrent(a), r.isCurrent(b); ca != cb {
			if ca {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(b.CreateIndex, a.CreateIndex); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	if r.job != nil && g.Group.DroverSurge() {
		return r.keepSurge(g, ranked) // system_surge.go
	}
	g.stopAll(ranked[1:], DescNotNeeded)
	return ranked[0]
}

// finishedHere returns, for sysbatch, an allocation of the current version
// that the client finished (complete or failed), or nil. Allocations the
// server stopped or lost before they finished do not count: they run again.
func (r *systemReconciler) finishedHere(done []*structs.Allocation) *structs.Allocation {
	if !r.sysbatch {
		return nil
	}
	for _, a := range done {
		if r.isCurrent(a) && (a.ClientStatus == structs.AllocClientStatusComplete ||
			a.ClientStatus == structs.AllocClientStatusFailed) {
			return a
		}
	}
	return nil
}

// isCurrent reports whether a runs the job's current version. A job purged
// and registered again restarts at version 0 with a new CreateIndex.
func (r *systemReconciler) isCurrent(a *structs.Allocation) bool {
	return a.JobVersion == r.job.Version && (a.Job == nil || a.Job.CreateIndex == r.job.CreateIndex)
}

func (r *systemReconciler) feasible(node *structs.Node, tg *structs.TaskGroup) bool {
	ok, _ := r.feasibleWhy(node, tg)
	return ok
}

func (r *systemReconciler) feasibleWhy(node *structs.Node, tg *structs.TaskGroup) (bool, string) {
	if r.in.Feasible == nil {
		return true, ""
	}
	return r.in.Feasible(node, tg)
}

// inPlaceUpdatable reports whether a can move to tg's spec without being
// replaced. Results are memoized per old group: thousands of allocations
// share a handful of job versions.
//
// Assumptions: an allocation whose job version is unknown (Job nil) or
// whose version lacks the group is replaced.
func (r *systemReconciler) inPlaceUpdatable(a *structs.Allocation, tg *structs.TaskGroup) bool {
	if a.Job == nil {
		return false
	}
	old := a.Job.LookupTaskGroup(a.TaskGroup)
	if old == nil {
		return false
	}
	ok, seen := r.inPlace[old]
	if !seen {
		ok = old.UpdateType(tg) != structs.UpdateTypeDestructive
		r.inPlace[old] = ok
	}
	return ok
}

func (g *SystemGroupResult) stopAll(allocs []*structs.Allocation, reason string) {
	for _, a := range allocs {
		g.Stop = append(g.Stop, AllocStop{Alloc: a, Reason: reason})
	}
}

// splitTerminal separates live from terminal allocations, each sorted by
// ID so that the input's order never decides. The lists may share allocs'
// array but cannot grow into it.
func splitTerminal(allocs []*structs.Allocation) (live, done []*structs.Allocation) {
	if len(allocs) == 1 && !allocs[0].Terminal() {
		return allocs[0:1:1], nil // the common case, without allocating
	}
	// A node in the middle of a rollout: the stopped old version and the
	// new one, without cloning and sorting.
	if len(allocs) == 2 && allocs[0].Terminal() != allocs[1].Terminal() {
		if allocs[0].Terminal() {
			return allocs[1:2:2], allocs[0:1:1]
		}
		return allocs[0:1:1], allocs[1:2:2]
	}
	allocs = slices.Clone(allocs)
	slices.SortFunc(allocs, func(a, b *structs.Allocation) int { return cmp.Compare(a.ID, b.ID) })
	for _, a := range allocs {
		if a.Terminal() {
			done = append(done, a)
		} else {
			live = append(live, a)
		}
	}
	return live, done
}

// result gates the deployment groups, sorts every set and adds counts.
func (r *systemReconciler) result() SystemReconcileResult {
	res := SystemReconcileResult{Groups: r.groups, DesiredTGUpdates: map[string]*structs.DesiredUpdates{}}
	for _, g := range r.groups {
		g.sort() // gating picks in node order
	}
	r.holdPartitions() // drover.partition, before gating (system_waves.go)
	res.Deployment, res.DeploymentUpdates, res.FollowupAt = r.deployment()
	if !r.followupAt.IsZero() && (res.FollowupAt.IsZero() || r.followupAt.Before(res.FollowupAt)) {
		res.FollowupAt = r.followupAt
	}
	for _, g := range r.groups {
		g.sort()
		res.DesiredTGUpdates[g.Name] = g.desiredUpdates()
	}
	return res
}

// sort orders every set by node ID, then allocation ID.
func (g *SystemGroupResult) sort() {
	byAlloc := func(a, b *structs.Allocation) int {
		return cmp.Or(cmp.Compare(a.NodeID, b.NodeID), cmp.Compare(a.ID, b.ID))
	}
	byNode := func(a, b SystemPlacement) int { return cmp.Compare(a.Node.ID, b.Node.ID) }
	slices.SortFunc(g.Place, byNode)
	slices.SortFunc(g.DestructiveUpdate, byNode)
	slices.SortFunc(g.Deferred, byNode)
	slices.SortFunc(g.InplaceUpdate, byAlloc)
	slices.SortFunc(g.Lost, byAlloc)
	slices.SortFunc(g.Unknown, byAlloc)
	slices.SortFunc(g.Ignore, byAlloc)
	slices.SortFunc(g.Stop, func(a, b AllocStop) int { return byAlloc(a.Alloc, b.Alloc) })
	slices.SortFunc(g.Filtered, func(a, b SystemNodeFilter) int { return cmp.Compare(a.Node.ID, b.Node.ID) })
}

// desiredUpdates counts the group's decisions; lost allocations count as
// stops, deferred replacements as ignored (their Previous is in Ignore),
// and Canary counts the canaries among Place and DestructiveUpdate.
func (g *SystemGroupResult) desiredUpdates() *structs.DesiredUpdates {
	canaries := 0
	for _, set := range [][]SystemPlacement{g.Place, g.DestructiveUpdate} {
		for _, p := range set {
			if p.Canary {
				canaries++
			}
		}
	}
	return &structs.DesiredUpdates{
		Place:             uint64(len(g.Place)),
		InPlaceUpdate:     uint64(len(g.InplaceUpdate)),
		DestructiveUpdate: uint64(len(g.DestructiveUpdate)),
		Stop:              uint64(len(g.Stop) + len(g.Lost)),
		Ignore:            uint64(len(g.Ignore) + len(g.Unknown)),
		Canary:            uint64(canaries),
	}
}

// lingering returns the newest of done (the group's terminal allocations on
// one node) that the server stopped but the client still reports running
// or pending, or nil.
func lingering(done []*structs.Allocation) *structs.Allocation {
	var out *structs.Allocation
	for _, a := range done {
		if !a.ServerTerminal() || a.ClientTerminal() {
			continue
		}
		if out == nil || a.CreateIndex > out.CreateIndex || (a.CreateIndex == out.CreateIndex && a.ID > out.ID) {
			out = a
		}
	}
	return out
}
