package scheduler

import (
	"github.com/drover-project/drover/nomad/structs"
)

// Canary targeting of system deployments (group meta drover.canary_count,
// drover.canary_selector and drover.canary_spread, validated at
// registration in nomad/structs/drover_canary.go): how many canaries a
// rollout runs and on which of the nodes that need the new version.

// canaryTarget is a group's canary targeting.
type canaryTarget struct {
	// count is a fixed number of canaries; 0 leaves it to the update
	// block's percentage.
	count int
	// selected is set when the group has a selector; selector is nil
	// when it does not parse (a job stored without validation), and then
	// no node is selected.
	selected bool
	selector *structs.Constraint
	// spread is an attribute reference ("${node.datacenter}"), or "".
	spread string
}

// canaryTargetOf reads tg's targeting from its meta.
func canaryTargetOf(tg *structs.TaskGroup) canaryTarget {
	var t canaryTarget
	if tg == nil {
		return t
	}
	if v, ok := tg.Meta[structs.MetaCanaryCount]; ok {
		t.count, _ = structs.ParseCanaryCount(v) // invalid: 0, the percentage
	}
	if v, ok := tg.Meta[structs.MetaCanarySelector]; ok {
		t.selected = true
		t.selector, _ = structs.ParseCanarySelector(v)
	}
	if v, ok := tg.Meta[structs.MetaCanarySpread]; ok {
		t.spread, _ = structs.ParseCanarySpread(v)
	}
	return t
}

// allows reports whether node may run a canary.
func (t canaryTarget) allows(c *constraintChecker, node *structs.Node) bool {
	if !t.selected {
		return true
	}
	return t.selector != nil && node != nil && c.meets(node, t.selector)
}

// desiredCanaryCount is how many canaries an unpromoted group wants, before
// the floor of the canaries already running. nodes counts the nodes that
// need the version (canary nodes included), eligible those of them the
// selector allows.
//
// Rules:
//   - a fixed count wins over the percentage and is capped by nodes only
//     (canaries beyond max_parallel start as earlier ones become healthy);
//   - a percentage pct of nodes is rounded up and capped by max_parallel;
//   - with a selector the number is capped by eligible, but stays at least
//     1 while some node needs the version: when no node matches, the
//     rollout waits for a canary that cannot be placed (its progress
//     deadline fails it) rather than reaching every node unproven.
func desiredCanaryCount(t canaryTarget, pct, nodes, eligible, maxParallel int) int {
	var want int
	if t.count > 0 {
		want = min(t.count, nodes)
	} else {
		want = min((pct*nodes+99)/100, maxParallel)
	}
	if t.selected && want > 0 {
		want = max(min(want, eligible), 1)
	}
	return want
}

// chooseCanaryNodes returns the IDs of up to n nodes of candidates (in
// preference order) to place canaries on. It is a pure function of its
// inputs.
//
// Rules:
//   - only nodes the selector allows;
//   - without a spread, the first n of those, in order;
//   - with a spread, each canary goes to a candidate whose value of the
//     spread attribute has the fewest canaries so far (the live canaries,
//     on live, counted), the earliest such candidate in order: one canary
//     per value before a second on any. A node without the attribute
//     counts as one more value, the unset one.
func chooseCanaryNodes(t canaryTarget, candidates, live []*structs.Node, n int) []string {
	if n <= 0 {
		return nil
	}
	c := newConstraintChecker()
	var allowed []*structs.Node
	for _, node := range candidates {
		if t.allows(c, node) {
			allowed = append(allowed, node)
		}
	}
	if t.spread == "" {
		var out []string
		for _, node := range allowed[:min(n, len(allowed))] {
			out = append(out, node.ID)
		}
		return out
	}
	value := func(node *structs.Node) string {
		v, ok := resolveTarget(t.spread, node)
		if !ok {
			return "\x00unset"
		}
		return v
	}
	used := map[string]int{}
	for _, node := range live {
		if node != nil {
			used[value(node)]++
		}
	}
	values := make([]string, len(allowed))
	for i, node := range allowed {
		values[i] = value(node)
	}
	taken := make([]bool, len(allowed))
	var out []string
	for len(out) < n {
		best := -1
		for i := range allowed {
			if !taken[i] && (best < 0 || used[values[i]] < used[values[best]]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		taken[best] = true
		used[values[best]]++
		out = append(out, allowed[best].ID)
	}
	return out
}

// canaryEligible counts the nodes that need the version and may run a
// canary: live canaries, nodes to update destructively, and nodes retrying
// a failed allocation, those the selector allows.
func (r *systemReconciler) canaryEligible(g *SystemGroupResult, p groupProgress, t canaryTarget) int {
	if !t.selected {
		return 0
	}
	c := newConstraintChecker()
	n := p.liveCanaries
	for _, pl := range g.DestructiveUpdate {
		if t.allows(c, pl.Node) {
			n++
		}
	}
	for _, pl := range g.Place {
		if p.retries[pl.Node.ID] && t.allows(c, pl.Node) {
			n++
		}
	}
	return n
}

// liveCanaryNodes returns the nodes running g's live canaries (for the
// spread); nil without a spread.
func (r *systemReconciler) liveCanaryNodes(p groupProgress, t canaryTarget) []*structs.Node {
	if t.spread == "" || len(p.liveCanaryNodes) == 0 {
		return nil
	}
	byID := make(map[string]*structs.Node, len(r.in.Nodes))
	for _, node := range r.in.Nodes {
		if node != nil {
			byID[node.ID] = node
		}
	}
	out := make([]*structs.Node, 0, len(p.liveCanaryNodes))
	for _, id := range p.liveCanaryNodes {
		if node := byID[id]; node != nil {
			out = append(out, node)
		}
	}
	return out
}
