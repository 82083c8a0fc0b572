package scheduler

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/drover-project/drover/nomad/structs"
)

// surgeVersion returns the next version of job whose task runs args n: a
// destructive change.
func surgeVersion(job *structs.Job, n int) *structs.Job {
	return nextVersion(job, func(tg *structs.TaskGroup) {
		tg.Tasks[0].Config = map[string]any{"command": "/bin/sleep", "args": []string{fmt.Sprint(3600 + n)}}
	})
}

// TestSurgeRolloutProperties drives random surge rollouts through the real
// scheduler (rolloutSim): new versions (a fix or a revert) registered at any
// time, allocations turning healthy, unhealthy or failing on the client,
// clients starting them, the watcher failing and completing deployments,
// nodes joining. After every evaluation, on every node:
//   - at most one live allocation older than the job's version, and at
//     most one of the job's version;
//   - an older allocation that stopped while one of the job's version ran
//     on its node stopped only once that one was ready (healthy), or
//     because another older one was kept;
//   - a node that had a live allocation still has one, and one that had a
//     running one (its client runs it) still has one (no gap);
//   - a new allocation beside a live one names no PreviousAllocation (the
//     client would stop the old one).
func TestSurgeRolloutProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes := rapid.IntRange(1, 6).Draw(t, "nodes")
		s := newRolloutSim(t, nodes)
		v := testJob("web")
		v.TaskGroups[0].Update = update(rapid.IntRange(1, 3).Draw(t, "max_parallel"), 0)
		v.TaskGroups[0].Meta = map[string]string{structs.DroverMetaSurge: "true"}
		s.register(v)
		s.markHealth(nil, true, false)
		s.succeedIfComplete()
		s.evaluate()
		versions := 1

		for step := rapid.IntRange(1, 40).Draw(t, "steps"); step > 0; step-- {
			switch rapid.IntRange(0, 7).Draw(t, "action") {
			case 0:
				if versions < 5 {
					s.h.state.upsertJob(surgeVersion(s.job, versions))
					s.job = s.h.state.jobs[s.job.NamespacedID()]
					versions++
				}
			case 1:
				s.markHealth(func(*structs.Allocation) bool { return rapid.Bool().Draw(t, "healthy?") }, true, false)
				for _, a := range s.h.state.liveAllocs(s.job.ID) {
					if a.DeploymentStatus.IsHealthy() && a.ClientStatus == structs.AllocClientStatusPending {
						c := a.Copy() // healthy means its client runs it
						c.ClientStatus = structs.AllocClientStatusRunning
						s.h.state.upsertAlloc(c)
					}
				}
			case 2:
				fail := rapid.Bool().Draw(t, "client fails")
				s.markHealth(func(*structs.Allocation) bool { return rapid.IntRange(0, 3).Draw(t, "unhealthy?") == 0 }, false, fail)
			case 3:
				for _, a := range s.h.state.liveAllocs(s.job.ID) {
					if a.ClientStatus == structs.AllocClientStatusPending && rapid.Bool().Draw(t, "runs?") {
						c := a.Copy()
						c.ClientStatus = structs.AllocClientStatusRunning
						s.h.state.upsertAlloc(c)
					}
				}
			case 4:
				// The watcher: an unhealthy allocation fails the
				// deployment, a complete one succeeds.
				if d := s.deployment(); d != nil && d.Active() && d.TaskGroups["web"].UnhealthyAllocs > 0 {
					s.setDeployment(func(d *structs.Deployment) {
						d.Status, d.StatusDescription = structs.DeploymentStatusFailed, structs.DeploymentStatusDescriptionFailedAllocations
					})
				}
				s.succeedIfComplete()
			case 5:
				s.h.state.upsertNode(testNode(nodeName(nodes)))
				nodes++
			default:
				checkSurgeEval(t, s)
			}
		}
		checkSurgeEval(t, s)
	})
}

// checkSurgeEval runs one evaluation and checks the surge invariants.
func checkSurgeEval(t *rapid.T, s *rolloutSim) {
	before := surgeLive(s)
	plans := len(s.h.plans)
	s.h.process(s.job)
	after := surgeLive(s)
	job := s.job
	current := func(a *structs.Allocation) bool { return a.JobVersion == job.Version }
	for node, was := range before {
		now := after[node]
		if len(was) > 0 && len(now) == 0 {
			t.Fatalf("node %s: no allocation is live after the evaluation (had %s)", node, surgeIDs(was))
		}
		if running(was) && !running(now) {
			t.Fatalf("node %s: no allocation runs after the evaluation (had %s, has %s)", node, surgeIDs(was), surgeIDs(now))
		}
		var old, cur []*structs.Allocation
		for _, a := range now {
			if current(a) {
				cur = append(cur, a)
			} else {
				old = append(old, a)
			}
		}
		if len(old) > 1 || len(cur) > 1 {
			t.Fatalf("node %s: %d older and %d current allocations live: %s", node, len(old), len(cur), surgeIDs(now))
		}
		// Stops of older allocations while a current one ran beside.
		var curBefore *structs.Allocation
		for _, a := range was {
			if current(a) {
				curBefore = a
			}
		}
		for _, a := range was {
			if current(a) || slices.ContainsFunc(now, func(b *structs.Allocation) bool { return b.ID == a.ID }) {
				continue
			}
			if curBefore == nil || !slices.ContainsFunc(now, func(b *structs.Allocation) bool { return b.ID == curBefore.ID }) {
				continue
			}
			if !surgeReady(curBefore) && len(old) == 0 {
				t.Fatalf("node %s: older %s stopped while %s (current) is not healthy", node, a.ID, curBefore.ID)
			}
		}
	}
	for _, p := range s.h.plans[plans:] {
		for node, allocs := range p.NodeAllocation {
			for _, a := range allocs {
				if a.PreviousAllocation != "" && len(before[node]) > 0 {
					t.Fatalf("node %s: new allocation %s names previous %s", node, a.ID, a.PreviousAllocation)
				}
			}
		}
	}
}

// running reports whether one of allocs runs on its client.
func running(allocs []*structs.Allocation) bool {
	return slices.ContainsFunc(allocs, func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusRunning })
}

func surgeLive(s *rolloutSim) map[string][]*structs.Allocation {
	out := map[string][]*structs.Allocation{}
	for _, a := range s.h.state.liveAllocs(s.job.ID) {
		out[a.NodeID] = append(out[a.NodeID], a)
	}
	return out
}

func surgeIDs(allocs []*structs.Allocation) string {
	var out []string
	for _, a := range allocs {
		out = append(out, fmt.Sprintf("%s(v%d)", a.ID, a.JobVersion))
	}
	return fmt.Sprint(out)
}

// TestSurgeRolloutWalk: one surge wave, step by step.
func TestSurgeRolloutWalk(t *testing.T) {
	s := newRolloutSim(t, 2)
	v0 := testJob("web")
	v0.TaskGroups[0].Update = update(1, 0)
	v0.TaskGroups[0].Meta = map[string]string{structs.DroverMetaSurge: "true"}
	s.register(v0)
	s.markHealth(nil, true, false)
	if !s.succeedIfComplete() {
		t.Fatal("v0 did not complete")
	}
	live := func() string {
		var out []string
		for _, a := range s.h.state.liveAllocs(s.job.ID) {
			out = append(out, fmt.Sprintf("%s:v%d", a.NodeID, a.JobVersion))
		}
		slices.Sort(out)
		return fmt.Sprint(out)
	}
	steps := []string{}
	s.register(nextVersion(v0, destructiveChange))
	steps = append(steps, "register v1: "+live())
	steps = append(steps, "again: "+live()+" "+s.evaluate())
	s.markHealth(nil, true, false)
	// n00's v0 stops (not shown: a stop for the update); n01's v1 is a surge
	// placement beside v0, so it names no previous allocation ("place").
	steps = append(steps, "n00 healthy: "+s.evaluate()+" "+live())
	s.markHealth(nil, false, true)
	steps = append(steps, "n01 fails: "+live())
	want := []string{
		"register v1: [n00:v0 n00:v1 n01:v0]",
		"again: [n00:v0 n00:v1 n01:v0] no plan\n  deployment #1 v1 running \"Deployment is running\": total 2 placed 1 healthy 0 canaries 0/0 promoted false",
		"n00 healthy: place n01\n  deployment #1 v1 running \"Deployment is running\": total 2 placed 2 healthy 1 canaries 0/0 promoted false [n00:v1 n01:v0 n01:v1]",
		"n01 fails: [n00:v1 n01:v0]",
	}
	if !slices.Equal(want, steps) {
		t.Fatalf("got:\n%q\nwant:\n%q", steps, want)
	}
}
