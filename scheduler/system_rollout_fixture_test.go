package scheduler

import (
	"fmt"
	"time"

	"github.com/drover-project/drover/nomad/structs"
)

// fleet is the fixture of the rollout tests: ready nodes n00, n01, ..., a
// job with groups tg1 and tg2 at version 0 (v0) and a destructive change
// of both groups at version 1 (v1), allocations, and maybe a deployment of
// v1 (d, ID "d1") or of v0 (prev, ID "d0").
type fleet struct {
	nodes  []*structs.Node
	v0, v1 *structs.Job
	prev   *structs.Deployment
	d      *structs.Deployment
	allocs []*structs.Allocation
	now    time.Time
}

// update returns an update block with max_parallel mp and canary pct.
func update(mp, pct int) *structs.UpdateStrategy {
	return &structs.UpdateStrategy{MaxParallel: mp, Canary: pct, HealthCheck: structs.UpdateHealthCheckTaskStates,
		MinHealthyTime: time.Second, HealthyDeadline: time.Minute, ProgressDeadline: 10 * time.Minute}
}

// newFleet returns n nodes and the job whose groups use u1 and u2 (nil: no
// update block) in both versions.
func newFleet(n int, u1, u2 *structs.UpdateStrategy) *fleet {
	f := &fleet{now: time.Unix(1_700_000_000, 0)}
	for i := 0; i < n; i++ {
		f.nodes = append(f.nodes, testNode(nodeName(i)))
	}
	v0 := testJob("svc")
	v0.CreateIndex, v0.JobModifyIndex = 10, 10
	tg2 := *v0.TaskGroups[0]
	v0.TaskGroups[0].Name, tg2.Name = "tg1", "tg2"
	v0.TaskGroups[0].Update, tg2.Update = u1, u2
	v0.TaskGroups = append(v0.TaskGroups, &tg2)
	f.v0 = v0
	f.v1 = nextVersion(v0, destructiveChange)
	f.v1 = changeGroup(f.v1, 1, destructiveChange)
	f.v1.JobModifyIndex = 20
	return f
}

func nodeName(i int) string { return fmt.Sprintf("n%02d", i) }

// changeGroup returns job with group i copied and changed by mutate.
func changeGroup(job *structs.Job, i int, mutate func(*structs.TaskGroup)) *structs.Job {
	c := job.Copy()
	tg := *c.TaskGroups[i]
	tg.Tasks = make([]*structs.Task, len(c.TaskGroups[i].Tasks))
	for k, t := range c.TaskGroups[i].Tasks {
		tc := *t
		tg.Tasks[k] = &tc
	}
	mutate(&tg)
	c.TaskGroups[i] = &tg
	return c
}

// span returns the node indexes from..to-1.
func span(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// deploy makes d a deployment of v1 with the given status and group
// states (DesiredTotal 10 unless set); it returns d for further tweaks.
func (f *fleet) deploy(status string, states map[string]*structs.DeploymentState) *structs.Deployment {
	f.d = &structs.Deployment{ID: "d1", Namespace: f.v1.Namespace, JobID: f.v1.ID, JobVersion: 1,
		JobCreateIndex: f.v1.CreateIndex, Status: status, StatusDescription: structs.DeploymentStatusDescriptionRunning,
		TaskGroups: states, CreateIndex: 30}
	return f.d
}

// deployPrev makes prev a successful deployment of v0.
func (f *fleet) deployPrev() {
	f.prev = &structs.Deployment{ID: "d0", Namespace: f.v0.Namespace, JobID: f.v0.ID, JobVersion: 0,
		JobCreateIndex: f.v0.CreateIndex, Status: structs.DeploymentStatusSuccessful,
		TaskGroups: map[string]*structs.DeploymentState{}, CreateIndex: 15}
}

// old runs v0 of group on the nodes.
func (f *fleet) old(group string, nodes ...int) {
	for _, i := range nodes {
		a := testAlloc(fmt.Sprintf("%s-%s-v0", group, nodeName(i)), f.v0, nodeName(i))
		a.TaskGroup, a.DeploymentID = group, "d0"
		f.allocs = append(f.allocs, a)
	}
}

// allocHealth is an allocation's deployment health in fixtures.
type allocHealth int

const (
	pending   allocHealth = iota // running, no health yet
	healthy                      // running and healthy
	unhealthy                    // running and marked unhealthy
	failed                       // client failed and marked unhealthy
)

// cur runs v1 of group on the nodes, in deployment d1, with health h;
// canary marks them canaries (listed in d's PlacedCanaries when d has the
// group). It returns the allocations.
func (f *fleet) cur(group string, h allocHealth, canary bool, nodes ...int) []*structs.Allocation {
	var out []*structs.Allocation
	for _, i := range nodes {
		a := testAlloc(fmt.Sprintf("%s-%s-v1", group, nodeName(i)), f.v1, nodeName(i))
		a.TaskGroup, a.DeploymentID = group, "d1"
		a.CreateTime = f.now.Add(-time.Hour).UnixNano()
		a.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: canary}
		switch h {
		case healthy:
			a.DeploymentStatus.Healthy = boolPtr(true)
		case unhealthy:
			a.DeploymentStatus.Healthy = boolPtr(false)
		case failed:
			a.DeploymentStatus.Healthy = boolPtr(false)
			a.ClientStatus = structs.AllocClientStatusFailed
		}
		if canary && f.d != nil && f.d.TaskGroups[group] != nil {
			st := f.d.TaskGroups[group]
			st.PlacedCanaries = append(st.PlacedCanaries, a.ID)
		}
		f.allocs = append(f.allocs, a)
		out = append(out, a)
	}
	return out
}

func boolPtr(b bool) *bool { return &b }

// reconcile runs ReconcileSystem for v1 (or job when given) at f.now with the
// latest deployment: d, else prev.
func (f *fleet) reconcile(job ...*structs.Job) SystemReconcileResult {
	j := f.v1
	if len(job) > 0 {
		j = job[0]
	}
	d := f.d
	if d == nil {
		d = f.prev
	}
	return ReconcileSystem(SystemReconcileInput{Job: j, Nodes: f.nodes, Allocs: f.allocs, Deployment: d,
		Now: f.now, Feasible: NewFeasibleFunc(j)})
}

// gateSummary describes what group does in res, in one line:
//
//	place=P destructive=D canary=C inplace=I deferred=F stop=S | total=T placed=A canaries=N/W
//
// canaries=N/W are the placed canaries after the decision (listed ones
// plus this decision's) and DesiredCanaries. The part after "|" reads
// "untracked" when the deployment has no state for the group and "none"
// without deployment.
func gateSummary(res SystemReconcileResult, group string) string {
	g := groupNamed(res, group)
	if g == nil {
		return "missing"
	}
	d := res.DesiredTGUpdates[group]
	s := fmt.Sprintf("place=%d destructive=%d canary=%d inplace=%d deferred=%d stop=%d",
		d.Place, d.DestructiveUpdate, d.Canary, d.InPlaceUpdate, len(g.Deferred), d.Stop)
	switch {
	case res.Deployment == nil:
		return s + " | none"
	case res.Deployment.TaskGroups[group] == nil:
		return s + " | untracked"
	}
	st := res.Deployment.TaskGroups[group]
	return s + fmt.Sprintf(" | total=%d placed=%d canaries=%d/%d",
		st.DesiredTotal, st.PlacedAllocs, len(st.PlacedCanaries)+int(d.Canary), st.DesiredCanaries)
}

// nodesOf returns the node names of placements, marked "*" when canary.
func nodesOf(ps []SystemPlacement) []string {
	out := []string{}
	for _, p := range ps {
		name := p.Node.Name
		if p.Canary {
			name += "*"
		}
		out = append(out, name)
	}
	return out
}
