package gc

import (
	"sort"
	"time"

	"github.com/drover-project/drover/nomad/structs"
)

// Thresholds are the ages after which terminal objects are collected.
// Zero collects at once (a forced GC).
type Thresholds struct {
	Eval       time.Duration
	Job        time.Duration
	Deployment time.Duration
	Node       time.Duration
}

// Nomad's defaults.
var DefaultThresholds = Thresholds{
	Eval:       time.Hour,
	Job:        4 * time.Hour,
	Deployment: time.Hour,
	Node:       24 * time.Hour,
}

// Input is the state Collect decides on. Jobs are the current version of
// every job.
type Input struct {
	Jobs        []*structs.Job
	Evals       []*structs.Evaluation
	Allocs      []*structs.Allocation
	Deployments []*structs.Deployment
	Nodes       []*structs.Node
}

// Collect returns what may be deleted at now. Every list in the result is
// sorted.
func Collect(in Input, now time.Time, th Thresholds) *structs.GCRequest {
	c := newCollector(in, now)
	out := &structs.GCRequest{}
	deadJobs := c.collectJobs(th.Job, out)
	c.collectEvals(th.Eval, deadJobs, out)
	c.collectDeployments(th.Deployment, deadJobs, out)
	c.collectNodes(th.Node, out)
	sort.Strings(out.Evals)
	sort.Strings(out.Allocs)
	sort.Strings(out.Deployments)
	sort.Strings(out.Nodes)
	sort.Slice(out.Jobs, func(i, j int) bool {
		if out.Jobs[i].Namespace != out.Jobs[j].Namespace {
			return out.Jobs[i].Namespace < out.Jobs[j].Namespace
		}
		return out.Jobs[i].ID < out.Jobs[j].ID
	})
	return out
}

type collector struct {
	now         int64 // unix nanoseconds
	jobs        map[structs.NamespacedID]*structs.Job
	evalsByJob  map[structs.NamespacedID][]*structs.Evaluation
	allocsByJob map[structs.NamespacedID][]*structs.Allocation
	allocsEval  map[string][]*structs.Allocation
	allocsNode  map[string][]*structs.Allocation
	deployments map[string]*structs.Deployment
	depsByJob   map[structs.NamespacedID][]*structs.Deployment
	nodes       []*structs.Node
	nodeByID    map[string]*structs.Node
}

func newCollector(in Input, now time.Time) *collector {
	c := &collector{
		now:         now.UnixNano(),
		jobs:        map[structs.NamespacedID]*structs.Job{},
		evalsByJob:  map[structs.NamespacedID][]*structs.Evaluation{},
		allocsByJob: map[structs.NamespacedID][]*structs.Allocation{},
		allocsEval:  map[string][]*structs.Allocation{},
		allocsNode:  map[string][]*structs.Allocation{},
		deployments: map[string]*structs.Deployment{},
		depsByJob:   map[structs.NamespacedID][]*structs.Deployment{},
		nodes:       in.Nodes,
		nodeByID:    map[string]*structs.Node{},
	}
	for _, n := range in.Nodes {
		c.nodeByID[n.ID] = n
	}
	for _, j := range in.Jobs {
		c.jobs[nsID(j.Namespace, j.ID)] = j
	}
	for _, e := range in.Evals {
		k := nsID(e.Namespace, e.JobID)
		c.evalsByJob[k] = append(c.evalsByJob[k], e)
	}
	for _, a := range in.Allocs {
		k := nsID(a.Namespace, a.JobID)
		c.allocsByJob[k] = append(c.allocsByJob[k], a)
		c.allocsEval[a.EvalID] = append(c.allocsEval[a.EvalID], a)
		c.allocsNode[a.NodeID] = append(c.allocsNode[a.NodeID], a)
	}
	for _, d := range in.Deployments {
		c.deployments[d.ID] = d
		k := nsID(d.Namespace, d.JobID)
		c.depsByJob[k] = append(c.depsByJob[k], d)
	}
	return c
}

func nsID(ns, id string) structs.NamespacedID {
	if ns == "" {
		ns = structs.DefaultNamespace
	}
	return structs.NamespacedID{Namespace: ns, ID: id}
}

// older reports whether a time (unix nanoseconds) is at least th before now.
func (c *collector) older(at int64, th time.Duration) bool {
	return c.now-at >= int64(th)
}

// collectJobs purges stopped jobs whose last change is older than th and
// that have no live allocation and no non-terminal evaluation; their
// evaluations, allocations and deployments go with them. It returns the
// purged jobs.
func (c *collector) collectJobs(th time.Duration, out *structs.GCRequest) map[structs.NamespacedID]bool {
	dead := map[structs.NamespacedID]bool{}
	for k, j := range c.jobs {
		if !j.Stop || !c.older(j.SubmitTime, th) {
			continue
		}
		if !c.allTerminalEvals(c.evalsByJob[k]) || !c.allDone(c.allocsByJob[k]) {
			continue
		}
		active := false
		for _, d := range c.depsByJob[k] {
			active = active || d.Active()
		}
		if active {
			continue
		}
		dead[k] = true
		out.Jobs = append(out.Jobs, structs.GCJob{Namespace: k.Namespace, ID: k.ID, JobModifyIndex: j.JobModifyIndex})
		for _, e := range c.evalsByJob[k] {
			out.Evals = append(out.Evals, e.ID)
		}
		for _, a := range c.allocsByJob[k] {
			out.Allocs = append(out.Allocs, a.ID)
		}
		for _, d := range c.depsByJob[k] {
			out.Deployments = append(out.Deployments, d.ID)
		}
	}
	return dead
}

func (c *collector) allTerminalEvals(evals []*structs.Evaluation) bool {
	for _, e := range evals {
		if !e.Terminal() {
			return false
		}
	}
	return true
}

// done reports whether an allocation is over on its node: the client
// reported it finished (complete, failed, lost), or the server stopped it
// and its node is down or gone, so no client runs it. An allocation the
// server stopped but whose client still runs it is live: its client must
// not see it disappear.
func (c *collector) done(a *structs.Allocation) bool {
	if a.ClientTerminal() {
		return true
	}
	if !a.ServerTerminal() {
		return false
	}
	n := c.nodeByID[a.NodeID]
	return n == nil || n.Status == structs.NodeStatusDown
}

func (c *collector) allDone(allocs []*structs.Allocation) bool {
	for _, a := range allocs {
		if !c.done(a) {
			return false
		}
	}
	return true
}

// collectEvals collects terminal evaluations older than th whose every
// allocation may go (see allocCollectable); the allocations go with them.
func (c *collector) collectEvals(th time.Duration, dead map[structs.NamespacedID]bool, out *structs.GCRequest) {
	known := map[string]bool{}
	for _, evals := range c.evalsByJob {
		for _, e := range evals {
			known[e.ID] = true
		}
	}
	// Allocations whose evaluation is gone go on their own.
	for evalID, allocs := range c.allocsEval {
		if known[evalID] {
			continue
		}
		for _, a := range allocs {
			if !dead[nsID(a.Namespace, a.JobID)] && c.allocCollectable(a, th) {
				out.Allocs = append(out.Allocs, a.ID)
			}
		}
	}
	for k, evals := range c.evalsByJob {
		if dead[k] {
			continue
		}
		for _, e := range evals {
			if !e.Terminal() || !c.older(e.ModifyTime, th) {
				continue
			}
			allocs := c.allocsEval[e.ID]
			ok := true
			for _, a := range allocs {
				ok = ok && c.allocCollectable(a, th)
			}
			if !ok {
				continue
			}
			out.Evals = append(out.Evals, e.ID)
			for _, a := range allocs {
				out.Allocs = append(out.Allocs, a.ID)
			}
		}
	}
}

// allocCollectable: done (see done), unchanged for th, not part of an active
// deployment, not the record of done work of a live batch or sysbatch
// job's current version, and not a failure still to be rescheduled.
func (c *collector) allocCollectable(a *structs.Allocation, th time.Duration) bool {
	if !c.done(a) || !c.older(a.ModifyTime, th) {
		return false
	}
	if d := c.deployments[a.DeploymentID]; d != nil && d.Active() {
		return false
	}
	j := c.jobs[nsID(a.Namespace, a.JobID)]
	if j != nil && !j.Stop && (j.Type == structs.JobTypeBatch || j.Type == structs.JobTypeSysBatch) && a.JobVersion == j.Version {
		return false
	}
	return !c.awaitsReschedule(a, j)
}

// awaitsReschedule reports whether a is a failed allocation of a live
// service or batch job that the scheduler may still replace, as in Nomad: it carries the
// reschedule history its replacement inherits, so collecting it would
// reset the group's reschedule budget. That is a failure the server did not
// stop, not yet replaced (no NextAllocation), whose group reschedules
// (unlimited, or attempts > 0) and which is either unlimited, not yet
// rescheduled at all, or rescheduled last within the policy's interval.
func (c *collector) awaitsReschedule(a *structs.Allocation, j *structs.Job) bool {
	if j == nil || j.Stop || j.Status == structs.JobStatusDead || (j.Type != structs.JobTypeService && j.Type != structs.JobTypeBatch) {
		return false
	}
	if a.ClientStatus != structs.AllocClientStatusFailed || a.DesiredStatus == structs.AllocDesiredStatusStop || a.NextAllocation != "" {
		return false
	}
	tg := j.LookupTaskGroup(a.TaskGroup)
	if tg == nil || tg.ReschedulePolicy == nil {
		return false
	}
	p := tg.ReschedulePolicy
	switch {
	case p.Unlimited:
		return true
	case p.Attempts == 0:
		return false
	case a.RescheduleTracker == nil || len(a.RescheduleTracker.Events) == 0:
		return true
	}
	last := a.RescheduleTracker.Events[len(a.RescheduleTracker.Events)-1]
	return c.now-last.RescheduleTime <= int64(p.Interval)
}

// collectDeployments collects terminal deployments older than th, except
// those of a live job's current version and those an allocation that
// stays still points to.
func (c *collector) collectDeployments(th time.Duration, dead map[structs.NamespacedID]bool, out *structs.GCRequest) {
	gone := map[string]bool{}
	for _, id := range out.Allocs {
		gone[id] = true
	}
	for k, deps := range c.depsByJob {
		if dead[k] {
			continue
		}
		j := c.jobs[k]
		for _, d := range deps {
			if d.Active() || !c.older(d.ModifyTime, th) {
				continue
			}
			if j != nil && d.JobVersion == j.Version {
				continue
			}
			kept := false
			for _, a := range c.allocsByJob[k] {
				if a.DeploymentID == d.ID && !gone[a.ID] && !c.done(a) {
					kept = true
					break
				}
			}
			if !kept {
				out.Deployments = append(out.Deployments, d.ID)
			}
		}
	}
}

// collectNodes collects nodes down for longer than th with no live
// allocation.
func (c *collector) collectNodes(th time.Duration, out *structs.GCRequest) {
	for _, n := range c.nodes {
		if n.Status != structs.NodeStatusDown || !c.older(n.StatusUpdatedAt*int64(time.Second), th) {
			continue
		}
		if c.allDone(c.allocsNode[n.ID]) {
			out.Nodes = append(out.Nodes, n.ID)
		}
	}
}
