package scheduler

import (
	"fmt"
	"slices"
	"time"

	"github.com/drover-project/drover/nomad/structs"
)

// Filter reasons of the generic scheduler's dynamic constraints (keys of
// AllocationMetric.ConstraintFiltered).
const (
	ReasonDistinctHosts    = "distinct_hosts"
	ReasonDistinctProperty = "distinct_property"
)

// genericPlanInput is what buildGenericPlan turns into a plan.
type genericPlanInput struct {
	eval      *structs.Evaluation
	job       *structs.Job
	nodes     []*structs.Node
	stored    *structs.Deployment
	result    GenericResult // owned by the builder
	allocs    []*structs.Allocation
	state     State
	index     uint64
	newID     func() string
	now       time.Time
	algorithm string
}

// genericPlanBuilder places a GenericResult's placements on nodes and
// builds the plan. A placement that finds no node is reported in the
// evaluation's FailedTGAllocs; a destructive update or migration that
// finds none keeps its old allocation running, unless the drain's deadline
// forces it off its node.
type genericPlanBuilder struct {
	genericPlanInput
	plan       *structs.Plan
	deployment *structs.Deployment
	candidates []*structs.Node // ready nodes in the job's scope, shuffled
	cursor     int
	byID       map[string]*structs.Node
	feasible   FeasibleFunc
	checker    *constraintChecker
	feasMemo   map[nodeGroup]string // "" feasible, else the reason
	proposed   map[string][]*structs.Allocation
	jobAllocs  []*structs.Allocation // live allocations of the job once the plan commits
	failures   map[string]int
	out        planOutcome
}

func buildGenericPlan(in genericPlanInput) (planOutcome, error) {
	b := &genericPlanBuilder{
		genericPlanInput: in,
		byID:             make(map[string]*structs.Node, len(in.nodes)),
		checker:          newConstraintChecker(),
		feasMemo:         map[nodeGroup]string{},
		proposed:         map[string][]*structs.Allocation{},
		failures:         map[string]int{},
		out:              planOutcome{queued: map[string]int{}, followupAt: in.result.FollowupAt},
	}
	b.plan = newPlan(in.eval, in.job, in.result.DesiredTGUpdates, in.result.DeploymentUpdates, in.index)
	b.out.plan = b.plan
	b.deployment = joinedDeployment(in.result.Deployment, in.newID)
	for _, n := range in.nodes {
		b.byID[n.ID] = n
	}
	stopped := map[string]bool{}
	for _, g := range in.result.Groups {
		for _, s := range g.Stop {
			b.plan.AppendStop(s.Alloc, s.Reason)
			stopped[s.Alloc.ID] = true
		}
		for _, a := range g.Lost {
			appendLost(b.plan, a)
			stopped[a.ID] = true
		}
		for _, a := range g.Unknown {
			appendUnknown(b.plan, a)
		}
		for _, a := range g.InplaceUpdate {
			b.plan.AppendAlloc(inplaceCopy(a, b.job, b.eval.ID, deploymentIDFor(b.deployment, g.Group)))
		}
	}
	for _, a := range in.allocs {
		if !a.Terminal() && !stopped[a.ID] {
			b.jobAllocs = append(b.jobAllocs, a)
		}
	}
	if in.job != nil {
		b.feasible = NewFeasibleFunc(in.job)
		var scope []*structs.Node
		for _, n := range in.nodes {
			if n.Ready() && PoolMatches(in.job.NodePool, n.NodePool) && DatacenterMatches(in.job.Datacenters, n.Datacenter) {
				scope = append(scope, n)
			}
		}
		b.candidates = shuffledNodes(scope, in.eval.ID)
	}
	base := newMetricBase(in.job, in.nodes)
	for _, g := range in.result.Groups {
		for _, p := range g.Place {
			if err := b.place(g, p, base); err != nil {
				return planOutcome{}, err
			}
		}
	}
	b.finish()
	return b.out, nil
}

// place chooses a node for p and adds the allocation, or records the
// failure.
func (b *genericPlanBuilder) place(g *GenericGroup, p GenericPlacement, base metricBase) error {
	var exclude *structs.Allocation
	if p.StopPrevious {
		exclude = p.Previous
	}
	avoid := map[string]bool{}
	if p.Reschedule || p.Migrate {
		avoid[p.Previous.NodeID] = true
	}
	metric := &structs.AllocationMetric{NodesInPool: base.inPool, NodePool: base.pool, NodesAvailable: base.available}
	node, ar, err := b.stickyNode(g, p, exclude, metric)
	if err != nil {
		return err
	}
	if node == nil {
		node, ar, err = b.selectNode(g, p.Name, exclude, avoid, metric)
		if err != nil {
			return err
		}
	}
	if node == nil {
		b.fail(g, metric)
		if p.Forced {
			b.plan.AppendStop(p.Previous, DescMigrating)
		}
		return nil
	}
	a := &structs.Allocation{
		ID:                 b.newID(),
		Namespace:          b.job.Namespace,
		EvalID:             b.eval.ID,
		Name:               p.Name,
		NodeID:             node.ID,
		NodeName:           node.Name,
		JobID:              b.job.ID,
		JobVersion:         b.job.Version,
		TaskGroup:          g.Name,
		AllocatedResources: ar,
		Metrics:            metric,
		DesiredStatus:      structs.AllocDesiredStatusRun,
		ClientStatus:       structs.AllocClientStatusPending,
		DeploymentID:       deploymentIDFor(b.deployment, g.Group),
	}
	if p.Previous != nil {
		a.PreviousAllocation = p.Previous.ID
		if p.Reschedule {
			a.RescheduleTracker = nextTracker(p.Previous, b.now)
		}
		if p.StopPrevious {
			desc := DescUpdating
			if p.Migrate {
				desc = DescMigrating
			}
			b.plan.AppendStop(p.Previous, desc)
			b.jobAllocs = slices.DeleteFunc(b.jobAllocs, func(x *structs.Allocation) bool { return x.ID == p.Previous.ID })
			if others, ok := b.proposed[p.Previous.NodeID]; ok {
				b.proposed[p.Previous.NodeID] = slices.DeleteFunc(slices.Clone(others), func(x *structs.Allocation) bool { return x.ID == p.Previous.ID })
			}
		}
	}
	if p.Canary {
		markCanary(a, b.deployment, g.Name)
	}
	b.plan.AppendAlloc(a)
	b.proposed[node.ID] = append(b.proposed[node.ID], a)
	b.jobAllocs = append(b.jobAllocs, a)
	return nil
}

// selectNode walks the shuffled candidates from the cursor, filters them
// (constraints and drivers, distinct_hosts, distinct_property, resources
// and ports) and scores those that fit, stopping after scoreLimit of them;
// it returns the best, or nil when none fits. metric records the walk.
func (b *genericPlanBuilder) selectNode(g *GenericGroup, name string, exclude *structs.Allocation, avoid map[string]bool,
	metric *structs.AllocationMetric) (*structs.Node, *structs.AllocatedResources, error) {
	type scored struct {
		node  *structs.Node
		ar    *structs.AllocatedResources
		score float64
	}
	n := len(b.candidates)
	limit := scoreLimit(b.job, g.Group, n)
	var best *scored
	var skipped []scored
	found, i := 0, 0
	for ; i < n && found < limit; i++ {
		node := b.candidates[(b.cursor+i)%n]
		metric.NodesEvaluated++
		if reason := b.filter(node, g, name); reason != "" {
			metric.NodesFiltered++
			if metric.ConstraintFiltered == nil {
				metric.ConstraintFiltered = map[string]int{}
			}
			metric.ConstraintFiltered[reason]++
			continue
		}
		ar, all, dim, err := b.fit(node, g, exclude)
		if err != nil {
			return nil, nil, err
		}
		if dim != "" {
			metric.NodesExhausted++
			if metric.DimensionExhausted == nil {
				metric.DimensionExhausted = map[string]int{}
			}
			metric.DimensionExhausted[dim]++
			if node.NodeClass != "" {
				if metric.ClassExhausted == nil {
					metric.ClassExhausted = map[string]int{}
				}
				metric.ClassExhausted[node.NodeClass]++
			}
			continue
		}
		s := scored{node: node, ar: ar, score: b.score(node, g, all, avoid)}
		if s.score < 0 && len(skipped) < maxSkip {
			skipped = append(skipped, s)
			continue
		}
		found++
		if best == nil || s.score > best.score {
			best = &s
		}
	}
	if n > 0 {
		b.cursor = (b.cursor + i) % n
	}
	if found < limit {
		for k := range skipped {
			if best == nil || skipped[k].score > best.score {
				best = &skipped[k]
			}
		}
	}
	if best == nil {
		return nil, nil, nil
	}
	metric.ScoreMetaData = []*structs.NodeScoreMeta{{NodeID: best.node.ID, NormScore: best.score}}
	return best.node, best.ar, nil
}

// fit allocates g's resources on node next to the allocations it will run
// once the plan commits (less exclude). It returns the resources and those
// allocations with the probe added, or the exhausted dimension.
func (b *genericPlanBuilder) fit(node *structs.Node, g *GenericGroup, exclude *structs.Allocation) (*structs.AllocatedResources, []*structs.Allocation, string, error) {
	others, err := b.othersOn(node.ID, exclude)
	if err != nil {
		return nil, nil, "", err
	}
	ar, dim := allocateResources(node, g.Group, others, nil)
	all := others
	if ar != nil {
		probe := &structs.Allocation{AllocatedResources: ar, DesiredStatus: structs.AllocDesiredStatusRun}
		all = append(slices.Clip(others), probe)
		if fit, d := structs.AllocsFit(node, all); !fit {
			dim = d
		}
	}
	return ar, all, dim, nil
}

// stickyNode is the node of p's previous allocation when g's ephemeral
// disk is sticky (or migrate) and that node can take the replacement: it
// is ready (not draining, eligible), still in the job's node pool and
// datacenters, passes the group's constraints and has room. It returns nil
// otherwise; the placement then goes wherever selectNode finds room (and
// with migrate, the client fetches the data from the previous node). This
// holds for destructive updates and reschedules alike, as in Nomad; a
// migration off a draining node never finds its node ready.
func (b *genericPlanBuilder) stickyNode(g *GenericGroup, p GenericPlacement, exclude *structs.Allocation,
	metric *structs.AllocationMetric) (*structs.Node, *structs.AllocatedResources, error) {
	if p.Previous == nil || !g.Group.EphemeralDisk.KeepsData() {
		return nil, nil, nil
	}
	node := b.byID[p.Previous.NodeID]
	if node == nil || !node.Ready() || !PoolMatches(b.job.NodePool, node.NodePool) ||
		!DatacenterMatches(b.job.Datacenters, node.Datacenter) || b.filter(node, g, p.Name) != "" {
		return nil, nil, nil
	}
	ar, _, dim, err := b.fit(node, g, exclude)
	if err != nil || dim != "" {
		return nil, nil, err
	}
	metric.NodesEvaluated++
	return node, ar, nil
}

// filter returns why node may not run the allocation named name of g (""
// when it may): static feasibility (memoized), the allocation's per_alloc
// host volumes, then distinct_hosts and distinct_property against the
// job's allocations as the plan stands.
func (b *genericPlanBuilder) filter(node *structs.Node, g *GenericGroup, name string) string {
	key := nodeGroup{node: node.ID, group: g.Name}
	reason, seen := b.feasMemo[key]
	if !seen {
		if ok, why := b.feasible(node, g.Group); !ok {
			reason = why
		}
		b.feasMemo[key] = reason
	}
	if reason != "" {
		return reason
	}
	if hasPerAllocVolumes(g.Group) && !HostVolumesMet(node, g.Group, b.job.Namespace, structs.AllocIndex(name), true) {
		return ReasonMissingHostVolumes
	}
	for _, c := range b.job.Constraints {
		if r := b.distinct(c, node, ""); r != "" {
			return r
		}
	}
	for _, c := range g.Group.Constraints {
		if r := b.distinct(c, node, g.Name); r != "" {
			return r
		}
	}
	return ""
}

// distinct checks one distinct_hosts or distinct_property constraint on
// node, over the job's allocations (of group, when not "").
func (b *genericPlanBuilder) distinct(c *structs.Constraint, node *structs.Node, group string) string {
	switch c.Operand {
	case structs.ConstraintDistinctHosts:
		if c.RTarget == "false" {
			return ""
		}
		for _, a := range b.jobAllocs {
			if a.NodeID == node.ID && (group == "" || a.TaskGroup == group) {
				return ReasonDistinctHosts
			}
		}
	case structs.ConstraintDistinctProperty:
		value, ok := resolveTarget(c.LTarget, node)
		if !ok {
			return ReasonDistinctProperty
		}
		used := 0
		for _, a := range b.jobAllocs {
			if group != "" && a.TaskGroup != group {
				continue
			}
			if other := b.byID[a.NodeID]; other != nil {
				if v, ok := resolveTarget(c.LTarget, other); ok && v == value {
					used++
				}
			}
		}
		if used >= distinctPropertyLimit(c) {
			return ReasonDistinctProperty
		}
	}
	return ""
}

// score is the mean of the node's scores: fitness (binpack or spread),
// anti-affinity with the group's own allocations, a penalty for nodes to
// avoid (where the allocation being replaced failed or is draining), and
// the affinity and spread blocks when there are any.
func (b *genericPlanBuilder) score(node *structs.Node, g *GenericGroup, all []*structs.Allocation, avoid map[string]bool) float64 {
	scores := []float64{fitnessScore(node, all, b.algorithm)}
	collisions := 0
	for _, a := range b.jobAllocs {
		if a.NodeID == node.ID && a.TaskGroup == g.Name {
			collisions++
		}
	}
	if collisions > 0 {
		scores = append(scores, antiAffinityScore(collisions, g.Group.Count))
	}
	if avoid[node.ID] {
		scores = append(scores, -1)
	}
	affinities := slices.Concat(b.job.Affinities, g.Group.Affinities)
	for _, t := range g.Group.Tasks {
		affinities = append(affinities, t.Affinities...)
	}
	if s, ok := affinityScore(b.checker, node, affinities); ok {
		scores = append(scores, s)
	}
	if spreads := slices.Concat(b.job.Spreads, g.Group.Spreads); len(spreads) > 0 {
		scores = append(scores, b.spreadScore(node, g, spreads))
	}
	sum := 0.0
	for _, s := range scores {
		sum += s
	}
	return sum / float64(len(scores))
}

// spreadScore is the weighted mean of the spread blocks' scores.
func (b *genericPlanBuilder) spreadScore(node *structs.Node, g *GenericGroup, spreads []*structs.Spread) float64 {
	var sum, weights float64
	for _, s := range spreads {
		if s == nil {
			continue
		}
		counts := map[string]int{}
		for _, c := range b.candidates {
			if v, ok := resolveTarget(s.Attribute, c); ok {
				counts[v] += 0
			}
		}
		for _, a := range b.jobAllocs {
			if a.TaskGroup != g.Name {
				continue
			}
			if other := b.byID[a.NodeID]; other != nil {
				if v, ok := resolveTarget(s.Attribute, other); ok {
					counts[v]++
				}
			}
		}
		value, known := resolveTarget(s.Attribute, node)
		w := float64(max(s.Weight, 1))
		sum += w * spreadScore(s, value, known, counts, g.Group.Count)
		weights += w
	}
	if weights == 0 {
		return 0
	}
	return sum / weights
}

// othersOn returns the live allocations of any job on nodeID once the plan
// commits, without exclude. The slice is owned by the builder.
func (b *genericPlanBuilder) othersOn(nodeID string, exclude *structs.Allocation) ([]*structs.Allocation, error) {
	cur, ok := b.proposed[nodeID]
	if !ok {
		stored, err := b.state.AllocsByNode(nil, nodeID)
		if err != nil {
			return nil, fmt.Errorf("scheduler: read allocs of node %q: %w", nodeID, err)
		}
		stops, updates := b.plan.NodeUpdate[nodeID], b.plan.NodeAllocation[nodeID]
		gone := func(id string) bool {
			return slices.ContainsFunc(stops, func(a *structs.Allocation) bool { return a.ID == id }) ||
				slices.ContainsFunc(updates, func(a *structs.Allocation) bool { return a.ID == id })
		}
		for _, a := range stored {
			if !a.Terminal() && !gone(a.ID) {
				cur = append(cur, a)
			}
		}
		cur = append(cur, updates...)
		b.proposed[nodeID] = cur
	}
	if exclude == nil || exclude.NodeID != nodeID {
		return cur, nil
	}
	return slices.DeleteFunc(slices.Clone(cur), func(a *structs.Allocation) bool { return a.ID == exclude.ID }), nil
}

// fail records a placement of g that found no node.
func (b *genericPlanBuilder) fail(g *GenericGroup, metric *structs.AllocationMetric) {
	b.failures[g.Name]++
	if b.out.failed == nil {
		b.out.failed = map[string]*structs.AllocationMetric{}
	}
	if m := b.out.failed[g.Name]; m != nil {
		m.CoalescedFailures++
		return
	}
	b.out.failed[g.Name] = metric
}

// finish records queued placements and keeps the deployment in the plan
// when it is new or its counts changed. A new deployment is kept even when
// every placement found no node: the version is being rolled out, its
// blocked evaluation places into it once capacity appears, and its progress
// deadline fails it if none does.
func (b *genericPlanBuilder) finish() {
	for _, g := range b.result.Groups {
		if g.Group != nil {
			b.out.queued[g.Name] = b.failures[g.Name]
		}
	}
	d := b.deployment
	if d == nil {
		return
	}
	for name, st := range d.TaskGroups {
		st.PlacedAllocs -= b.failures[name]
	}
	isNew := b.stored == nil || b.stored.ID != d.ID
	if isNew || countsChanged(b.stored, d) {
		b.plan.Deployment = d
	}
	b.out.deploymentID = d.ID
}
