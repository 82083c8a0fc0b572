package scheduler

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// rolloutSim drives the real scheduler through a harness and plays the
// parts of the clients (health), the deployment watcher (success, failure)
// and the operator (promote, pause) by writing the fake state directly.
type rolloutSim struct {
	h     *harness
	job   *structs.Job
	names map[string]int // deployment ID → ordinal, in order of appearance
}

func newRolloutSim(t failer, nodes int) *rolloutSim {
	s := &rolloutSim{h: newHarness(t), names: map[string]int{}}
	for i := 0; i < nodes; i++ {
		s.h.state.upsertNode(testNode(nodeName(i)))
	}
	return s
}

// register stores job as the next version and evaluates it.
func (s *rolloutSim) register(job *structs.Job) *structs.Evaluation {
	s.h.state.upsertJob(job)
	s.job = job
	return s.h.process(job)
}

// deployment returns the job's latest deployment, or nil.
func (s *rolloutSim) deployment() *structs.Deployment {
	d, _ := s.h.state.LatestDeploymentByJobID(nil, s.job.Namespace, s.job.ID)
	return d
}

// setDeployment stores a copy of the latest deployment changed by mutate.
func (s *rolloutSim) setDeployment(mutate func(d *structs.Deployment)) {
	c := s.deployment().Copy()
	mutate(c)
	s.h.state.deployments[c.ID] = c
}

// markHealth sets the health of the allocations of the latest deployment
// that pick selects (nil: every one without health), as a client would,
// and recounts the deployment as the state store does. failClient also
// marks unhealthy ones failed on the client.
func (s *rolloutSim) markHealth(pick func(a *structs.Allocation) bool, healthy, failClient bool) {
	d := s.deployment()
	for _, a := range s.h.state.liveAllocs(s.job.ID) {
		if a.DeploymentID != d.ID || a.DeploymentStatus.IsHealthy() || a.DeploymentStatus.IsUnhealthy() {
			continue
		}
		if pick != nil && !pick(a) {
			continue
		}
		c := a.Copy()
		if c.DeploymentStatus == nil {
			c.DeploymentStatus = &structs.AllocDeploymentStatus{}
		}
		c.DeploymentStatus.Healthy = boolPtr(healthy)
		if !healthy && failClient {
			c.ClientStatus = structs.AllocClientStatusFailed
		}
		s.h.state.upsertAlloc(c)
	}
	s.recount()
}

// recount sets HealthyAllocs and UnhealthyAllocs of the latest deployment,
// by the state store's rule for healthy (structs.CountsHealthy).
func (s *rolloutSim) recount() {
	all, _ := s.h.state.AllocsByJob(nil, s.job.Namespace, s.job.ID, true)
	s.setDeployment(func(d *structs.Deployment) {
		for _, st := range d.TaskGroups {
			st.HealthyAllocs, st.UnhealthyAllocs = 0, 0
		}
		for _, a := range all {
			st := d.TaskGroups[a.TaskGroup]
			if a.DeploymentID != d.ID || st == nil {
				continue
			}
			if structs.CountsHealthy(a) {
				st.HealthyAllocs++
			} else if a.DeploymentStatus.IsUnhealthy() {
				st.UnhealthyAllocs++
			}
		}
	})
}

// promote promotes every group with canaries, as the state store does.
func (s *rolloutSim) promote() {
	s.setDeployment(func(d *structs.Deployment) {
		for _, st := range d.TaskGroups {
			if st.DesiredCanaries > 0 {
				st.Promoted = true
			}
		}
		d.StatusDescription = structs.DeploymentStatusDescriptionRunning
	})
}

// succeedIfComplete marks the latest deployment successful when
// DeploymentComplete says so, as the watcher would, and reports it.
func (s *rolloutSim) succeedIfComplete() bool {
	d := s.deployment()
	if d == nil || !d.Active() || !structs.DeploymentComplete(d) {
		return false
	}
	s.setDeployment(func(d *structs.Deployment) {
		d.Status, d.StatusDescription = structs.DeploymentStatusSuccessful, structs.DeploymentStatusDescriptionSuccessful
	})
	return true
}

// describePlan summarises the newest plan of eval (or says none was made)
// by node: new allocations, replacements, canaries (both kinds) and other
// stops.
func (s *rolloutSim) describePlan(eval *structs.Evaluation, before int) string {
	if len(s.h.plans) == before {
		return "no plan"
	}
	p := s.h.lastPlan()
	var placed, replaced, canaries, stopped []string
	for _, a := range planAllocs(p.NodeAllocation) {
		switch {
		case a.DeploymentStatus != nil && a.DeploymentStatus.Canary:
			canaries = append(canaries, a.NodeID)
		case a.PreviousAllocation != "":
			replaced = append(replaced, a.NodeID)
		default:
			placed = append(placed, a.NodeID)
		}
	}
	for _, a := range planAllocs(p.NodeUpdate) {
		if a.DesiredDescription != DescUpdating {
			stopped = append(stopped, a.NodeID)
		}
	}
	var parts []string
	for _, set := range []struct {
		name  string
		nodes []string
	}{{"place", placed}, {"replace", replaced}, {"canary", canaries}, {"stop", stopped}} {
		if len(set.nodes) > 0 {
			slices.Sort(set.nodes)
			parts = append(parts, set.name+" "+strings.Join(set.nodes, ","))
		}
	}
	if len(parts) == 0 {
		return "plan changes no allocation"
	}
	return strings.Join(parts, "; ")
}

// describeDeployment summarises the latest deployment's group "web".
func (s *rolloutSim) describeDeployment() string {
	d := s.deployment()
	if d == nil {
		return "no deployment"
	}
	if _, ok := s.names[d.ID]; !ok {
		s.names[d.ID] = len(s.names) + 1
	}
	st := d.TaskGroups["web"]
	return fmt.Sprintf("deployment #%d v%d %s %q: total %d placed %d healthy %d canaries %d/%d promoted %v",
		s.names[d.ID], d.JobVersion, d.Status, d.StatusDescription, st.DesiredTotal, st.PlacedAllocs,
		st.HealthyAllocs, len(st.PlacedCanaries), st.DesiredCanaries, st.Promoted)
}

// evaluate runs one evaluation and describes what it did.
func (s *rolloutSim) evaluate() string {
	before := len(s.h.plans)
	eval := s.h.process(s.job)
	return s.describePlan(eval, before) + "\n  " + s.describeDeployment()
}

// TestRollout_Simulation walks a whole life: version 0 rolls out and
// succeeds; version 1 canaries 40% of five nodes with max_parallel 2, waits
// for promotion while a node joins, then rolls on in waves of two.
func TestRollout_Simulation(t *testing.T) {
	s := newRolloutSim(t, 5)
	var out strings.Builder
	step := func(title, text string) { fmt.Fprintf(&out, "%s\n  %s\n", title, text) }

	v0 := testJob("web")
	v0.TaskGroups[0].Update = update(2, 40)
	before := len(s.h.plans)
	eval := s.register(v0)
	step("register v0", s.describePlan(eval, before)+"\n  "+s.describeDeployment())
	s.markHealth(nil, true, false)
	step("all healthy", fmt.Sprintf("complete %v", s.succeedIfComplete())+"\n  "+s.describeDeployment())

	v1 := nextVersion(v0, destructiveChange)
	before = len(s.h.plans)
	eval = s.register(v1)
	step("register v1", s.describePlan(eval, before)+"\n  "+s.describeDeployment())
	step("evaluate again", s.evaluate())
	s.markHealth(nil, true, false)
	step("canaries healthy", s.evaluate())
	s.h.state.upsertNode(testNode(nodeName(5)))
	step("node n05 joins", s.evaluate())
	step("complete before promotion?", fmt.Sprintf("%v", s.succeedIfComplete()))
	s.promote()
	step("promote", s.evaluate())
	step("evaluate again", s.evaluate())
	s.markHealth(nil, true, false)
	step("wave healthy", s.evaluate())
	s.markHealth(nil, true, false)
	step("last wave healthy", fmt.Sprintf("complete %v", s.succeedIfComplete())+"\n  "+s.describeDeployment())

	want := `register v0
  place n00,n01,n02,n03,n04
  deployment #1 v0 running "Deployment is running": total 5 placed 5 healthy 0 canaries 0/0 promoted false
all healthy
  complete true
  deployment #1 v0 successful "Deployment completed successfully": total 5 placed 5 healthy 5 canaries 0/0 promoted false
register v1
  canary n00,n01
  deployment #2 v1 running "Deployment is running but requires manual promotion": total 5 placed 2 healthy 0 canaries 2/2 promoted false
evaluate again
  no plan
  deployment #2 v1 running "Deployment is running but requires manual promotion": total 5 placed 2 healthy 0 canaries 2/2 promoted false
canaries healthy
  no plan
  deployment #2 v1 running "Deployment is running but requires manual promotion": total 5 placed 2 healthy 2 canaries 2/2 promoted false
node n05 joins
  plan changes no allocation
  deployment #2 v1 running "Deployment is running but requires manual promotion": total 6 placed 2 healthy 2 canaries 2/2 promoted false
complete before promotion?
  false
promote
  place n05; replace n02,n03
  deployment #2 v1 running "Deployment is running": total 6 placed 5 healthy 2 canaries 2/2 promoted true
evaluate again
  no plan
  deployment #2 v1 running "Deployment is running": total 6 placed 5 healthy 2 canaries 2/2 promoted true
wave healthy
  replace n04
  deployment #2 v1 running "Deployment is running": total 6 placed 6 healthy 5 canaries 2/2 promoted true
last wave healthy
  complete true
  deployment #2 v1 successful "Deployment completed successfully": total 6 placed 6 healthy 6 canaries 2/2 promoted true
`
	require.Equal(t, want, out.String())
}

func TestSystemSched_CanaryPlan(t *testing.T) {
	s := newRolloutSim(t, 4)
	v0 := testJob("web")
	v0.TaskGroups[0].Update = update(2, 50)
	s.register(v0)
	s.markHealth(nil, true, false)
	s.succeedIfComplete()

	eval := s.register(nextVersion(v0, destructiveChange))
	plan := s.h.lastPlan()
	require.Equal(t, uint64(2), eval.PlanAnnotations.DesiredTGUpdates["web"].Canary)
	require.Equal(t, uint64(2), eval.PlanAnnotations.DesiredTGUpdates["web"].DestructiveUpdate)
	require.Equal(t, plan.Deployment.ID, eval.DeploymentID)
	var ids []string
	for _, a := range planAllocs(plan.NodeAllocation) {
		require.True(t, a.DeploymentStatus.Canary)
		require.Nil(t, a.DeploymentStatus.Healthy)
		require.Equal(t, plan.Deployment.ID, a.DeploymentID)
		require.NotEmpty(t, a.PreviousAllocation, "a canary replaces the allocation on its node")
		ids = append(ids, a.ID)
	}
	st := plan.Deployment.TaskGroups["web"]
	require.ElementsMatch(t, ids, st.PlacedCanaries)
	require.Equal(t, 2, st.DesiredCanaries)
	require.Len(t, planAllocs(plan.NodeUpdate), 2, "the old allocations stop")
	require.Equal(t, structs.DeploymentStatusDescriptionRunningNeedsPromotion, plan.Deployment.StatusDescription)

	// A partly rejected plan must not leave phantom canaries.
	s.h.state.upsertNode(testNode("n04"))
	s.setDeployment(func(d *structs.Deployment) {
		d.TaskGroups["web"].PlacedCanaries = append(d.TaskGroups["web"].PlacedCanaries, "never-committed")
	})
	s.h.process(s.job)
	require.ElementsMatch(t, ids, s.deployment().TaskGroups["web"].PlacedCanaries)
}

func TestSystemSched_StaggerCreatesFollowup(t *testing.T) {
	s := newRolloutSim(t, 4)
	v0 := testJob("web")
	v0.TaskGroups[0].Update = update(2, 0)
	v0.TaskGroups[0].Update.Stagger = time.Minute
	s.register(v0)
	s.markHealth(nil, true, false)
	s.succeedIfComplete()

	first := s.register(nextVersion(v0, destructiveChange))
	require.Equal(t, uint64(2), first.PlanAnnotations.DesiredTGUpdates["web"].DestructiveUpdate)
	require.Empty(t, s.h.created, "the first wave starts at once")

	s.h.now = s.h.now.Add(20 * time.Second)
	s.markHealth(nil, true, false)
	plans := len(s.h.plans)
	eval := s.h.process(s.job)
	require.Len(t, s.h.plans, plans, "nothing to place before the stagger ends")
	require.Len(t, s.h.created, 1)
	f := s.h.created[0]
	require.Equal(t, structs.EvalTriggerRollingUpdate, f.TriggeredBy)
	require.Equal(t, first.DeploymentID, f.DeploymentID)
	require.Equal(t, s.h.now.Add(40*time.Second), f.WaitUntil)
	require.Equal(t, structs.EvalStatusPending, f.Status)
	require.Equal(t, eval.ID, f.PreviousEval)
	require.Equal(t, f.ID, eval.NextEval)
	require.Equal(t, s.job.JobModifyIndex, f.JobModifyIndex)

	s.h.now = f.WaitUntil
	second := s.h.process(s.job)
	require.Equal(t, uint64(2), second.PlanAnnotations.DesiredTGUpdates["web"].DestructiveUpdate)
	require.Len(t, s.h.created, 1)
}

func TestSystemSched_PauseAndFailGatePlacements(t *testing.T) {
	s := newRolloutSim(t, 4)
	v0 := testJob("web")
	v0.TaskGroups[0].Update = update(1, 0)
	s.register(v0)
	s.markHealth(nil, true, false)
	s.succeedIfComplete()
	s.register(nextVersion(v0, destructiveChange))
	s.markHealth(nil, true, false)

	s.setDeployment(func(d *structs.Deployment) {
		d.Status, d.StatusDescription = structs.DeploymentStatusPaused, structs.DeploymentStatusDescriptionPaused
	})
	s.h.state.upsertNode(testNode("n04"))
	require.Equal(t, "plan changes no allocation\n  deployment #1 v1 paused \"Deployment is paused\": total 5 placed 1 healthy 1 canaries 0/0 promoted false",
		s.evaluate(), "counts change, nothing is placed")

	s.setDeployment(func(d *structs.Deployment) {
		d.Status, d.StatusDescription = structs.DeploymentStatusRunning, structs.DeploymentStatusDescriptionRunning
	})
	require.Equal(t, "place n04; replace n01\n  deployment #1 v1 running \"Deployment is running\": total 5 placed 3 healthy 1 canaries 0/0 promoted false",
		s.evaluate(), "resumed")

	s.markHealth(func(a *structs.Allocation) bool { return a.NodeID == "n01" }, false, true)
	s.setDeployment(func(d *structs.Deployment) {
		d.Status, d.StatusDescription = structs.DeploymentStatusFailed, structs.DeploymentStatusDescriptionFailedAllocations
	})
	s.h.state.upsertNode(testNode("n05"))
	plans := len(s.h.plans)
	eval := s.h.process(s.job)
	require.Len(t, s.h.plans, plans, "a failed deployment stops the rollout, new nodes included")
	require.Empty(t, eval.DeploymentID)
}

// TestSystemSched_DownNodeHealthDoesNotCompleteRollout: a node whose
// allocation of the deployment became healthy goes down. Its allocation
// is lost and the node leaves DesiredTotal; its health must leave
// HealthyAllocs with it, or the deployment succeeds before the last node
// is updated and that node is then replaced without a wave.
func TestSystemSched_DownNodeHealthDoesNotCompleteRollout(t *testing.T) {
	s := newRolloutSim(t, 4)
	v0 := testJob("web")
	v0.TaskGroups[0].Update = update(1, 0)
	s.register(v0)
	s.markHealth(nil, true, false)
	require.True(t, s.succeedIfComplete())

	var out strings.Builder
	step := func(title, text string) { fmt.Fprintf(&out, "%s\n  %s\n", title, text) }
	before := len(s.h.plans)
	eval := s.register(nextVersion(v0, destructiveChange))
	step("register v1", s.describePlan(eval, before)+"\n  "+s.describeDeployment())
	s.markHealth(nil, true, false)
	down := testNode(nodeName(0))
	down.Status = structs.NodeStatusDown
	s.h.state.upsertNode(down)
	step("n00 healthy, then down", s.evaluate())
	s.recount()
	for i := 0; i < 3; i++ {
		s.markHealth(nil, true, false)
		complete := s.succeedIfComplete()
		step(fmt.Sprintf("wave healthy, complete %v", complete), s.evaluate())
	}
	want := `register v1
  replace n00
  deployment #1 v1 running "Deployment is running": total 4 placed 1 healthy 0 canaries 0/0 promoted false
n00 healthy, then down
  replace n01; stop n00
  deployment #1 v1 running "Deployment is running": total 3 placed 2 healthy 1 canaries 0/0 promoted false
wave healthy, complete false
  replace n02
  deployment #1 v1 running "Deployment is running": total 3 placed 3 healthy 1 canaries 0/0 promoted false
wave healthy, complete false
  replace n03
  deployment #1 v1 running "Deployment is running": total 3 placed 4 healthy 2 canaries 0/0 promoted false
wave healthy, complete true
  no plan
  deployment #1 v1 successful "Deployment completed successfully": total 3 placed 4 healthy 3 canaries 0/0 promoted false
`
	require.Equal(t, want, out.String())
}
