package prefetch

import (
	"math"
	"slices"
	"sort"
	"time"

	"github.com/drover-project/drover/nomad/structs"
)

// DefaultParallel is the prefetch_parallel of a Docker task that does not
// set it: at most this many nodes pull ahead of the wave at once.
const DefaultParallel = 4

// Docker task config keys the decision reads.
const (
	dockerDriver = "docker"
	keyImage     = "image"
	keyPrefetch  = "prefetch"
	keyParallel  = "prefetch_parallel"
)

// Progress is the leader's record of one node of one deployment. The zero
// value (no record) is a node that was never granted.
type Progress struct {
	// State is structs.PrefetchStatePulling, PrefetchStateDone or
	// PrefetchStateFailed.
	State string
	// GrantedAt is when the grant was made; a pulling grant older than
	// Input.GrantTimeout counts as failed.
	GrantedAt time.Time
	// Tasks are the images granted, fixed at grant time (the node keeps
	// pulling them even when its wave arrives meanwhile).
	Tasks []*structs.PrefetchTask
	// Err is why it failed.
	Err string
}

// Input is what Decide decides from. Nothing in it is modified.
type Input struct {
	// Deployment is the deployment whose job version is rolled out.
	Deployment *structs.Deployment
	// Job is the deployment's job version (Deployment.JobVersion).
	Job *structs.Job
	// Allocs are the job's allocations, every version; each carries its
	// job version in Job.
	Allocs []*structs.Allocation
	// Nodes are the cluster's nodes by ID.
	Nodes map[string]*structs.Node
	// Progress is the record so far, by node ID.
	Progress map[string]Progress
	// GrantTimeout bounds a grant without a report; <= 0 is no bound.
	GrantTimeout time.Duration
}

// Result is Decide's answer.
type Result struct {
	// Progress is the new record by node ID (it replaces Input.Progress).
	Progress map[string]Progress
	// Directives are the grants to publish, sorted by node ID: the nodes
	// pulling or done. A node not listed must not pull (or must stop).
	Directives []NodeDirective
	// Granted are the nodes granted at this step, sorted.
	Granted []string
	// TimedOut are the nodes whose grant ran out at this step, sorted.
	TimedOut []string
	// Parallel is the deployment's limit (0: prefetch off).
	Parallel int
	// WakeAt is when a grant times out next; zero when none will.
	WakeAt time.Time
}

// NodeDirective is one node's directive.
type NodeDirective struct {
	NodeID    string
	Directive *structs.PrefetchDirective
}

// Decide returns which nodes may pull the deployment's images now. It is
// pure.
//
// Invariants (each is a property test):
//   - a deployment that is not running or paused (failed, cancelled,
//     successful, ...) has no directives and no record: every unfinished
//     pull is cancelled;
//   - at most Parallel nodes are pulling (granted and not reported) at
//     once; a paused deployment keeps its pulls but grants no new ones;
//   - a node is granted only when it is ready, runs a live allocation of an
//     older version of the job, has no allocation of the new version in
//     that group, and the new version's Docker image of some task differs
//     from the one it runs (prefetch on, prefetch_parallel > 0);
//   - a node is granted at most once per deployment (a failed node is not
//     granted again);
//   - nodes are granted in node ID order.
func Decide(in Input, now time.Time) Result {
	res := Result{Progress: map[string]Progress{}}
	d := in.Deployment
	if d == nil || in.Job == nil || (d.Status != structs.DeploymentStatusRunning && d.Status != structs.DeploymentStatusPaused) {
		return res
	}
	res.Parallel = Parallel(in.Job)
	need := Needs(in.Job, in.Allocs, in.Nodes)

	pulling := 0
	for _, id := range sortedKeys(in.Progress) {
		p := in.Progress[id]
		n := in.Nodes[id]
		if n == nil || n.Status == structs.NodeStatusDown {
			continue // the node is gone: forget it, which frees its slot
		}
		if p.State == structs.PrefetchStatePulling && in.GrantTimeout > 0 {
			due := p.GrantedAt.Add(in.GrantTimeout)
			if !now.Before(due) {
				p.State, p.Err = structs.PrefetchStateFailed, "no report within "+in.GrantTimeout.String()
				res.TimedOut = append(res.TimedOut, id)
			} else if res.WakeAt.IsZero() || due.Before(res.WakeAt) {
				res.WakeAt = due
			}
		}
		if p.State == structs.PrefetchStatePulling {
			pulling++
		}
		res.Progress[id] = p
	}
	if d.Status == structs.DeploymentStatusRunning {
		for _, id := range sortedKeys(need) {
			if pulling >= res.Parallel {
				break
			}
			if _, ok := res.Progress[id]; ok {
				continue
			}
			res.Progress[id] = Progress{State: structs.PrefetchStatePulling, GrantedAt: now, Tasks: need[id]}
			res.Granted = append(res.Granted, id)
			pulling++
			if due := now.Add(in.GrantTimeout); in.GrantTimeout > 0 && (res.WakeAt.IsZero() || due.Before(res.WakeAt)) {
				res.WakeAt = due
			}
		}
	}
	for _, id := range sortedKeys(res.Progress) {
		p := res.Progress[id]
		if p.State != structs.PrefetchStatePulling && p.State != structs.PrefetchStateDone {
			continue
		}
		res.Directives = append(res.Directives, NodeDirective{NodeID: id, Directive: &structs.PrefetchDirective{
			DeploymentID: d.ID, Namespace: d.Namespace, JobID: d.JobID, JobVersion: d.JobVersion,
			State: p.State, Tasks: p.Tasks,
		}})
	}
	return res
}

// Idle reports whether Decide(in, now) is empty whatever in's allocations,
// nodes and now: no record, and no job version that prefetches (no Docker
// task with prefetch on and prefetch_parallel > 0). A caller may then skip
// reading those. It is pure.
func Idle(in Input) bool {
	return len(in.Progress) == 0 && (in.Job == nil || Parallel(in.Job) == 0)
}

// ApplyReport returns the record after a node's report; a report for a
// node without a pulling grant is taken as it comes when it says done (a
// new leader that lost the record learns what the node has), and ignored
// otherwise. prog is not modified.
func ApplyReport(prog map[string]Progress, nodeID string, r *structs.PrefetchReport) map[string]Progress {
	out := make(map[string]Progress, len(prog)+1)
	for k, v := range prog {
		out[k] = v
	}
	p, ok := out[nodeID]
	switch {
	case r == nil:
	case ok && p.State == structs.PrefetchStatePulling && (r.State == structs.PrefetchStateDone || r.State == structs.PrefetchStateFailed):
		p.State, p.Err = r.State, r.Error
		out[nodeID] = p
	case !ok && r.State == structs.PrefetchStateDone:
		out[nodeID] = Progress{State: structs.PrefetchStateDone}
	}
	return out
}

// Parallel returns job's prefetch limit: the smallest prefetch_parallel of
// its Docker tasks that prefetch (DefaultParallel when unset), 0 when none
// does. A task with prefetch = false or prefetch_parallel = 0 is not pulled
// ahead.
func Parallel(job *structs.Job) int {
	limit := 0
	for _, tg := range job.TaskGroups {
		for _, t := range tg.Tasks {
			if p := taskParallel(t); p > 0 && (limit == 0 || p < limit) {
				limit = p
			}
		}
	}
	return limit
}

// taskParallel is a task's prefetch_parallel, 0 when it is not a Docker
// task with an image that prefetches.
func taskParallel(t *structs.Task) int {
	if t.Driver != dockerDriver || taskImage(t) == "" {
		return 0
	}
	if off, ok := t.Config[keyPrefetch].(bool); ok && !off {
		return 0
	}
	v, present := t.Config[keyParallel]
	if !present || v == nil {
		return DefaultParallel
	}
	n, ok := toInt(v)
	if !ok || n < 0 {
		return 0 // invalid: the driver's validation refuses it
	}
	return n
}

func taskImage(t *structs.Task) string {
	s, _ := t.Config[keyImage].(string)
	return s
}

// Needs returns, by node ID, the images each ready node needs for job: for
// every live allocation of another version of the job on the node whose
// group has no allocation of job's version there, the prefetching Docker
// tasks of the group in job whose image differs from the allocation's
// version's (or that it lacks). Tasks are sorted by group and task.
func Needs(job *structs.Job, allocs []*structs.Allocation, nodes map[string]*structs.Node) map[string][]*structs.PrefetchTask {
	type slot struct{ node, group string }
	onNew := map[slot]bool{}
	for _, a := range allocs {
		if a.JobVersion == job.Version && !a.ServerTerminal() {
			onNew[slot{a.NodeID, a.TaskGroup}] = true
		}
	}
	out := map[string][]*structs.PrefetchTask{}
	seen := map[string]bool{}
	for _, a := range allocs {
		if a.JobVersion == job.Version || a.Terminal() || a.Job == nil || onNew[slot{a.NodeID, a.TaskGroup}] {
			continue
		}
		if n := nodes[a.NodeID]; n == nil || !n.Ready() {
			continue
		}
		tg := job.LookupTaskGroup(a.TaskGroup)
		if tg == nil {
			continue
		}
		oldTG := a.Job.LookupTaskGroup(a.TaskGroup)
		for _, t := range tg.Tasks {
			if taskParallel(t) == 0 || taskImage(t) == oldImage(oldTG, t.Name) {
				continue
			}
			key := a.NodeID + "\x00" + tg.Name + "\x00" + t.Name
			if seen[key] {
				continue
			}
			seen[key] = true
			out[a.NodeID] = append(out[a.NodeID], &structs.PrefetchTask{
				Group: tg.Name, Task: t.Name, Driver: t.Driver, Image: taskImage(t), Config: t.Config,
			})
		}
	}
	for _, ts := range out {
		slices.SortFunc(ts, func(x, y *structs.PrefetchTask) int {
			if x.Group != y.Group {
				if x.Group < y.Group {
					return -1
				}
				return 1
			}
			if x.Task < y.Task {
				return -1
			} else if x.Task > y.Task {
				return 1
			}
			return 0
		})
	}
	return out
}

// oldImage is the image of task name in tg ("" when tg lacks it or it is
// not a Docker task).
func oldImage(tg *structs.TaskGroup, name string) string {
	if tg == nil {
		return ""
	}
	for _, t := range tg.Tasks {
		if t.Name == name && t.Driver == dockerDriver {
			return taskImage(t)
		}
	}
	return ""
}

// toInt converts the integer shapes a decoded config holds.
func toInt(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case int32:
		return int(n), true
	case uint64:
		return int(min(n, math.MaxInt32)), true
	case uint32:
		return int(n), true
	case float64:
		if n != math.Trunc(n) || n > math.MaxInt32 || n < math.MinInt32 {
			return 0, false
		}
		return int(n), true
	}
	return 0, false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
