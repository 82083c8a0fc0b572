package scheduler

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/drover-project/drover/nomad/structs"
)

// TestGenericProperties drives the generic scheduler through random
// histories (job versions with new counts, destructive and in-place
// changes and canaries; nodes going down, draining, joining; allocations
// failing, completing, turning healthy; promotions) and checks after every
// evaluation that:
//   - at most Count allocations of the group are live, not counting the
//     canaries of a deployment awaiting promotion, and at most Canary of
//     those;
//   - every allocation a plan placed is on a ready node in the job's
//     datacenter that meets the job's constraint;
//   - every rescheduled allocation's history respects the policy: with a
//     limited policy, no more than Attempts reschedules within Interval.
func TestGenericProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		h := newHarness(rt)
		jobType := rapid.SampledFrom([]string{structs.JobTypeService, structs.JobTypeBatch}).Draw(rt, "type")
		for i := range rapid.IntRange(1, 6).Draw(rt, "nodes") {
			rack := rapid.SampledFrom([]string{"r1", "r1", "r2"}).Draw(rt, fmt.Sprintf("rack %d", i))
			dc := rapid.SampledFrom([]string{"dc1", "dc1", "dc2"}).Draw(rt, fmt.Sprintf("dc %d", i))
			h.state.upsertNode(testNode(fmt.Sprintf("n%d", i), withAttr("rack", rack), inDC(dc)))
		}
		job := serviceJob("web", rapid.IntRange(0, 5).Draw(rt, "count"))
		job.Type = jobType
		tg := job.TaskGroups[0]
		tg.Constraints = []*structs.Constraint{{LTarget: "${attr.rack}", Operand: "=", RTarget: "r1"}}
		tg.ReschedulePolicy = &structs.ReschedulePolicy{Attempts: 2, Interval: time.Hour, Delay: 5 * time.Second,
			DelayFunction: structs.DelayFunctionConstant}
		if rapid.Bool().Draw(rt, "lost_after") {
			d := time.Duration(rapid.SampledFrom([]int{30, 120}).Draw(rt, "lost_after seconds")) * time.Second
			replace := rapid.Bool().Draw(rt, "replace")
			reconcile := rapid.SampledFrom([]string{structs.ReconcileBestScore, structs.ReconcileKeepOriginal,
				structs.ReconcileKeepReplacement, structs.ReconcileLongestRunning}).Draw(rt, "reconcile")
			tg.Disconnect = &structs.DisconnectStrategy{LostAfter: &d, Replace: &replace, Reconcile: &reconcile}
		}
		if jobType == structs.JobTypeService && rapid.Bool().Draw(rt, "update block") {
			withUpdate(job)
			tg.Update.MaxParallel = rapid.IntRange(1, 3).Draw(rt, "max_parallel")
			tg.Update.Canary = rapid.IntRange(0, 3).Draw(rt, "canary")
		}
		h.state.upsertJob(job)
		before := map[string]bool{}
		process := func() {
			clear(before)
			for id := range h.state.allocs {
				before[id] = true
			}
			h.process(job)
		}
		process()
		check := func() {
			checkGenericInvariants(rt, h, job, before)
		}
		check()
		for step := range rapid.IntRange(1, 12).Draw(rt, "steps") {
			h.now = h.now.Add(time.Duration(rapid.IntRange(0, 40).Draw(rt, fmt.Sprintf("advance %d", step))) * time.Second)
			switch rapid.IntRange(0, 9).Draw(rt, fmt.Sprintf("op %d", step)) {
			case 0: // new version
				next := nextVersion(job, func(tg *structs.TaskGroup) {
					tg.Count = rapid.IntRange(0, 5).Draw(rt, "new count")
					if rapid.Bool().Draw(rt, "destructive") {
						tg.Tasks[0].Config = map[string]any{"command": "/bin/sleep", "args": []string{fmt.Sprint(step)}}
					} else {
						tg.Meta = map[string]string{"step": fmt.Sprint(step)}
					}
				})
				job = next
				h.state.upsertJob(job)
			case 1: // node down, disconnected or draining
				ids := nodeIDs(h)
				n := h.state.nodes[rapid.SampledFrom(ids).Draw(rt, "node")].Copy()
				switch rapid.IntRange(0, 2).Draw(rt, "how") {
				case 0:
					down(n)
				case 1:
					disconnected(n)
				default:
					draining(n)
				}
				h.state.upsertNode(n)
			case 8, 9: // a disconnected node reconnects; its client reports its allocations running
				for _, n := range h.state.nodes {
					if n.Status != structs.NodeStatusDisconnected {
						continue
					}
					c := n.Copy()
					c.Status = structs.NodeStatusReady
					h.state.upsertNode(c)
					for _, a := range h.state.liveAllocs("web") {
						if a.NodeID == c.ID && a.ClientStatus == structs.AllocClientStatusUnknown {
							r := a.Copy()
							r.ClientStatus = structs.AllocClientStatusRunning
							h.state.upsertAlloc(r)
						}
					}
					break
				}
			case 2: // a node joins
				h.state.upsertNode(testNode(fmt.Sprintf("j%d", step), withAttr("rack", "r1")))
			case 3, 4: // an allocation finishes
				if live := h.state.liveAllocs("web"); len(live) > 0 {
					a := rapid.SampledFrom(live).Draw(rt, "alloc").Copy()
					a.ClientStatus = rapid.SampledFrom([]string{structs.AllocClientStatusFailed, structs.AllocClientStatusComplete}).Draw(rt, "status")
					a.ModifyTime = h.now.UnixNano()
					h.state.upsertAlloc(a)
				}
			case 5:
				markHealthy(h, "web")
			case 6: // promote
				if d, _ := h.state.LatestDeploymentByJobID(nil, structs.DefaultNamespace, "web"); d != nil {
					setDeployment(h, "web", func(d *structs.Deployment) {
						for _, st := range d.TaskGroups {
							st.Promoted = true
						}
					})
				}
			}
			process()
			check()
		}
	})
}

func nodeIDs(h *harness) []string {
	nodes, _ := h.state.Nodes(nil)
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.ID
	}
	return out
}

func checkGenericInvariants(t *rapid.T, h *harness, job *structs.Job, before map[string]bool) {
	tg := job.TaskGroups[0]
	d, _ := h.state.LatestDeploymentByJobID(nil, structs.DefaultNamespace, job.ID)
	counted, canaries := 0, 0
	for _, a := range h.state.liveAllocs(job.ID) {
		if a.ClientStatus == structs.AllocClientStatusUnknown || h.state.nodes[a.NodeID].Status == structs.NodeStatusDisconnected {
			// Its node is disconnected: a replacement may run beside it
			// until it reconnects or is lost.
			if tg.LostAfter() == 0 && tg.ReplaceDisconnected() {
				t.Fatalf("alloc %s live on a disconnected node without lost_after", a.ID)
			}
			if tg.ReplaceDisconnected() && !time.Unix(0, a.DisconnectedAt).Add(tg.LostAfter()).After(h.now) &&
				a.ClientStatus == structs.AllocClientStatusUnknown {
				t.Fatalf("alloc %s unknown past its lost_after", a.ID)
			}
			continue
		}
		awaiting := d != nil && a.DeploymentID == d.ID && a.DeploymentStatus != nil && a.DeploymentStatus.Canary &&
			d.TaskGroups["web"] != nil && !d.TaskGroups["web"].Promoted
		if awaiting {
			canaries++
		} else {
			counted++
		}
	}
	if counted > tg.Count {
		t.Fatalf("%d live allocations outside canaries, count %d", counted, tg.Count)
	}
	maxCanaries := 0
	if tg.Update != nil {
		maxCanaries = tg.Update.Canary
	}
	if canaries > maxCanaries {
		t.Fatalf("%d canaries, canary %d", canaries, maxCanaries)
	}
	if len(h.plans) > 0 {
		plan := h.lastPlan()
		for nodeID, allocs := range plan.NodeAllocation {
			node := h.state.nodes[nodeID]
			for _, a := range allocs {
				if before[a.ID] {
					continue // an in-place update stays where it is
				}
				if !node.Ready() || node.Attributes["rack"] != "r1" || node.Datacenter != "dc1" {
					t.Fatalf("alloc %s placed on infeasible node %s (rack %s, dc %s)", a.ID, nodeID, node.Attributes["rack"], node.Datacenter)
				}
			}
		}
	}
	policy := tg.ReschedulePolicy
	for _, a := range h.state.allocs {
		if a.RescheduleTracker == nil {
			continue
		}
		recent := 0
		for _, e := range a.RescheduleTracker.Events {
			if h.now.Sub(time.Unix(0, e.RescheduleTime)) < policy.Interval {
				recent++
			}
		}
		if recent > policy.Attempts {
			t.Fatalf("alloc %s has %d reschedules within %s, attempts %d", a.ID, recent, policy.Interval, policy.Attempts)
		}
	}
}
