package scheduler

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/drover-project/drover/nomad/structs"
)

// wavesSimJob is version 0 of group web with update { max_parallel = mp }
// and meta.
func wavesSimJob(mp int, meta map[string]string) *structs.Job {
	v0 := testJob("web")
	v0.TaskGroups[0].Update = update(mp, 0)
	v0.TaskGroups[0].Meta = meta
	return v0
}

// inFlight counts the live allocations of deployment d on nodes that are
// up and not healthy: what the next wave must wait for.
func (s *rolloutSim) inFlight(d *structs.Deployment) int {
	if d == nil {
		return 0
	}
	n := 0
	for _, a := range s.h.state.liveAllocs(s.job.ID) {
		node := s.h.state.nodes[a.NodeID]
		if a.DeploymentID == d.ID && node != nil && node.Status == structs.NodeStatusReady && !a.DeploymentStatus.IsHealthy() {
			n++
		}
	}
	return n
}

// readyNodes returns the IDs of the ready nodes, sorted.
func (s *rolloutSim) readyNodes() []string {
	var out []string
	for id, n := range s.h.state.nodes {
		if n.Status == structs.NodeStatusReady {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// versionsByNode maps each node to the version and ID of its live
// allocation.
func (s *rolloutSim) versionsByNode() (map[string]uint64, map[string]string) {
	v, ids := map[string]uint64{}, map[string]string{}
	for _, a := range s.h.state.liveAllocs(s.job.ID) {
		v[a.NodeID], ids[a.NodeID] = a.JobVersion, a.ID
	}
	return v, ids
}

// drive evaluates, marks every new allocation healthy and succeeds the
// deployment as the watcher would, until an evaluation after the last
// success changes nothing and no deployment is active. (A deployment may
// succeed before every node is updated: an allocation that became healthy
// counts after its node went down. The nodes left are updated by the next
// evaluation, which drive runs.)
func (s *rolloutSim) drive(t *rapid.T) {
	for range 100 {
		before := len(s.h.plans)
		s.h.process(s.job)
		changed := len(s.h.plans) > before && len(planAllocs(s.h.lastPlan().NodeAllocation))+len(planAllocs(s.h.lastPlan().NodeUpdate)) > 0
		s.markHealth(nil, true, false)
		succeeded := s.succeedIfComplete()
		if d := s.deployment(); !changed && !succeeded && (d == nil || !d.Active()) {
			return
		}
	}
	t.Fatalf("the rollout did not settle in 100 evaluations: %s", s.describeDeployment())
}

// TestWaves_PercentProperty: with drover.max_parallel = "P%", nodes joining
// and going down and health arriving in any order, no evaluation starts
// more replacements than the wave size of that moment (P% of the ready
// nodes, rounded up, at least 1) less the allocations in flight, and the
// rollout ends with every ready node on the new version.
func TestWaves_PercentProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes := rapid.IntRange(1, 30).Draw(t, "nodes")
		pct := rapid.SampledFrom([]int{5, 10, 25, 50, 100}).Draw(t, "percent")
		s := newRolloutSim(t, nodes)
		v0 := wavesSimJob(1, map[string]string{structs.DroverMetaMaxParallel: fmt.Sprintf("%d%%", pct)})
		s.register(v0)
		s.drive(t)
		s.register(nextVersion(v0, destructiveChange))
		next := nodes
		for range rapid.IntRange(0, 60).Draw(t, "steps") {
			switch rapid.IntRange(0, 4).Draw(t, "action") {
			case 0:
				s.h.state.upsertNode(testNode(fmt.Sprintf("n%02d", next)))
				next++
			case 1:
				if ready := s.readyNodes(); len(ready) > 1 {
					s.h.state.upsertNode(testNode(rapid.SampledFrom(ready).Draw(t, "down"), down))
				}
			case 2:
				s.markHealth(func(*structs.Allocation) bool { return rapid.Bool().Draw(t, "healthy") }, true, false)
			default:
				d := s.deployment()
				busy := s.inFlight(d)
				wave := max(1, (pct*len(s.readyNodes())+99)/100)
				before := len(s.h.plans)
				s.h.process(s.job)
				if len(s.h.plans) == before {
					continue
				}
				replaced := 0
				for _, a := range planAllocs(s.h.lastPlan().NodeAllocation) {
					if a.PreviousAllocation != "" && a.JobVersion == s.job.Version {
						replaced++
					}
				}
				if replaced > max(0, wave-busy) {
					t.Fatalf("%d replacements started with %d in flight: wave of %d%% of %d ready nodes is %d",
						replaced, busy, pct, len(s.readyNodes()), wave)
				}
			}
		}
		s.drive(t)
		versions, _ := s.versionsByNode()
		for _, id := range s.readyNodes() {
			if versions[id] != s.job.Version {
				t.Fatalf("node %s runs version %d after the rollout, want %d", id, versions[id], s.job.Version)
			}
		}
	})
}

// TestPartition_Property: drover.partition = N leaves exactly min(N,
// nodes) nodes on the old version, the last by node ID, and the deployment
// succeeds (or none is needed); lowering it to M in a new version finishes
// the rollout down to min(M, nodes) old nodes, moving the nodes already
// updated in place (their allocations keep their IDs).
func TestPartition_Property(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes := rapid.IntRange(1, 15).Draw(t, "nodes")
		part := rapid.IntRange(0, 18).Draw(t, "partition")
		mp := rapid.IntRange(1, 4).Draw(t, "max_parallel")
		s := newRolloutSim(t, nodes)
		v0 := wavesSimJob(mp, map[string]string{structs.DroverMetaPartition: fmt.Sprint(part)})
		s.register(v0)
		s.drive(t)
		v1 := nextVersion(v0, destructiveChange)
		s.register(v1)
		s.drive(t)
		checkOld := func(stage string, n int) map[string]string {
			versions, ids := s.versionsByNode()
			ready := s.readyNodes()
			for i, id := range ready {
				wantOld := i >= len(ready)-min(n, len(ready))
				if (versions[id] == 0) != wantOld {
					t.Fatalf("%s: node %s runs version %d; want the last %d of %d nodes on version 0", stage, id, versions[id], n, len(ready))
				}
			}
			if d := s.deployment(); d != nil && d.JobVersion == s.job.Version && d.Status != structs.DeploymentStatusSuccessful {
				t.Fatalf("%s: %s", stage, s.describeDeployment())
			}
			return ids
		}
		ids := checkOld("partition", part)

		lower := rapid.IntRange(0, part).Draw(t, "lowered")
		v2 := nextVersion(v1, func(tg *structs.TaskGroup) {
			tg.Meta = map[string]string{structs.DroverMetaPartition: fmt.Sprint(lower)}
		})
		versions, _ := s.versionsByNode()
		s.register(v2)
		s.drive(t)
		after := checkOld("lowered", lower)
		for node, v := range versions {
			if v == 1 && after[node] != ids[node] {
				t.Fatalf("node %s on version 1 was replaced (%s → %s), not updated in place", node, ids[node], after[node])
			}
		}
	})
}
