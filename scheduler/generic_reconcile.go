package scheduler

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drover-project/drover/nomad/structs"
)

// GenericInput is everything the generic (service and batch) reconciler
// decides from. It is read, never modified or retained.
type GenericInput struct {
	// Job is the job's current version, or nil when purged; a stopped job
	// is treated like a purged one.
	Job *structs.Job
	// Nodes are all registered nodes; only the status of the nodes that
	// allocations name is read (placement chooses nodes, not the
	// reconciler).
	Nodes []*structs.Node
	// Allocs are all allocations of the job, terminal ones included.
	Allocs []*structs.Allocation
	// Deployment is the job's latest deployment, or nil.
	Deployment *structs.Deployment
	Now        time.Time
	// RevertsToStable: Job's spec equals an earlier stable version; the
	// rollout gets no canaries.
	RevertsToStable bool
}

// GenericResult is the generic reconciler's decision.
type GenericResult struct {
	// Groups holds one entry per task group of the job or of a live
	// allocation, sorted by name.
	Groups           []*GenericGroup
	DesiredTGUpdates map[string]*structs.DesiredUpdates
	// Deployment is the deployment of Job's version that placements and
	// in-place updates of deployment groups join (ID "" when it is to be
	// created), or nil.
	Deployment        *structs.Deployment
	DeploymentUpdates []*structs.DeploymentStatusUpdate
	// FollowupAt is the earliest time a failed allocation may be
	// rescheduled later, or zero.
	FollowupAt time.Time
}

// GenericGroup is the decision for one task group.
//
// Invariants: every live allocation of the group is in exactly one of
// InplaceUpdate, Stop, Lost, Unknown, Ignore, or is the Previous of a
// placement with StopPrevious (an allocation in Unknown or Ignore may also
// be the Previous of a placement without StopPrevious: its replacement
// while its node is disconnected); Ignore also holds the terminal
// allocations of an older job of a batch group (counted as ignored, as
// Nomad does) and the failed allocations of an older version whose
// destructive update the deployment holds back; at most Group.Count
// allocations of the group are
// live once the decision is carried out, not counting the canaries of a
// deployment awaiting promotion.
type GenericGroup struct {
	Name  string
	Group *structs.TaskGroup // nil when the job is stopped or lacks the group
	// Place lists new allocations; the node is chosen by the plan builder.
	Place         []GenericPlacement
	InplaceUpdate []*structs.Allocation
	Stop          []AllocStop
	// Lost lists live allocations on down or missing nodes: stopped and
	// marked lost (replacements, if any, are in Place).
	Lost []*structs.Allocation
	// Unknown lists live allocations to mark unknown: on disconnected
	// nodes within their group's lost_after, or on disconnected or down
	// nodes with replace = false. They keep running where they are
	// (replacements, if any, are in Place).
	Unknown []*structs.Allocation
	Ignore  []*structs.Allocation
	// Deferred counts destructive updates held back by the deployment.
	Deferred int
	// Canaries counts the live canaries of the deployment awaiting
	// promotion (outside Count).
	Canaries int
}

// GenericPlacement is one new allocation of a group.
type GenericPlacement struct {
	// Name is the allocation name, "<job>.<group>[<index>]".
	Name string
	// Previous is the allocation this one replaces, or nil.
	Previous *structs.Allocation
	// StopPrevious: Previous still runs and stops with this placement
	// (a destructive update or a migration off a draining node).
	StopPrevious bool
	// Migrate: Previous runs on a draining node.
	Migrate bool
	// Forced: the drain's deadline passed: Previous stops even when the
	// placement finds no node.
	Forced bool
	// Reschedule: Previous failed; the new allocation extends its reschedule
	// history and avoids its node.
	Reschedule bool
	// Canary marks a canary of the deployment (no Previous).
	Canary bool
}

// unitKind orders what holds one of a group's Count slots; lower kinds are
// kept first when there are more slots than Count.
type unitKind int

const (
	unitCurrent         unitKind = iota // live, current version
	unitInplace                         // live, older version, in-place updatable
	unitDone                            // batch: completed successfully
	unitOld                             // live, older version, destructive update
	unitMigrate                         // live on a draining node
	unitStopped                         // stopped by the operator, replacement due
	unitRescheduleNow                   // failed, replacement due
	unitUnknown                         // live on a node cut off, unknown (disconnect.go)
	unitLost                            // live on a down or missing node
	unitOldFailed                       // failed, older version: destructive update
	unitRescheduleLater                 // failed, replacement due later
	unitFailed                          // failed, policy exhausted
)

type unit struct {
	kind  unitKind
	alloc *structs.Allocation
	at    time.Time // unitRescheduleLater
	// unitUnknown: mark it unknown (it is not yet), and place a replacement.
	mark, replace bool
}

// genericReconciler holds the indexes of one ReconcileGeneric call.
type genericReconciler struct {
	in     GenericInput
	job    *structs.Job // nil when stopped or purged
	batch  bool
	nodes  map[string]*structs.Node
	groups []*GenericGroup
	byName map[string][]*structs.Allocation
	d      *structs.Deployment // the version's deployment (ID "" when new), or nil
	// gate is the state of d: how deployment groups may update.
	gate       deploymentGate
	followupAt time.Time
	// byID indexes the current group's allocations.
	byID map[string]*structs.Allocation
}

// deploymentGate says what the version's deployment allows.
type deploymentGate int

const (
	gateNone    deploymentGate = iota // no deployment, or it succeeded: no gating
	gateRunning                       // running: canaries, then max_parallel waves
	gatePaused                        // paused: no destructive updates or canaries
	gateHalted                        // failed or cancelled: none, ever
)

// ReconcileGeneric decides, for every task group of in.Job, which
// allocations to keep, update, stop and place so that Count allocations of
// the group run. It is a pure function of in.
//
// Rules, per group:
//   - job stopped or purged, or group removed: live allocations stop;
//   - a live allocation on a disconnected node, within its group's
//     lost_after (disconnect.go), is unknown: it keeps running and holds
//     its slot, and is replaced elsewhere when disconnect.replace (a
//     reschedule: it needs an attempt of the policy left); past the
//     deadline (FollowupAt brings the evaluation) it is lost. When its node
//     reconnects and its client reported it again, disconnect.reconcile
//     keeps it or its live replacement and stops the other. With
//     disconnect.replace = false it stays unknown, on a disconnected or
//     down node, until its node reconnects;
//   - a live allocation on a down or missing node is lost and replaced
//     (with stop_on_client_after, only once that long has passed since it
//     was lost: its client stops it by then); on
//     a draining node it is migrated (stopped and replaced elsewhere), at
//     most migrate.max_parallel of the group at once: a migration counts
//     until its replacement is healthy; a batch allocation there runs on
//     until the drain's deadline; once the deadline passed, every
//     allocation there migrates at once, stopped even without a new node;
//   - an allocation the operator stopped (alloc stop: DesiredTransition
//     Migrate) and not yet replaced holds its slot and is replaced, the
//     replacement naming it as previous (and extending its reschedule
//     history when the operator asked for a reschedule);
//   - a failed allocation not yet replaced is rescheduled per the group's
//     reschedule policy (now, later through FollowupAt, or never, keeping
//     its slot); a batch allocation that completed keeps its slot and is
//     never run again;
//   - service: a failed allocation of an older version that the job's
//     version changes destructively, and whose reschedule is not due yet
//     (or never will be), is not left to wait: the new version replaces it
//     now by a destructive update, gated by the version's deployment like
//     the live ones, as in Nomad (the reschedule delay applies to the
//     current version's failures); while the deployment holds it back, its
//     reschedule is still due at its time (FollowupAt);
//   - batch: a terminal allocation of an older job (an older version, or a
//     purged job of the same ID registered again, whose CreateIndex is
//     older) is ignored before the rules above: it holds no slot and is
//     not rescheduled, so a changed or re-registered batch job runs again,
//     as in Nomad;
//   - of the allocations holding slots, the first Count are kept in the
//     order current version, in-place updatable, completed, older version,
//     migrating, stopped by the operator, rescheduling, lost, failed of an
//     older version, rescheduling later, failed; then by
//     name index. The others stop or are not replaced. Free name indexes
//     get new placements;
//   - older versions are updated in place when only non-destructive fields
//     changed, else replaced (destructive update).
//
// Service groups with an update block are gated by the version's
// deployment: while canaries (a count, Update.Canary) await promotion,
// canaries are placed beside the old allocations and no destructive update
// happens; once promoted (or without canaries), destructive updates run
// in waves of max_parallel minus the deployment's allocations not yet
// healthy. A paused deployment holds destructive updates and canaries; a
// failed or cancelled one holds them for good. Placements that fill
// missing slots are never held.
func ReconcileGeneric(in GenericInput) GenericResult {
	r := &genericReconciler{in: in, nodes: make(map[string]*structs.Node, len(in.Nodes)), byName: map[string][]*structs.Allocation{}}
	if !in.Job.Stopped() {
		r.job = in.Job
		r.batch = in.Job.Type == structs.JobTypeBatch
	}
	for _, n := range in.Nodes {
		r.nodes[n.ID] = n
	}
	names := map[string]*structs.TaskGroup{}
	if r.job != nil {
		for _, tg := range r.job.TaskGroups {
			names[tg.Name] = tg
		}
	}
	for _, a := range in.Allocs {
		r.byName[a.TaskGroup] = append(r.byName[a.TaskGroup], a)
		if _, ok := names[a.TaskGroup]; !ok && !a.Terminal() {
			names[a.TaskGroup] = nil
		}
	}
	for name, tg := range names {
		r.groups = append(r.groups, &GenericGroup{Name: name, Group: tg})
	}
	slices.SortFunc(r.groups, func(a, b *GenericGroup) int { return cmp.Compare(a.Name, b.Name) })

	res := GenericResult{DesiredTGUpdates: map[string]*structs.DesiredUpdates{}}
	res.DeploymentUpdates = r.prepareDeployment()
	for _, g := range r.groups {
		r.reconcileGroup(g)
	}
	res.Deployment = r.finishDeployment()
	res.Groups = r.groups
	res.FollowupAt = r.followupAt
	for _, g := range r.groups {
		res.DesiredTGUpdates[g.Name] = g.desiredUpdates()
	}
	return res
}

// reconcileGroup fills g.
func (r *genericReconciler) reconcileGroup(g *GenericGroup) {
	allocs := slices.Clone(r.byName[g.Name])
	slices.SortFunc(allocs, func(a, b *structs.Allocation) int { return cmp.Compare(a.ID, b.ID) })
	r.byID = make(map[string]*structs.Allocation, len(allocs))
	for _, a := range allocs {
		r.byID[a.ID] = a
	}
	settled := r.reconcileReconnected(g, allocs)
	var units []unit
	for _, a := range allocs {
		if settled[a.ID] {
			continue
		}
		if u, ok := r.classify(g, a); ok {
			units = append(units, u)
		}
	}
	if g.Group == nil {
		return
	}
	slices.SortStableFunc(units, func(a, b unit) int {
		return cmp.Or(cmp.Compare(a.kind, b.kind), cmp.Compare(nameIndex(a.alloc.Name), nameIndex(b.alloc.Name)),
			cmp.Compare(b.alloc.CreateIndex, a.alloc.CreateIndex))
	})
	count := g.Group.Count
	used := map[int]bool{}
	var destructive []*structs.Allocation
	migrations := r.migrateBudget(g)
	for i, u := range units {
		if i >= count {
			r.drop(g, u)
			continue
		}
		used[nameIndex(u.alloc.Name)] = true
		if u.kind == unitMigrate && !r.deadlinePassed(u.alloc) {
			if migrations == 0 {
				g.Ignore = append(g.Ignore, u.alloc) // migrates in a later wave
				continue
			}
			migrations--
		}
		r.keep(g, u, &destructive)
	}
	// Free name indexes get new placements.
	for idx, missing := 0, count-min(len(units), count); missing > 0; idx++ {
		if !used[idx] {
			g.Place = append(g.Place, GenericPlacement{Name: allocName(r.job.ID, g.Name, idx)})
			missing--
		}
	}
	r.gateDestructive(g, destructive)
}

// classify sorts one allocation of g: live ones on gone nodes are lost,
// canaries awaiting promotion are kept outside the count, terminal ones
// that do not hold a slot are ignored. ok is false when a holds no slot.
func (r *genericReconciler) classify(g *GenericGroup, a *structs.Allocation) (unit, bool) {
	if a.Terminal() {
		return r.classifyTerminal(g, a)
	}
	node := r.nodes[a.NodeID]
	switch classifyDisconnect(a, node, g.Group, r.in.Now) {
	case lostState:
		g.Lost = append(g.Lost, a)
		if g.Group == nil || liveSuccessor(a, r.byID) != nil {
			return unit{}, false
		}
		if wait := g.Group.StopOnClientAfter(); wait > 0 {
			// Its client stops it that long after losing the servers:
			// the replacement waits as long.
			return unit{kind: unitRescheduleLater, alloc: a, at: r.in.Now.Add(wait)}, true
		}
		return unit{kind: unitLost, alloc: a}, true
	case unknownState:
		return r.classifyUnknown(g, a, true)
	case awaitingReport:
		return r.classifyUnknown(g, a, false)
	}
	switch {
	case g.Group == nil:
		g.Stop = append(g.Stop, AllocStop{Alloc: a, Reason: DescNotNeeded})
		return unit{}, false
	case node.Drain && (!r.batch || node.DrainStrategy.DeadlinePassed(r.in.Now)):
		return unit{kind: unitMigrate, alloc: a}, true
	case node.Drain:
		// Batch work on a draining node runs on until the deadline.
		return unit{kind: unitCurrent, alloc: a}, true
	case r.isCurrent(a) && r.awaitingPromotion(g, a):
		g.Ignore = append(g.Ignore, a)
		g.Canaries++
		return unit{}, false
	case r.isCurrent(a):
		return unit{kind: unitCurrent, alloc: a}, true
	case r.inPlaceUpdatable(a, g.Group):
		return unit{kind: unitInplace, alloc: a}, true
	}
	return unit{kind: unitOld, alloc: a}, true
}

// classifyTerminal sorts a terminal allocation of g. For a batch job, a
// terminal allocation of an older job (olderJob) is ignored before any
// other rule: it is not the job's finished work, is neither rescheduled nor
// replaced, and holds no slot, so the job runs again.
func (r *genericReconciler) classifyTerminal(g *GenericGroup, a *structs.Allocation) (unit, bool) {
	if g.Group != nil && r.batch && r.olderJob(a) {
		g.Ignore = append(g.Ignore, a)
		return unit{}, false
	}
	if g.Group != nil && a.NextAllocation == "" && a.ClientStatus == structs.AllocClientStatusLost &&
		a.DisconnectedAt != 0 && g.Group.StopOnClientAfter() > 0 && r.sameIncarnation(a) {
		// Lost with stop_on_client_after: replaced once its client has
		// stopped it.
		due := time.Unix(0, a.DisconnectedAt).Add(g.Group.StopOnClientAfter())
		if r.in.Now.Before(due) {
			return unit{kind: unitRescheduleLater, alloc: a, at: due}, true
		}
		return unit{kind: unitLost, alloc: a}, true
	}
	if g.Group != nil && a.NextAllocation == "" && a.ServerTerminal() && a.DesiredTransition.Migrate &&
		!a.DesiredTransition.MigrateDisablePlacement && r.sameIncarnation(a) {
		return unit{kind: unitStopped, alloc: a}, true
	}
	if g.Group == nil || r.hasReplacement(a) || a.ServerTerminal() || r.awaitingPromotion(g, a) {
		return unit{}, false
	}
	switch a.ClientStatus {
	case structs.AllocClientStatusComplete:
		if r.batch {
			return unit{kind: unitDone, alloc: a}, true
		}
	case structs.AllocClientStatusFailed:
		decision, at := decideReschedule(g.Group.ReschedulePolicy, a, r.in.Now)
		if decision != rescheduleNow && r.replacedByNewVersion(g, a) {
			return unit{kind: unitOldFailed, alloc: a}, true
		}
		switch decision {
		case rescheduleNow:
			return unit{kind: unitRescheduleNow, alloc: a}, true
		case rescheduleLater:
			return unit{kind: unitRescheduleLater, alloc: a, at: at}, true
		default:
			return unit{kind: unitFailed, alloc: a}, true
		}
	}
	return unit{}, false
}

// classifyUnknown sorts a, a live allocation of g that is unknown
// (classifyDisconnect): on a node cut off (disconnected) it is marked
// unknown when it is not yet, and replaced when the group says so
// (disconnect.replace), no live replacement exists and the reschedule
// policy has an attempt left (the replacement is a reschedule, placed at
// once); on a node that reconnected, it waits for its client's report.
// It holds its slot unless a live replacement holds it; a canary awaiting
// promotion stays a canary (no slot, not replaced). The lost_after
// deadline, if any, brings a follow-up evaluation.
func (r *genericReconciler) classifyUnknown(g *GenericGroup, a *structs.Allocation, disconnected bool) (unit, bool) {
	if deadline, ok := lostDeadline(a, g.Group, r.in.Now); ok {
		r.noteFollowup(deadline)
	}
	mark := disconnected && a.ClientStatus != structs.AllocClientStatusUnknown
	canary := r.isCurrent(a) && r.awaitingPromotion(g, a)
	if canary {
		g.Canaries++ // still a canary of the deployment, outside Count
	}
	if liveSuccessor(a, r.byID) != nil || canary {
		if mark {
			g.Unknown = append(g.Unknown, a)
		} else {
			g.Ignore = append(g.Ignore, a)
		}
		return unit{}, false
	}
	replace := disconnected && g.Group.ReplaceDisconnected() && rescheduleAttemptsLeft(g.Group.ReschedulePolicy, a, r.in.Now)
	return unit{kind: unitUnknown, alloc: a, mark: mark, replace: replace}, true
}

// reconcileReconnected settles the allocations of g whose node reconnected
// while a replacement runs: the group's disconnect.reconcile picks the one
// to keep and the other stops. It returns the IDs of those stopped.
func (r *genericReconciler) reconcileReconnected(g *GenericGroup, allocs []*structs.Allocation) map[string]bool {
	if g.Group == nil {
		return nil
	}
	stopped := map[string]bool{}
	for _, p := range findReconnected(allocs, r.byID, r.nodes) {
		lose := p.replacement
		if pickReconnected(g.Group.ReconcileStrategy(), p.original, p.replacement) == p.replacement {
			lose = p.original
		}
		g.Stop = append(g.Stop, AllocStop{Alloc: lose, Reason: DescReconnected})
		stopped[lose.ID] = true
	}
	return stopped
}

// hasReplacement reports whether a was replaced: its NextAllocation names
// an allocation, unless that is a replacement that a reconnection stopped
// in favour of a (a kept original is rescheduled as any other).
func (r *genericReconciler) hasReplacement(a *structs.Allocation) bool {
	if a.NextAllocation == "" {
		return false
	}
	next := r.byID[a.NextAllocation]
	return next == nil || next.PreviousAllocation != a.ID || next.DesiredDescription != DescReconnected
}

// noteFollowup brings the follow-up evaluation forward to at.
func (r *genericReconciler) noteFollowup(at time.Time) {
	if r.followupAt.IsZero() || at.Before(r.followupAt) {
		r.followupAt = at
	}
}

// keep carries out a unit that holds one of the group's slots.
func (r *genericReconciler) keep(g *GenericGroup, u unit, destructive *[]*structs.Allocation) {
	a := u.alloc
	switch u.kind {
	case unitCurrent, unitDone, unitFailed:
		if !a.Terminal() {
			g.Ignore = append(g.Ignore, a)
		}
	case unitInplace:
		if r.gate == gateHalted {
			g.Ignore = append(g.Ignore, a)
		} else {
			g.InplaceUpdate = append(g.InplaceUpdate, a)
		}
	case unitOld, unitOldFailed:
		*destructive = append(*destructive, a)
	case unitMigrate:
		g.Place = append(g.Place, GenericPlacement{Name: a.Name, Previous: a, StopPrevious: true, Migrate: true, Forced: r.deadlinePassed(a)})
	case unitStopped:
		g.Place = append(g.Place, GenericPlacement{Name: a.Name, Previous: a, Migrate: true, Reschedule: a.DesiredTransition.Reschedule})
	case unitRescheduleNow:
		g.Place = append(g.Place, GenericPlacement{Name: a.Name, Previous: a, Reschedule: true})
	case unitLost:
		g.Place = append(g.Place, GenericPlacement{Name: a.Name, Previous: a})
	case unitUnknown:
		if u.mark {
			g.Unknown = append(g.Unknown, a)
		} else {
			g.Ignore = append(g.Ignore, a)
		}
		if u.replace {
			g.Place = append(g.Place, GenericPlacement{Name: a.Name, Previous: a, Reschedule: true})
		}
	case unitRescheduleLater:
		r.noteFollowup(u.at)
	}
}

// replacedByNewVersion reports whether a, a failed allocation of g, is of
// an older version of a service job that the job's version changes
// destructively: the new version replaces it by a destructive update
// instead of its reschedule (an in-place change leaves a failed
// allocation to its reschedule policy, as in Nomad).
func (r *genericReconciler) replacedByNewVersion(g *GenericGroup, a *structs.Allocation) bool {
	return !r.batch && !r.isCurrent(a) && !r.inPlaceUpdatable(a, g.Group)
}

// drop carries out a unit beyond the group's count: live allocations stop
// (lost ones are already stopped), failed ones are not replaced.
func (r *genericReconciler) drop(g *GenericGroup, u unit) {
	switch u.kind {
	case unitCurrent, unitInplace, unitOld, unitMigrate, unitUnknown:
		g.Stop = append(g.Stop, AllocStop{Alloc: u.alloc, Reason: DescNotNeeded})
	}
}

// gateDestructive replaces the group's older allocations, as the version's
// deployment allows: canaries first, then waves of max_parallel. Failed
// ones go first: replacing them stops nothing that runs.
func (r *genericReconciler) gateDestructive(g *GenericGroup, old []*structs.Allocation) {
	old = failedFirst(old)
	usesDeployment := r.d != nil && g.Group.UsesDeployment()
	if !usesDeployment || r.gate == gateNone {
		for _, a := range old {
			g.Place = append(g.Place, GenericPlacement{Name: a.Name, Previous: a, StopPrevious: true})
		}
		return
	}
	if r.gate != gateRunning {
		r.holdDestructive(g, old)
		return
	}
	st := r.groupState(g)
	if r.canarying(g, st, len(old)) {
		st.DesiredCanaries = g.Group.Update.Canary
		for i := g.Canaries; i < st.DesiredCanaries; i++ {
			name := allocName(r.job.ID, g.Name, i)
			if i < len(old) {
				name = old[i].Name
			}
			g.Place = append(g.Place, GenericPlacement{Name: name, Canary: true})
		}
		r.holdDestructive(g, old)
		return
	}
	limit := g.Group.Update.MaxParallel - r.inFlight(g) - len(g.Place)
	if structs.GateHoldsWave(g.Group, st) {
		// Invariants: a group with a metric or webhook gate replaces
		// nothing after its first wave until the deployment watcher
		// recorded that its gates passed at its healthy count.
		limit = 0
	}
	for i, a := range old {
		if i >= limit {
			r.holdDestructive(g, old[i:])
			return
		}
		g.Place = append(g.Place, GenericPlacement{Name: a.Name, Previous: a, StopPrevious: true})
	}
}

// holdDestructive leaves old to a later evaluation. A failed allocation
// among them still has its reschedule at its time: the follow-up
// evaluation then reschedules it, as Nomad's does.
func (r *genericReconciler) holdDestructive(g *GenericGroup, old []*structs.Allocation) {
	g.Ignore = append(g.Ignore, old...)
	g.Deferred += len(old)
	for _, a := range old {
		if !a.Terminal() {
			continue
		}
		if decision, at := decideReschedule(g.Group.ReschedulePolicy, a, r.in.Now); decision == rescheduleLater {
			r.noteFollowup(at)
		}
	}
}

// failedFirst returns old with its terminal (failed) allocations first,
// each part in its order.
func failedFirst(old []*structs.Allocation) []*structs.Allocation {
	out := make([]*structs.Allocation, 0, len(old))
	for _, a := range old {
		if a.Terminal() {
			out = append(out, a)
		}
	}
	for _, a := range old {
		if !a.Terminal() {
			out = append(out, a)
		}
	}
	return out
}

// canarying reports whether g places canaries this evaluation: it asks for
// them, has older allocations to replace destructively (or canaries
// already), its group state is not promoted, and the version is not a
// revert to a stable spec.
func (r *genericReconciler) canarying(g *GenericGroup, st *structs.DeploymentState, old int) bool {
	return g.Group.Update.Canary > 0 && !st.Promoted && !r.in.RevertsToStable && (old > 0 || g.Canaries > 0 || st.DesiredCanaries > 0)
}

// awaitingPromotion reports whether a is a canary of the version's
// deployment whose group is not promoted.
func (r *genericReconciler) awaitingPromotion(g *GenericGroup, a *structs.Allocation) bool {
	if r.d == nil || a.DeploymentID != r.d.ID || r.d.ID == "" || a.DeploymentStatus == nil || !a.DeploymentStatus.Canary {
		return false
	}
	st := r.d.TaskGroups[g.Name]
	return st == nil || !st.Promoted
}

// inFlight counts the live allocations of g in the deployment that are not
// healthy yet.
func (r *genericReconciler) inFlight(g *GenericGroup) int {
	n := 0
	for _, a := range r.byName[g.Name] {
		if !a.Terminal() && a.DeploymentID == r.d.ID && r.d.ID != "" && !a.DeploymentStatus.IsHealthy() {
			n++
		}
	}
	return n
}

func (r *genericReconciler) isCurrent(a *structs.Allocation) bool {
	return a.JobVersion == r.job.Version && (a.Job == nil || a.Job.CreateIndex == r.job.CreateIndex)
}

// olderJob reports whether a belongs to an older job than the current one:
// an older version, or a purged predecessor of the same ID (a job purged
// and registered again gets a new CreateIndex and restarts at version 0).
func (r *genericReconciler) olderJob(a *structs.Allocation) bool {
	return a.JobVersion < r.job.Version || !r.sameIncarnation(a)
}

// sameIncarnation reports whether a belongs to the job as registered now
// (not to a purged predecessor of the same ID), whatever its version.
func (r *genericReconciler) sameIncarnation(a *structs.Allocation) bool {
	return a.Job == nil || a.Job.CreateIndex == r.job.CreateIndex
}

func (r *genericReconciler) inPlaceUpdatable(a *structs.Allocation, tg *structs.TaskGroup) bool {
	if a.Job == nil {
		return false
	}
	old := a.Job.LookupTaskGroup(a.TaskGroup)
	return old != nil && old.UpdateType(tg) != structs.UpdateTypeDestructive
}

// deadlinePassed reports whether a runs on a draining node whose drain
// deadline passed.
func (r *genericReconciler) deadlinePassed(a *structs.Allocation) bool {
	n := r.nodes[a.NodeID]
	return n != nil && n.Drain && n.DrainStrategy.DeadlinePassed(r.in.Now)
}

// migrateBudget is how many of g's allocations on draining nodes may start
// migrating now: the group's migrate max_parallel minus its migrations in
// flight, or -1 (no limit) without a migrate block or with max_parallel 0.
func (r *genericReconciler) migrateBudget(g *GenericGroup) int {
	m := g.Group.Migrate
	if m == nil || m.MaxParallel <= 0 {
		return -1
	}
	return max(0, m.MaxParallel-r.migrating(g))
}

// migrating counts g's live replacements of allocations migrated off a
// draining node that have not become healthy yet (or, when no deployment
// tracks their health, are not running yet).
func (r *genericReconciler) migrating(g *GenericGroup) int {
	byID := make(map[string]*structs.Allocation, len(r.byName[g.Name]))
	for _, a := range r.byName[g.Name] {
		byID[a.ID] = a
	}
	n := 0
	for _, a := range r.byName[g.Name] {
		if a.Terminal() || a.PreviousAllocation == "" {
			continue
		}
		prev := byID[a.PreviousAllocation]
		if prev == nil || prev.DesiredDescription != DescMigrating {
			continue
		}
		if !MigrationDone(a) {
			n++
		}
	}
	return n
}

// MigrationDone reports whether a, the replacement of a migrated
// allocation, no longer counts against migrate max_parallel: healthy once
// its health is known (its deployment's update block, or outside a
// deployment its group's migrate block, decides it on the client), else
// running.
func MigrationDone(a *structs.Allocation) bool {
	if a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil {
		return *a.DeploymentStatus.Healthy
	}
	if migrateHealthTracked(a) {
		return false
	}
	return a.ClientStatus == structs.AllocClientStatusRunning
}

// migrateHealthTracked reports whether a's client decides its health by
// its group's migrate block: a service allocation outside a deployment.
func migrateHealthTracked(a *structs.Allocation) bool {
	if a.DeploymentID != "" || a.Job == nil || a.Job.Type != structs.JobTypeService {
		return false
	}
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	return tg != nil && tg.Migrate != nil
}

// allocName is "<job>.<group>[<index>]".
func allocName(job, group string, idx int) string {
	return job + "." + group + "[" + strconv.Itoa(idx) + "]"
}

// nameIndex parses the index of an allocation name; a name without one
// sorts last.
func nameIndex(name string) int {
	open := strings.LastIndexByte(name, '[')
	if open < 0 || !strings.HasSuffix(name, "]") {
		return 1 << 30
	}
	n, err := strconv.Atoi(name[open+1 : len(name)-1])
	if err != nil {
		return 1 << 30
	}
	return n
}

// desiredUpdates counts g's decisions.
func (g *GenericGroup) desiredUpdates() *structs.DesiredUpdates {
	u := &structs.DesiredUpdates{
		InPlaceUpdate: uint64(len(g.InplaceUpdate)),
		Stop:          uint64(len(g.Stop) + len(g.Lost)),
		Ignore:        uint64(len(g.Ignore) + len(g.Unknown)),
	}
	for _, p := range g.Place {
		switch {
		case p.Migrate:
			u.Migrate++
		case p.StopPrevious:
			u.DestructiveUpdate++
		case p.Canary:
			u.Canary++
		default:
			u.Place++
		}
	}
	return u
}
