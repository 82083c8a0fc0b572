package scheduler

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/drover-project/drover/nomad/structs"
)

// targetOf builds a canaryTarget from drover.* meta, as a group carries it.
func targetOf(meta map[string]string) canaryTarget {
	return canaryTargetOf(&structs.TaskGroup{Meta: meta})
}

// zoned returns a node with datacenter dc and meta zone (none when "").
func zoned(id, dc, zone string) *structs.Node {
	n := testNode(id)
	n.Datacenter = dc
	if zone != "" {
		n.Meta = map[string]string{"zone": zone}
	}
	return n
}

func TestDesiredCanaryCount(t *testing.T) {
	count := func(n string) map[string]string { return map[string]string{structs.MetaCanaryCount: n} }
	sel := map[string]string{structs.MetaCanarySelector: "${node.datacenter} = dc2"}
	both := map[string]string{structs.MetaCanaryCount: "3", structs.MetaCanarySelector: "${node.datacenter} = dc2"}
	for _, c := range []struct {
		name                              string
		meta                              map[string]string
		pct, nodes, eligible, maxParallel int
		want                              int
	}{
		{name: "percentage rounded up", pct: 30, nodes: 10, maxParallel: 5, want: 3},
		{name: "percentage capped by max_parallel", pct: 50, nodes: 10, maxParallel: 2, want: 2},
		{name: "count alone turns canaries on", meta: count("2"), nodes: 10, maxParallel: 1, want: 2},
		{name: "count wins over the percentage", meta: count("1"), pct: 100, nodes: 10, maxParallel: 10, want: 1},
		{name: "count capped by the nodes that need the version", meta: count("5"), nodes: 3, maxParallel: 1, want: 3},
		{name: "nothing to update: no canary", meta: count("2"), nodes: 0, maxParallel: 1, want: 0},
		{name: "selector caps by eligible nodes", meta: both, nodes: 10, eligible: 2, maxParallel: 5, want: 2},
		{name: "selector with a percentage", meta: sel, pct: 50, nodes: 10, eligible: 1, maxParallel: 5, want: 1},
		{name: "selector matching no node still wants one canary", meta: both, nodes: 10, eligible: 0, maxParallel: 5, want: 1},
		{name: "selector, nothing to update", meta: both, nodes: 0, eligible: 0, maxParallel: 5, want: 0},
		{name: "invalid count falls back to the percentage", meta: count("x"), pct: 10, nodes: 10, maxParallel: 5, want: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, desiredCanaryCount(targetOf(c.meta), c.pct, c.nodes, c.eligible, c.maxParallel))
		})
	}
}

func TestChooseCanaryNodes(t *testing.T) {
	nodes := []*structs.Node{
		zoned("a1", "dc1", "eu-1"), zoned("a2", "dc1", "eu-1"), zoned("a3", "dc1", "us-1"),
		zoned("b1", "dc2", "eu-2"), zoned("b2", "dc2", ""), zoned("c1", "dc3", "us-1"),
	}
	byID := map[string]*structs.Node{}
	for _, n := range nodes {
		byID[n.ID] = n
	}
	pick := func(ids ...string) []*structs.Node {
		var out []*structs.Node
		for _, id := range ids {
			out = append(out, byID[id])
		}
		return out
	}
	for _, c := range []struct {
		name string
		meta map[string]string
		live []string
		n    int
		want []string
	}{
		{name: "no targeting: first n in order", n: 2, want: []string{"a1", "a2"}},
		{name: "n zero", n: 0, want: nil},
		{name: "more wanted than candidates", n: 9, want: []string{"a1", "a2", "a3", "b1", "b2", "c1"}},
		{name: "selector equality", meta: map[string]string{structs.MetaCanarySelector: "${node.datacenter} = dc2"}, n: 3,
			want: []string{"b1", "b2"}},
		{name: "selector regexp on meta, unset meta never matches",
			meta: map[string]string{structs.MetaCanarySelector: "${meta.zone} regexp ^eu-"}, n: 9, want: []string{"a1", "a2", "b1"}},
		{name: "selector is_not_set", meta: map[string]string{structs.MetaCanarySelector: "${meta.zone} is_not_set"}, n: 9,
			want: []string{"b2"}},
		{name: "unparseable selector selects nothing", meta: map[string]string{structs.MetaCanarySelector: "dc1"}, n: 2, want: nil},
		{name: "spread over datacenters: one per value first",
			meta: map[string]string{structs.MetaCanarySpread: "${node.datacenter}"}, n: 4, want: []string{"a1", "b1", "c1", "a2"}},
		{name: "spread counts live canaries",
			meta: map[string]string{structs.MetaCanarySpread: "${node.datacenter}"}, live: []string{"a3", "b2"}, n: 2,
			want: []string{"c1", "a1"}},
		{name: "spread on meta: unset is one more value",
			meta: map[string]string{structs.MetaCanarySpread: "${meta.zone}"}, n: 4, want: []string{"a1", "a3", "b1", "b2"}},
		{name: "selector and spread together",
			meta: map[string]string{structs.MetaCanarySelector: "${meta.zone} is_set", structs.MetaCanarySpread: "${meta.zone}"},
			n:    3, want: []string{"a1", "a3", "b1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := chooseCanaryNodes(targetOf(c.meta), nodes, pick(c.live...), c.n)
			require.Equal(t, c.want, got)
		})
	}
}

// TestChooseCanaryNodesProperties: whatever the nodes, the choice has at
// most n nodes, all distinct candidates the selector allows, as many as
// possible; with a spread it covers as many distinct values as there are
// (up to n, live canaries' values counted) and no value holds two new
// canaries while an allowed value has none; and the same inputs give the
// same choice.
func TestChooseCanaryNodesProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		dcs := []string{"dc1", "dc2", "dc3", "dc4"}
		var cands, live []*structs.Node
		for i := range rapid.IntRange(0, 12).Draw(t, "nodes") {
			cands = append(cands, zoned(fmt.Sprintf("n%02d", i), rapid.SampledFrom(dcs).Draw(t, "dc"),
				rapid.SampledFrom([]string{"", "z1", "z2"}).Draw(t, "zone")))
		}
		for i := range rapid.IntRange(0, 3).Draw(t, "live") {
			live = append(live, zoned(fmt.Sprintf("l%02d", i), rapid.SampledFrom(dcs).Draw(t, "live dc"), ""))
		}
		meta := map[string]string{}
		if rapid.Bool().Draw(t, "selector") {
			meta[structs.MetaCanarySelector] = "${node.datacenter} != " + rapid.SampledFrom(dcs).Draw(t, "excluded dc")
		}
		spread := rapid.Bool().Draw(t, "spread")
		if spread {
			meta[structs.MetaCanarySpread] = "${node.datacenter}"
		}
		n := rapid.IntRange(0, 8).Draw(t, "n")
		tgt := targetOf(meta)
		got := chooseCanaryNodes(tgt, cands, live, n)

		require.Equal(t, got, chooseCanaryNodes(tgt, cands, live, n), "deterministic")
		c := newConstraintChecker()
		allowed := map[string]*structs.Node{}
		for _, node := range cands {
			if tgt.allows(c, node) {
				allowed[node.ID] = node
			}
		}
		require.Len(t, got, min(n, len(allowed)), "count respected, as many as allowed")
		seen := map[string]bool{}
		perDC := map[string]int{}
		for _, id := range got {
			require.False(t, seen[id], "distinct nodes")
			seen[id] = true
			node := allowed[id]
			require.NotNil(t, node, "%s: selector respected", id)
			perDC[node.Datacenter]++
		}
		if !spread {
			return
		}
		liveDC := map[string]int{}
		for _, node := range live {
			liveDC[node.Datacenter]++
		}
		// Maximizes distinct values: a value with more canaries (live +
		// new) than another allowed value (+1) only when the other has no
		// candidate left.
		for _, a := range allowed {
			if seen[a.ID] {
				continue
			}
			for _, id := range got {
				dc := allowed[id].Datacenter
				require.LessOrEqual(t, perDC[dc]+liveDC[dc], perDC[a.Datacenter]+liveDC[a.Datacenter]+1,
					"%s has %d canaries while unused node %s of %s has %d", dc, perDC[dc]+liveDC[dc], a.ID, a.Datacenter,
					perDC[a.Datacenter]+liveDC[a.Datacenter])
			}
		}
		distinct := map[string]bool{}
		for _, a := range allowed {
			distinct[a.Datacenter] = true
		}
		newValues := 0
		for dc := range distinct {
			if perDC[dc] > 0 && liveDC[dc] == 0 {
				newValues++
			}
		}
		fresh := 0
		for dc := range distinct {
			if liveDC[dc] == 0 {
				fresh++
			}
		}
		require.Equal(t, min(fresh, len(got)), newValues, "values without canaries get one first")
	})
}

// TestRollout_CanaryTargeting runs the reconciler on six nodes, three in
// dc1 (n00..n02) and three in dc2 (n03..n05), for a destructive change of
// tg1 with canary targeting.
func TestRollout_CanaryTargeting(t *testing.T) {
	st := func(desiredCanaries int) *structs.DeploymentState {
		return &structs.DeploymentState{DesiredTotal: 6, DesiredCanaries: desiredCanaries}
	}
	for _, c := range []struct {
		name  string
		u     *structs.UpdateStrategy
		meta  map[string]string
		setup func(f *fleet)
		tg1   string
		nodes []string // tg1's destructive updates, "*" for canaries
	}{
		{
			name:  "count with spread: one canary per datacenter",
			u:     update(2, 0),
			meta:  map[string]string{structs.MetaCanaryCount: "2", structs.MetaCanarySpread: "${node.datacenter}"},
			tg1:   "place=0 destructive=2 canary=2 inplace=0 deferred=4 stop=0 | total=6 placed=2 canaries=2/2",
			nodes: []string{"n00*", "n03*"},
		},
		{
			name:  "count beyond max_parallel: canaries start max_parallel at a time",
			u:     update(1, 0),
			meta:  map[string]string{structs.MetaCanaryCount: "3", structs.MetaCanarySpread: "${node.datacenter}"},
			tg1:   "place=0 destructive=1 canary=1 inplace=0 deferred=5 stop=0 | total=6 placed=1 canaries=1/3",
			nodes: []string{"n00*"},
		},
		{
			name: "a live canary in dc1: the next goes to dc2",
			u:    update(1, 0),
			meta: map[string]string{structs.MetaCanaryCount: "3", structs.MetaCanarySpread: "${node.datacenter}"},
			setup: func(f *fleet) {
				f.deploy(structs.DeploymentStatusRunning, map[string]*structs.DeploymentState{"tg1": st(3)})
				f.cur("tg1", healthy, true, 0)
			},
			tg1:   "place=0 destructive=1 canary=1 inplace=0 deferred=4 stop=0 | total=6 placed=2 canaries=2/3",
			nodes: []string{"n03*"},
		},
		{
			name:  "count wins over the percentage; selector keeps canaries in dc2",
			u:     update(4, 100),
			meta:  map[string]string{structs.MetaCanaryCount: "2", structs.MetaCanarySelector: "${node.datacenter} = dc2"},
			tg1:   "place=0 destructive=2 canary=2 inplace=0 deferred=4 stop=0 | total=6 placed=2 canaries=2/2",
			nodes: []string{"n03*", "n04*"},
		},
		{
			name:  "selector matching no node: one canary wanted, none placed, nothing else moves",
			u:     update(4, 0),
			meta:  map[string]string{structs.MetaCanaryCount: "2", structs.MetaCanarySelector: "${node.datacenter} = dc9"},
			tg1:   "place=0 destructive=0 canary=0 inplace=0 deferred=6 stop=0 | total=6 placed=0 canaries=0/1",
			nodes: []string{},
		},
		{
			name: "promoted: the rest rolls in waves as for any canary",
			u:    update(2, 0),
			meta: map[string]string{structs.MetaCanaryCount: "2", structs.MetaCanarySpread: "${node.datacenter}"},
			setup: func(f *fleet) {
				s := st(2)
				s.Promoted = true
				f.deploy(structs.DeploymentStatusRunning, map[string]*structs.DeploymentState{"tg1": s})
				f.cur("tg1", healthy, true, 0, 3)
			},
			tg1:   "place=0 destructive=2 canary=0 inplace=0 deferred=2 stop=0 | total=6 placed=4 canaries=2/2",
			nodes: []string{"n01", "n02"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFleet(6, c.u, nil)
			for i := 3; i < 6; i++ {
				f.nodes[i].Datacenter = "dc2"
			}
			f.v0.Datacenters = []string{"dc1", "dc2"}
			f.v1.Datacenters = []string{"dc1", "dc2"}
			f.v1 = changeGroup(f.v1, 0, func(tg *structs.TaskGroup) { tg.Meta = c.meta })
			f.deployPrev()
			if c.setup != nil {
				c.setup(f)
			}
			running := map[string]bool{}
			for _, a := range f.allocs {
				if a.TaskGroup == "tg1" {
					running[a.NodeID] = true
				}
			}
			for i := range 6 {
				if !running[nodeName(i)] {
					f.old("tg1", i)
				}
			}
			res := f.reconcile()
			require.Equal(t, c.tg1, gateSummary(res, "tg1"))
			got := nodesOf(groupNamed(res, "tg1").DestructiveUpdate)
			slices.Sort(got)
			require.Equal(t, c.nodes, got)
		})
	}
}

// TestRollout_CanaryTargetingSimulation walks a rollout through the real
// scheduler: six nodes, n00..n02 in dc1 and n03..n05 in dc2; version 1
// asks for three canaries spread over datacenters with max_parallel 1:
// n00 (dc1), then n03 (dc2), then n01 (dc1 again, the first in order of
// the tied values); a node joining dc2 meanwhile gets nothing; promotion
// rolls the rest in waves of one, the joiner included.
func TestRollout_CanaryTargetingSimulation(t *testing.T) {
	s := newRolloutSim(t, 0)
	for i := range 6 {
		n := testNode(nodeName(i))
		if i >= 3 {
			n.Datacenter = "dc2"
		}
		s.h.state.upsertNode(n)
	}
	var out strings.Builder
	step := func(title, text string) { fmt.Fprintf(&out, "%s\n  %s\n", title, text) }

	v0 := testJob("web")
	v0.Datacenters = []string{"dc1", "dc2"}
	v0.TaskGroups[0].Update = update(1, 0)
	s.register(v0)
	s.markHealth(nil, true, false)
	require.True(t, s.succeedIfComplete(), "version 0 is placed everywhere at once")

	v1 := nextVersion(v0, func(tg *structs.TaskGroup) {
		destructiveChange(tg)
		tg.Meta = map[string]string{structs.MetaCanaryCount: "3", structs.MetaCanarySpread: "${node.datacenter}"}
	})
	before := len(s.h.plans)
	eval := s.register(v1)
	step("register v1", s.describePlan(eval, before)+"\n  "+s.describeDeployment())
	s.markHealth(nil, true, false)
	step("first canary healthy", s.evaluate())
	n06 := testNode(nodeName(6))
	n06.Datacenter = "dc2"
	s.h.state.upsertNode(n06)
	step("n06 joins dc2", s.evaluate())
	s.markHealth(nil, true, false)
	step("second canary healthy", s.evaluate())
	s.markHealth(nil, true, false)
	step("third canary healthy", s.evaluate())
	s.promote()
	step("promote", s.evaluate())
	for range 3 {
		s.markHealth(nil, true, false)
		step("wave healthy", s.evaluate())
	}
	s.markHealth(nil, true, false)
	step("last wave healthy", fmt.Sprintf("complete %v", s.succeedIfComplete())+"\n  "+s.describeDeployment())
	want := `register v1
  canary n00
  deployment #1 v1 running "Deployment is running but requires manual promotion": total 6 placed 1 healthy 0 canaries 1/3 promoted false
first canary healthy
  canary n03
  deployment #1 v1 running "Deployment is running but requires manual promotion": total 6 placed 2 healthy 1 canaries 2/3 promoted false
n06 joins dc2
  plan changes no allocation
  deployment #1 v1 running "Deployment is running but requires manual promotion": total 7 placed 2 healthy 1 canaries 2/3 promoted false
second canary healthy
  canary n01
  deployment #1 v1 running "Deployment is running but requires manual promotion": total 7 placed 3 healthy 2 canaries 3/3 promoted false
third canary healthy
  no plan
  deployment #1 v1 running "Deployment is running but requires manual promotion": total 7 placed 3 healthy 3 canaries 3/3 promoted false
promote
  place n06; replace n02
  deployment #1 v1 running "Deployment is running": total 7 placed 5 healthy 3 canaries 3/3 promoted true
wave healthy
  replace n04
  deployment #1 v1 running "Deployment is running": total 7 placed 6 healthy 5 canaries 3/3 promoted true
wave healthy
  replace n05
  deployment #1 v1 running "Deployment is running": total 7 placed 7 healthy 6 canaries 3/3 promoted true
wave healthy
  no plan
  deployment #1 v1 running "Deployment is running": total 7 placed 7 healthy 7 canaries 3/3 promoted true
last wave healthy
  complete true
  deployment #1 v1 successful "Deployment completed successfully": total 7 placed 7 healthy 7 canaries 3/3 promoted true
`
	require.Equal(t, want, out.String())
}

// TestRollout_CanaryTargetingProperties runs the reconciler on rollouts in
// any state (genRolloutInput) with targeting added: the decision is
// deterministic, canaries are placed only on nodes the selector allows,
// never more than DesiredCanaries, and a fixed count bounds
// DesiredCanaries (beyond the canaries already live).
func TestRollout_CanaryTargetingProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genRolloutInput(t)
		job := in.Job.Copy()
		meta := map[string]string{}
		count := rapid.IntRange(0, 4).Draw(t, "count")
		if count > 0 {
			meta[structs.MetaCanaryCount] = fmt.Sprint(count)
		}
		selector := rapid.Bool().Draw(t, "selector")
		if selector {
			meta[structs.MetaCanarySelector] = "${meta.zone} = z1"
		}
		if rapid.Bool().Draw(t, "spread") {
			meta[structs.MetaCanarySpread] = "${meta.zone}"
		}
		job.TaskGroups[0].Meta = meta
		in.Job = job
		for _, n := range in.Nodes {
			if z := rapid.SampledFrom([]string{"", "z1", "z2"}).Draw(t, "zone"); z != "" {
				n.Meta = map[string]string{"zone": z}
			}
		}
		zone := map[string]string{}
		for _, n := range in.Nodes {
			zone[n.ID] = n.Meta["zone"]
		}
		res := ReconcileSystem(in)
		again := ReconcileSystem(in)
		g, g2 := groupNamed(res, "web"), groupNamed(again, "web")
		require.Equal(t, nodesOf(g.Place), nodesOf(g2.Place), "deterministic")
		require.Equal(t, nodesOf(g.DestructiveUpdate), nodesOf(g2.DestructiveUpdate), "deterministic")
		placed := 0
		for _, pl := range append(append([]SystemPlacement(nil), g.Place...), g.DestructiveUpdate...) {
			if !pl.Canary {
				continue
			}
			placed++
			if selector && zone[pl.Node.ID] != "z1" {
				t.Fatalf("canary on %s (zone %q) outside the selector", pl.Node.ID, zone[pl.Node.ID])
			}
		}
		if res.Deployment == nil || res.Deployment.TaskGroups["web"] == nil {
			require.Zero(t, placed, "canaries without a deployment")
			return
		}
		st := res.Deployment.TaskGroups["web"]
		if placed > st.DesiredCanaries {
			t.Fatalf("%d canaries placed, %d desired", placed, st.DesiredCanaries)
		}
		live := 0
		for _, a := range in.Allocs {
			if a.DeploymentID == res.Deployment.ID && a.DeploymentID != "" && isCanary(a) && !a.Terminal() {
				live++
			}
		}
		if count > 0 && !st.Promoted && st.DesiredCanaries > max(count, live) {
			t.Fatalf("DesiredCanaries %d above count %d (%d live)", st.DesiredCanaries, count, live)
		}
	})
}
