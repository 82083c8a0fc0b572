package scheduler

import (
	"fmt"
	"time"

	"testing"

	"pgregory.net/rapid"

	"github.com/drover-project/drover/nomad/structs"
)

// genRolloutInput draws a system job in the middle of a rollout: mostly
// ready nodes, every one running some version of group "web" (or nothing)
// with any health, canary flag and age, and mostly a deployment of the
// current version in any status.
func genRolloutInput(t *rapid.T) SystemReconcileInput {
	v0 := testJob("web")
	v0.CreateIndex = 10
	v0.TaskGroups[0].Update = update(rapid.IntRange(1, 4).Draw(t, "max_parallel"),
		rapid.SampledFrom([]int{0, 20, 50, 100, 250}).Draw(t, "canary"))
	v0.TaskGroups[0].Update.Stagger = time.Duration(rapid.SampledFrom([]int{0, 30}).Draw(t, "stagger")) * time.Second
	versions := []*structs.Job{v0}
	for i := rapid.IntRange(0, 2).Draw(t, "versions"); i > 0; i-- {
		versions = append(versions, nextVersion(versions[len(versions)-1], destructiveChange))
	}
	job := versions[len(versions)-1]
	in := SystemReconcileInput{Job: job, Now: time.Unix(1000, 0), Feasible: NewFeasibleFunc(job)}
	in.Deployment = &structs.Deployment{ID: "d", Namespace: job.Namespace, JobID: job.ID, JobVersion: job.Version,
		JobCreateIndex: job.CreateIndex,
		Status: rapid.SampledFrom([]string{structs.DeploymentStatusRunning, structs.DeploymentStatusRunning,
			structs.DeploymentStatusPaused, structs.DeploymentStatusFailed, structs.DeploymentStatusCancelled}).Draw(t, "status"),
		TaskGroups: map[string]*structs.DeploymentState{"web": {
			DesiredCanaries: rapid.IntRange(0, 4).Draw(t, "desired canaries"),
			Promoted:        rapid.Bool().Draw(t, "promoted"),
		}}}
	if rapid.IntRange(0, 4).Draw(t, "no deployment") == 0 {
		in.Deployment = nil
	}
	for i := rapid.IntRange(1, 10).Draw(t, "nodes"); i > 0; i-- {
		n := testNode(fmt.Sprintf("n%02d", i))
		switch rapid.IntRange(0, 8).Draw(t, "node state") {
		case 0:
			ineligible(n)
		case 1:
			draining(n)
		}
		in.Nodes = append(in.Nodes, n)
		for k := rapid.IntRange(0, 2).Draw(t, "allocs on node"); k > 0; k-- {
			in.Allocs = append(in.Allocs, genRolloutAlloc(t, versions, n.ID, len(in.Allocs)))
		}
	}
	return in
}

func genRolloutAlloc(t *rapid.T, versions []*structs.Job, nodeID string, seq int) *structs.Allocation {
	v := versions[rapid.IntRange(0, len(versions)-1).Draw(t, "alloc version")]
	a := testAlloc(fmt.Sprintf("a%02d", seq), v, nodeID)
	a.CreateIndex = uint64(seq + 1)
	a.CreateTime = time.Unix(1000-int64(rapid.IntRange(0, 60).Draw(t, "age")), 0).UnixNano()
	if v == versions[len(versions)-1] && rapid.IntRange(0, 3).Draw(t, "other deployment") > 0 {
		a.DeploymentID = "d"
	}
	a.ClientStatus = rapid.SampledFrom([]string{structs.AllocClientStatusRunning, structs.AllocClientStatusRunning,
		structs.AllocClientStatusPending, structs.AllocClientStatusFailed}).Draw(t, "client status")
	a.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: rapid.IntRange(0, 2).Draw(t, "canary") == 0}
	switch rapid.IntRange(0, 2).Draw(t, "health") {
	case 1:
		a.DeploymentStatus.Healthy = boolPtr(true)
	case 2:
		a.DeploymentStatus.Healthy = boolPtr(false)
	}
	return a
}

func TestRolloutGatingProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genRolloutInput(t)
		res := ReconcileSystem(in)
		checkPartition(t, in, res)
		checkAtMostOnePerNode(t, in, res)
		checkCounts(t, res)
		checkGating(t, in, res)
		if in.Deployment == nil && res.Deployment != nil {
			checkBudget(t, in, groupNamed(res, "web"), "", res.Deployment.TaskGroups["web"])
		}
	})
}

// TestRolloutSimulationProperties plays random lives of a rollout through
// the real scheduler: health reports (healthy, unhealthy, failed), promote,
// pause, resume, fail, nodes joining, time passing and a job stop, with an
// evaluation after each step. After every evaluation:
//   - at most max_parallel allocations of the deployment on the original
//     nodes are live and not healthy;
//   - canaries never exceed the rounded-up percentage of the original
//     nodes nor max_parallel;
//   - nodes that joined get nothing while canaries await promotion;
//   - a deployment that was not running changed no allocation;
//   - a stopped job never gets a deployment.
func TestRolloutSimulationProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(t, "nodes")
		s := newRolloutSim(t, n)
		v0 := testJob("web")
		u := update(rapid.IntRange(1, 3).Draw(t, "max_parallel"), rapid.SampledFrom([]int{0, 25, 40, 100}).Draw(t, "canary"))
		if rapid.Bool().Draw(t, "stagger") {
			u.Stagger = 30 * time.Second
		}
		v0.TaskGroups[0].Update = u
		s.register(v0)
		s.markHealth(nil, true, false)
		s.succeedIfComplete()
		s.register(nextVersion(v0, destructiveChange))
		sim := simCheck{s: s, u: u, original: n}
		sim.check(t)
		for i := rapid.IntRange(1, 30).Draw(t, "steps"); i > 0; i-- {
			if stopped := sim.step(t); stopped {
				return
			}
		}
	})
}

// simCheck holds what the simulation property checks against.
type simCheck struct {
	s        *rolloutSim
	u        *structs.UpdateStrategy
	original int // nodes n00.. that ran version 0
	joined   int
}

// step plays one random action and evaluates; it reports whether the job
// was stopped (the life ends).
func (c *simCheck) step(t *rapid.T) bool {
	s := c.s
	pick := func(*structs.Allocation) bool { return rapid.Bool().Draw(t, "pick") }
	setStatus := func(from, to, desc string) {
		if d := s.deployment(); d.Status == from || (from == "" && d.Active()) {
			s.setDeployment(func(d *structs.Deployment) { d.Status, d.StatusDescription = to, desc })
		}
	}
	switch rapid.SampledFrom([]string{"healthy", "healthy", "unhealthy", "fail", "promote", "pause", "resume",
		"fail deployment", "join", "tick", "evaluate", "stop"}).Draw(t, "action") {
	case "healthy":
		s.markHealth(pick, true, false)
	case "unhealthy":
		s.markHealth(pick, false, false)
	case "fail":
		s.markHealth(pick, false, true)
	case "promote":
		if d := s.deployment(); d.Active() && d.TaskGroups["web"].DesiredCanaries > 0 {
			s.promote()
		}
	case "pause":
		setStatus(structs.DeploymentStatusRunning, structs.DeploymentStatusPaused, structs.DeploymentStatusDescriptionPaused)
	case "resume":
		setStatus(structs.DeploymentStatusPaused, structs.DeploymentStatusRunning, structs.DeploymentStatusDescriptionRunning)
	case "fail deployment":
		setStatus("", structs.DeploymentStatusFailed, structs.DeploymentStatusDescriptionFailedByUser)
	case "join":
		s.h.state.upsertNode(testNode(fmt.Sprintf("j%02d", c.joined)))
		c.joined++
	case "tick":
		s.h.now = s.h.now.Add(time.Duration(rapid.IntRange(5, 40).Draw(t, "seconds")) * time.Second)
	case "stop":
		c.stop(t)
		return true
	}
	before, plans := s.deployment().Status, len(s.h.plans)
	s.h.process(s.job)
	if before != structs.DeploymentStatusRunning && len(s.h.plans) > plans {
		if p := s.h.lastPlan(); len(p.NodeAllocation)+len(p.NodeUpdate) > 0 {
			t.Fatalf("deployment %s: the plan changes allocations", before)
		}
	}
	c.check(t)
	return false
}

// check verifies the invariants on the current state.
func (c *simCheck) check(t *rapid.T) {
	s := c.s
	d := s.deployment()
	st := d.TaskGroups["web"]
	inFlight, canaries := 0, 0
	for _, a := range s.h.state.liveAllocs(s.job.ID) {
		if a.DeploymentID != d.ID {
			continue
		}
		joined := a.NodeID[0] == 'j'
		if !joined && !a.DeploymentStatus.IsHealthy() {
			inFlight++
		}
		if isCanary(a) {
			canaries++
		}
		if joined && st.DesiredCanaries > 0 && !st.Promoted {
			t.Fatalf("node %s joined while canaries await promotion and got %s", a.NodeID, a.ID)
		}
	}
	if inFlight > c.u.MaxParallel {
		t.Fatalf("%d allocations in flight, max_parallel %d", inFlight, c.u.MaxParallel)
	}
	bound := min((min(c.u.Canary, 100)*c.original+99)/100, c.u.MaxParallel)
	if canaries > bound || st.DesiredCanaries > bound {
		t.Fatalf("%d canaries running, %d desired, bound %d", canaries, st.DesiredCanaries, bound)
	}
}

// stop stops the job and checks that no deployment of the stopped version
// appears and that nothing of the job runs afterwards.
func (c *simCheck) stop(t *rapid.T) {
	s := c.s
	stopped := s.job.Copy()
	stopped.Stop = true
	stopped.Version++
	s.register(stopped)
	if d := s.deployment(); d.JobVersion == stopped.Version || d.Active() {
		t.Fatalf("stopped job: latest deployment v%d is %s", d.JobVersion, d.Status)
	}
	if live := s.h.state.liveAllocs(s.job.ID); len(live) > 0 {
		t.Fatalf("stopped job: %d allocations still live", len(live))
	}
}
