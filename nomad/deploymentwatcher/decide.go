package deploymentwatcher

import (
	"fmt"
	"sort"
	"time"

	"github.com/google/uuid"

	"github.com/drover-project/drover/nomad/structs"
)

// Pure decisions shared by the machine and by the server's deployment
// endpoints (promote, fail), so that the watcher and the user take the same
// decision the same way.

// complete reports whether d has succeeded: every group has at least
// DesiredTotal healthy allocations and, if it had canaries, is promoted.
// The rule lives in nomad/structs, shared with the scheduler (it gates
// waves on the same counts).
var complete = structs.DeploymentComplete

// settled reports whether group st (with healthyCanaries healthy canaries)
// needs no more progress for now: it is complete, or all its canaries are
// healthy and it waits for promotion. A settled group is exempt from its
// progress deadline (promotion restarts it).
func settled(st *structs.DeploymentState, healthyCanaries int) bool {
	if st.DesiredCanaries > 0 && !st.Promoted {
		return healthyCanaries >= st.DesiredCanaries
	}
	return st.HealthyAllocs >= st.DesiredTotal
}

// failsDeployment reports whether a is an allocation whose health fails its
// deployment: marked unhealthy and not stopped by the server. An allocation
// the server stopped before it became healthy is killed by its client,
// which then reports it unhealthy; that says nothing about the new version.
// The state store counts UnhealthyAllocs by the same rule.
func failsDeployment(a *structs.Allocation) bool {
	return a.DeploymentStatus.IsUnhealthy() && !a.ServerTerminal()
}

// HealthyCanaries counts, per group of d, the canaries among allocs (the
// deployment's allocations) that are healthy and still running.
func HealthyCanaries(d *structs.Deployment, allocs []*structs.Allocation) map[string]int {
	placed := map[string]bool{}
	for _, st := range d.TaskGroups {
		if st == nil {
			continue
		}
		for _, id := range st.PlacedCanaries {
			placed[id] = true
		}
	}
	out := map[string]int{}
	for _, a := range allocs {
		canary := placed[a.ID] || (a.DeploymentStatus != nil && a.DeploymentStatus.Canary)
		if canary && a.DeploymentID == d.ID && structs.CountsHealthy(a) && !a.Terminal() {
			out[a.TaskGroup]++
		}
	}
	return out
}

// UnhealthyCanaries returns the first group, by name, among groups (nil:
// all groups of d) that has canaries and fewer healthy ones than desired,
// with its counts; group is "" when every such group may be promoted.
func UnhealthyCanaries(d *structs.Deployment, allocs []*structs.Allocation, groups []string) (group string, healthy, desired int) {
	if groups == nil {
		for name := range d.TaskGroups {
			groups = append(groups, name)
		}
	}
	groups = append([]string(nil), groups...)
	sort.Strings(groups)
	counts := HealthyCanaries(d, allocs)
	for _, name := range groups {
		st := d.TaskGroups[name]
		if st != nil && st.DesiredCanaries > 0 && !st.Promoted && counts[name] < st.DesiredCanaries {
			return name, counts[name], st.DesiredCanaries
		}
	}
	return "", 0, 0
}

// shouldAutoPromote reports whether d's canaries are to be promoted now:
// some group awaits promotion, every group with canaries has auto_promote,
// and every unpromoted one has all its desired canaries placed and healthy.
func shouldAutoPromote(d *structs.Deployment, allocs []*structs.Allocation) bool {
	counts := HealthyCanaries(d, allocs)
	waiting := false
	for name, st := range d.TaskGroups {
		if st == nil || st.DesiredCanaries == 0 {
			continue
		}
		if !st.AutoPromote {
			return false
		}
		if st.Promoted {
			continue
		}
		if len(st.PlacedCanaries) < st.DesiredCanaries || counts[name] < st.DesiredCanaries {
			return false
		}
		waiting = true
	}
	return waiting
}

// Revert describes the auto-revert decision for a failing deployment.
type Revert struct {
	// Job is a copy of the version to register again, or nil for none.
	Job *structs.Job
	// Suffix is appended to the failure description, in Nomad's words;
	// "" when no group has auto_revert.
	Suffix string
}

// RevertTarget decides the auto-revert of d, a deployment of job's current
// version job, given the job's retained versions: when some group has
// auto_revert, the newest stable version older than d's is registered
// again, unless its specification equals the current one.
func RevertTarget(d *structs.Deployment, job *structs.Job, versions []*structs.Job) Revert {
	autoRevert := false
	for _, st := range d.TaskGroups {
		autoRevert = autoRevert || (st != nil && st.AutoRevert)
	}
	if !autoRevert {
		return Revert{}
	}
	var target *structs.Job
	for _, v := range versions {
		if v.Stable && v.Version < d.JobVersion && (target == nil || v.Version > target.Version) {
			target = v
		}
	}
	if target == nil {
		return Revert{Suffix: " - no stable job version to auto revert to"}
	}
	revert := target.Copy()
	revert.Stop = false
	if job != nil && !revert.SpecChanged(job) {
		return Revert{Suffix: fmt.Sprintf(" - not rolling back to stable job version %d as current job has same specification", target.Version)}
	}
	return Revert{Job: revert, Suffix: fmt.Sprintf(" - rolling back to job version %d", target.Version)}
}

// Failure returns the effects that fail d with description desc (Nomad's
// wording, to which the revert suffix is added): the status update, with
// the auto-revert when there is one, and the evaluation that goes with it.
// The evaluation follows up d, or, on a revert, evaluates the reverted
// version, which then gets a deployment of its own.
func Failure(d *structs.Deployment, job *structs.Job, versions []*structs.Job, desc string) (UpdateStatus, CreateEval) {
	rev := RevertTarget(d, job, versions)
	upd := UpdateStatus{Status: structs.DeploymentStatusFailed, Description: desc + rev.Suffix, RevertJob: rev.Job}
	eval := CreateEval{TriggeredBy: structs.EvalTriggerDeploymentWatcher, DeploymentID: d.ID}
	if rev.Job != nil {
		eval.DeploymentID = ""
	}
	return upd, eval
}

// NewEval returns the pending evaluation ce asks for, of job, created at now.
func NewEval(job *structs.Job, ce CreateEval, now time.Time) *structs.Evaluation {
	return &structs.Evaluation{
		ID:             uuid.NewString(),
		Namespace:      job.Namespace,
		Priority:       job.Priority,
		Type:           job.Type,
		TriggeredBy:    ce.TriggeredBy,
		JobID:          job.ID,
		JobModifyIndex: job.JobModifyIndex,
		DeploymentID:   ce.DeploymentID,
		Status:         structs.EvalStatusPending,
		CreateTime:     now.UnixNano(),
		ModifyTime:     now.UnixNano(),
	}
}
