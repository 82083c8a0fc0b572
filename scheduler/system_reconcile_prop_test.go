package scheduler

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/drover-project/drover/nomad/structs"
)

// genInput draws a cluster and a job history: up to 10 nodes in every
// status, a job with one or two groups at version 0..3 (destructive,
// in-place and constraint changes), live or stopped or purged, allocations
// of any version, group, node (also missing ones) and status, and maybe a
// deployment.
func genInput(t *rapid.T) SystemReconcileInput {
	versions := genVersions(t)
	job := versions[len(versions)-1]
	nodes := genNodes(t)
	allocs := genAllocs(t, versions, nodes)
	in := SystemReconcileInput{Job: job, Nodes: nodes, Allocs: allocs, Now: time.Unix(1000, 0)}
	switch rapid.SampledFrom([]string{"live", "stopped", "purged"}).Draw(t, "job state") {
	case "stopped":
		c := job.Copy()
		c.Stop = true
		in.Job = c
	case "purged":
		in.Job = nil
	}
	if rapid.Bool().Draw(t, "has deployment") {
		v := versions[len(versions)-1] // mostly the current version: gating applies
		if rapid.IntRange(0, 2).Draw(t, "older deployment") == 0 {
			v = versions[rapid.IntRange(0, len(versions)-1).Draw(t, "deployment version")]
		}
		in.Deployment = &structs.Deployment{
			ID: "d", Namespace: v.Namespace, JobID: v.ID, JobVersion: v.Version, JobCreateIndex: v.CreateIndex,
			Status: rapid.SampledFrom([]string{structs.DeploymentStatusRunning, structs.DeploymentStatusRunning,
				structs.DeploymentStatusSuccessful, structs.DeploymentStatusFailed, structs.DeploymentStatusPaused,
				structs.DeploymentStatusCancelled}).Draw(t, "deployment status"),
			TaskGroups: map[string]*structs.DeploymentState{"web": {
				DesiredTotal:    1,
				DesiredCanaries: rapid.IntRange(0, 3).Draw(t, "desired canaries"),
				Promoted:        rapid.Bool().Draw(t, "promoted"),
			}},
		}
	}
	in.Now = time.Unix(1000+int64(rapid.IntRange(0, 120).Draw(t, "now")), 0)
	if in.Job != nil {
		in.Feasible = NewFeasibleFunc(in.Job)
	}
	return in
}

func genVersions(t *rapid.T) []*structs.Job {
	v0 := testJob("web")
	v0.CreateIndex = 10
	v0.Type = rapid.SampledFrom([]string{structs.JobTypeSystem, structs.JobTypeSysBatch}).Draw(t, "type")
	if rapid.Bool().Draw(t, "dc glob") {
		v0.Datacenters = []string{"dc*"}
	}
	if rapid.Bool().Draw(t, "two groups") {
		api := *v0.TaskGroups[0]
		api.Name = "api"
		v0.TaskGroups = append(v0.TaskGroups, &api)
	}
	if rapid.Bool().Draw(t, "lost_after") {
		d := time.Duration(rapid.SampledFrom([]int{30, 600}).Draw(t, "lost_after seconds")) * time.Second
		replace := rapid.Bool().Draw(t, "replace")
		v0.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{LostAfter: &d, Replace: &replace}
	}
	if v0.Type == structs.JobTypeSystem && rapid.Bool().Draw(t, "update block") {
		withUpdate(v0)
		for _, tg := range v0.TaskGroups {
			tg.Update.MaxParallel = rapid.IntRange(1, 3).Draw(t, "max_parallel")
			tg.Update.Canary = rapid.SampledFrom([]int{0, 0, 30, 50, 100, 150}).Draw(t, "canary")
			tg.Update.Stagger = time.Duration(rapid.SampledFrom([]int{0, 0, 30}).Draw(t, "stagger")) * time.Second
		}
	}
	versions := []*structs.Job{v0}
	for i := rapid.IntRange(0, 3).Draw(t, "versions"); i > 0; i-- {
		change := rapid.SampledFrom([]string{"destructive", "inplace", "constraint"}).Draw(t, "change")
		next := nextVersion(versions[len(versions)-1], func(tg *structs.TaskGroup) {
			switch change {
			case "destructive":
				destructiveChange(tg)
			case "inplace":
				inplaceChange(tg)
			default:
				tg.Constraints = []*structs.Constraint{{LTarget: "${meta.rack}", Operand: "=", RTarget: "r1"}}
			}
		})
		versions = append(versions, next)
	}
	return versions
}

func genNodes(t *rapid.T) []*structs.Node {
	n := rapid.IntRange(0, 10).Draw(t, "nodes")
	nodes := make([]*structs.Node, 0, n)
	for i := 0; i < n; i++ {
		node := testNode(fmt.Sprintf("n%02d", i))
		node.Status = rapid.SampledFrom([]string{structs.NodeStatusReady, structs.NodeStatusReady, structs.NodeStatusDown, structs.NodeStatusInit,
			structs.NodeStatusDisconnected}).Draw(t, "status")
		if rapid.IntRange(0, 3).Draw(t, "ineligible") == 0 {
			node.SchedulingEligibility = structs.NodeSchedulingIneligible
		}
		if rapid.IntRange(0, 4).Draw(t, "drain") == 0 {
			draining(node)
		}
		node.Datacenter = rapid.SampledFrom([]string{"dc1", "dc1", "dc2"}).Draw(t, "dc")
		node.NodePool = rapid.SampledFrom([]string{"default", "default", "gpu"}).Draw(t, "pool")
		if r := rapid.SampledFrom([]string{"r1", "r2", ""}).Draw(t, "rack"); r != "" {
			node.Meta = map[string]string{"rack": r}
		}
		if rapid.IntRange(0, 5).Draw(t, "no driver") == 0 {
			node.Drivers = nil
		}
		nodes = append(nodes, node)
	}
	return nodes
}

func genAllocs(t *rapid.T, versions []*structs.Job, nodes []*structs.Node) []*structs.Allocation {
	nodeIDs := []string{"gone"}
	for _, n := range nodes {
		nodeIDs = append(nodeIDs, n.ID)
	}
	m := rapid.IntRange(0, 20).Draw(t, "allocs")
	allocs := make([]*structs.Allocation, 0, m)
	for i := 0; i < m; i++ {
		v := versions[rapid.IntRange(0, len(versions)-1).Draw(t, "alloc version")]
		a := testAlloc(fmt.Sprintf("a%02d", i), v, rapid.SampledFrom(nodeIDs).Draw(t, "alloc node"))
		a.TaskGroup = rapid.SampledFrom([]string{"web", "web", "api", "old"}).Draw(t, "alloc group")
		a.CreateIndex = uint64(rapid.IntRange(1, 100).Draw(t, "create index"))
		if rapid.IntRange(0, 3).Draw(t, "stopped") == 0 {
			a.DesiredStatus = structs.AllocDesiredStatusStop
		}
		a.ClientStatus = rapid.SampledFrom([]string{structs.AllocClientStatusPending, structs.AllocClientStatusRunning,
			structs.AllocClientStatusRunning, structs.AllocClientStatusComplete, structs.AllocClientStatusFailed,
			structs.AllocClientStatusLost, structs.AllocClientStatusUnknown}).Draw(t, "client status")
		if a.ClientStatus == structs.AllocClientStatusUnknown {
			a.DisconnectedAt = time.Unix(1000-int64(rapid.IntRange(0, 60).Draw(t, "unknown since")), 0).UnixNano()
		}
		if rapid.IntRange(0, 2).Draw(t, "in deployment") == 0 {
			a.DeploymentID = "d"
		}
		a.CreateTime = time.Unix(1000-int64(rapid.IntRange(0, 60).Draw(t, "age")), 0).UnixNano()
		switch rapid.IntRange(0, 3).Draw(t, "health") {
		case 1:
			a.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: boolPtr(true)}
		case 2:
			a.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: boolPtr(false)}
		case 3:
			a.DeploymentStatus = &structs.AllocDeploymentStatus{}
		}
		if a.DeploymentStatus != nil {
			a.DeploymentStatus.Canary = rapid.Bool().Draw(t, "canary")
		}
		allocs = append(allocs, a)
	}
	return allocs
}

func TestReconcileProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genInput(t)
		res := ReconcileSystem(in)
		checkPartition(t, in, res)
		checkAtMostOnePerNode(t, in, res)
		checkPlacementTargets(t, in, res)
		checkCounts(t, res)
		checkGating(t, in, res)
		if in.Job.Stopped() {
			for _, g := range res.Groups {
				if len(g.Place)+len(g.DestructiveUpdate)+len(g.InplaceUpdate)+len(g.Ignore) > 0 {
					t.Fatalf("stopped job: group %q keeps or places allocations", g.Name)
				}
			}
			if res.Deployment != nil {
				t.Fatalf("stopped job got a deployment")
			}
		}
	})
}

func TestReconcileDeterministic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genInput(t)
		first := ReconcileSystem(in)
		again := in
		again.Nodes = rapid.Permutation(in.Nodes).Draw(t, "nodes order")
		again.Allocs = rapid.Permutation(in.Allocs).Draw(t, "allocs order")
		if in.Job != nil {
			again.Feasible = NewFeasibleFunc(in.Job)
		}
		if second := ReconcileSystem(again); !reflect.DeepEqual(first, second) {
			t.Fatalf("same input, different output:\n%+v\n%+v", first, second)
		}
	})
}

// checkPartition: every live allocation is decided exactly once, and no
// decision but Ignore names a terminal allocation.
func checkPartition(t *rapid.T, in SystemReconcileInput, res SystemReconcileResult) {
	seen := map[string]string{}
	mark := func(bucket string, a *structs.Allocation, mayBeTerminal bool) {
		if a.Terminal() && !mayBeTerminal {
			t.Fatalf("%s names terminal allocation %s", bucket, a.ID)
		}
		if prev, ok := seen[a.ID]; ok {
			t.Fatalf("allocation %s in %s and %s", a.ID, prev, bucket)
		}
		seen[a.ID] = bucket
	}
	for _, g := range res.Groups {
		for _, s := range g.Stop {
			mark("Stop", s.Alloc, false)
		}
		for _, a := range g.Lost {
			mark("Lost", a, false)
		}
		for _, a := range g.Unknown {
			mark("Unknown", a, false)
			if a.ClientStatus == structs.AllocClientStatusUnknown {
				t.Fatalf("allocation %s is unknown already and marked again", a.ID)
			}
			if g.Group.LostAfter() == 0 && g.Group.ReplaceDisconnected() {
				t.Fatalf("allocation %s marked unknown without lost_after", a.ID)
			}
		}
		for _, a := range g.InplaceUpdate {
			mark("InplaceUpdate", a, false)
		}
		for _, p := range g.DestructiveUpdate {
			mark("DestructiveUpdate", p.Previous, false)
		}
		for _, a := range g.Ignore {
			mark("Ignore", a, in.Job != nil && in.Job.Type == structs.JobTypeSysBatch)
		}
	}
	for _, a := range in.Allocs {
		if !a.Terminal() && seen[a.ID] == "" {
			t.Fatalf("live allocation %s (group %s, node %s) is in no set", a.ID, a.TaskGroup, a.NodeID)
		}
	}
}

// checkAtMostOnePerNode applies the result and counts live allocations per
// group and node.
func checkAtMostOnePerNode(t *rapid.T, in SystemReconcileInput, res SystemReconcileResult) {
	gone := map[string]bool{}
	for _, g := range res.Groups {
		for _, s := range g.Stop {
			gone[s.Alloc.ID] = true
		}
		for _, a := range g.Lost {
			gone[a.ID] = true
		}
		for _, p := range g.DestructiveUpdate {
			gone[p.Previous.ID] = true
		}
	}
	count := map[nodeGroup]int{}
	for _, a := range in.Allocs {
		if !a.Terminal() && !gone[a.ID] {
			count[nodeGroup{node: a.NodeID, group: a.TaskGroup}]++
		}
	}
	for _, g := range res.Groups {
		for _, p := range append(append([]SystemPlacement(nil), g.Place...), g.DestructiveUpdate...) {
			count[nodeGroup{node: p.Node.ID, group: g.Name}]++
		}
	}
	for k, n := range count {
		if n > 1 {
			t.Fatalf("%d live allocations of group %q on node %q", n, k.group, k.node)
		}
	}
}

// checkPlacementTargets: new allocations go only to ready, eligible,
// undrained, in-scope, feasible nodes of a live job.
func checkPlacementTargets(t *rapid.T, in SystemReconcileInput, res SystemReconcileResult) {
	for _, g := range res.Groups {
		for _, p := range append(append([]SystemPlacement(nil), g.Place...), g.DestructiveUpdate...) {
			n := p.Node
			switch {
			case in.Job.Stopped() || g.Group == nil:
				t.Fatalf("placement of %q on %s without a live group", g.Name, n.ID)
			case !n.Ready():
				t.Fatalf("placement on node %s that is not ready (status %s, %s, drain %v)", n.ID, n.Status, n.SchedulingEligibility, n.Drain)
			case !DatacenterMatches(in.Job.Datacenters, n.Datacenter) || !PoolMatches(in.Job.NodePool, n.NodePool):
				t.Fatalf("placement on node %s outside the job's datacenters or pool", n.ID)
			}
			if ok, reason := NewFeasibleFunc(in.Job)(n, g.Group); !ok {
				t.Fatalf("placement on infeasible node %s: %s", n.ID, reason)
			}
		}
	}
}

// checkCounts: DesiredTGUpdates match the sets.
func checkCounts(t *rapid.T, res SystemReconcileResult) {
	for _, g := range res.Groups {
		d := res.DesiredTGUpdates[g.Name]
		want := structs.DesiredUpdates{Place: uint64(len(g.Place)), InPlaceUpdate: uint64(len(g.InplaceUpdate)),
			DestructiveUpdate: uint64(len(g.DestructiveUpdate)), Stop: uint64(len(g.Stop) + len(g.Lost)), Ignore: uint64(len(g.Ignore) + len(g.Unknown)),
			Canary: uint64(countCanaries(g.Place) + countCanaries(g.DestructiveUpdate))}
		if d == nil || *d != want {
			t.Fatalf("group %q: DesiredTGUpdates %+v, sets say %+v", g.Name, d, want)
		}
	}
}

func countCanaries(ps []SystemPlacement) int {
	n := 0
	for _, p := range ps {
		if p.Canary {
			n++
		}
	}
	return n
}

// checkGating: a deployment of the job's version that is not running
// (paused, failed, cancelled) lets its groups place and update nothing;
// otherwise limited work fits in max_parallel minus the allocations in
// flight, and canaries never exceed the rounded-up percentage of the
// nodes to update nor max_parallel.
func checkGating(t *rapid.T, in SystemReconcileInput, res SystemReconcileResult) {
	cur := in.Deployment
	if in.Job.Stopped() || cur == nil || cur.JobVersion != in.Job.Version || cur.JobCreateIndex != in.Job.CreateIndex {
		return
	}
	for _, g := range res.Groups {
		if !g.usesDeployment() {
			continue
		}
		work := len(g.Place) + len(g.DestructiveUpdate) + len(g.InplaceUpdate)
		switch cur.Status {
		case structs.DeploymentStatusSuccessful:
			continue
		case structs.DeploymentStatusRunning:
			checkBudget(t, in, g, cur.ID, res.Deployment.TaskGroups[g.Name])
		default:
			if work > 0 {
				t.Fatalf("deployment %s: group %q places or updates %d allocations", cur.Status, g.Name, work)
			}
		}
	}
}

// checkBudget checks the max_parallel and canary bounds of g.
func checkBudget(t *rapid.T, in SystemReconcileInput, g *SystemGroupResult, id string, st *structs.DeploymentState) {
	u := g.Group.Update
	retryNodes := map[string]bool{}
	if id == "" {
		id = "(to be created)" // no allocation belongs to it yet
	}
	for _, a := range in.Allocs {
		if a.DeploymentID == id && a.TaskGroup == g.Name && a.Terminal() {
			retryNodes[a.NodeID] = true
		}
	}
	inFlight, liveCanaries := 0, 0
	for _, a := range g.Ignore {
		if a.DeploymentID == id && !a.Terminal() {
			if !a.DeploymentStatus.IsHealthy() {
				inFlight++
			}
			if isCanary(a) {
				liveCanaries++
			}
		}
	}
	limited := len(g.DestructiveUpdate)
	for _, p := range g.Place {
		if retryNodes[p.Node.ID] {
			limited++
		}
	}
	if limited > max(0, u.MaxParallel-inFlight) {
		t.Fatalf("group %q: %d limited placements with %d in flight, max_parallel %d", g.Name, limited, inFlight, u.MaxParallel)
	}
	canaries := countCanaries(g.Place) + countCanaries(g.DestructiveUpdate)
	pct := min(u.Canary, 100)
	nodes := len(g.DestructiveUpdate) + len(g.Place) + len(g.Deferred) + liveCanaries
	bound := min((pct*nodes+99)/100, u.MaxParallel)
	if !st.Promoted && st.DesiredCanaries > max(bound, liveCanaries) {
		t.Fatalf("group %q: DesiredCanaries %d above %d (canary %d%%, %d nodes, max_parallel %d)",
			g.Name, st.DesiredCanaries, bound, u.Canary, nodes, u.MaxParallel)
	}
	if canaries == 0 {
		return
	}
	if liveCanaries+canaries > bound {
		t.Fatalf("group %q: %d canaries running and %d new, bound %d (canary %d%%, %d nodes, max_parallel %d)",
			g.Name, liveCanaries, canaries, bound, u.Canary, nodes, u.MaxParallel)
	}
	if in.Job.Version == 0 {
		t.Fatalf("group %q: canaries on version 0", g.Name)
	}
}
