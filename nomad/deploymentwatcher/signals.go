package deploymentwatcher

import (
	"fmt"
	"sort"
	"strings"

	"github.com/drover-project/drover/nomad/structs"
)

// Auto-pause and auto-fail on runtime signals (docs/semantics.md): the
// group meta keys drover.auto_pause_on and drover.auto_fail_on list
// conditions on the group's rollout signals (structs.AllocRolloutSignals)
// summed over the deployment's allocations of the group placed for it
// (structs.CountsForRollout). The decision is
// pure; the machine turns it into an UpdateStatus.

// signalRules are the parsed conditions of one group.
type signalRules struct {
	pause, fail []structs.RolloutCondition
}

// rulesOf parses the conditions of every group of job (nil: none). The keys
// were validated at registration; an unparsable one (a job registered
// before the key existed) contributes the conditions that parse.
func rulesOf(job *structs.Job) map[string]signalRules {
	if job == nil {
		return nil
	}
	out := map[string]signalRules{}
	for _, tg := range job.TaskGroups {
		var r signalRules
		if v, ok := tg.Meta[structs.DroverMetaAutoPauseOn]; ok {
			r.pause, _ = structs.ParseRolloutConditions(v)
		}
		if v, ok := tg.Meta[structs.DroverMetaAutoFailOn]; ok {
			r.fail, _ = structs.ParseRolloutConditions(v)
		}
		if len(r.pause)+len(r.fail) > 0 {
			out[tg.Name] = r
		}
	}
	return out
}

// toleratesUnhealthy reports whether group's conditions count unhealthy
// allocations: then an unhealthy allocation of the group no longer fails
// the deployment by itself; its condition decides.
func (r signalRules) toleratesUnhealthy() bool {
	for _, c := range append(append([]structs.RolloutCondition(nil), r.pause...), r.fail...) {
		if c.Signal == structs.SignalUnhealthy {
			return true
		}
	}
	return false
}

// SignalVerdict is what the rollout signals ask of a deployment.
type SignalVerdict struct {
	// Status is DeploymentStatusFailed, DeploymentStatusPaused, or "" for
	// nothing.
	Status string
	// Reason names the signal, its count, the condition, the group and the
	// nodes: `restarts 3 > 2 in group "web" on nodes a1b2c3d4, e5f6a7b8`.
	Reason string
}

// DecideSignals decides on deployment d (its allocations allocs) under
// rules. Every group's auto_fail_on is checked first (fail wins over
// pause), whether d runs or is paused; then, only while d runs, each
// group's auto_pause_on, whose condition must hold and whose count must
// also be above the group's SignalsAtResume (a resumed deployment is not
// paused again by the counts it was resumed with). Groups are checked by
// name and conditions in the order written; the first that holds decides.
func DecideSignals(d *structs.Deployment, rules map[string]signalRules, allocs []*structs.Allocation) SignalVerdict {
	if len(rules) == 0 || d == nil {
		return SignalVerdict{}
	}
	groups := make([]string, 0, len(rules))
	for name := range rules {
		if d.TaskGroups[name] != nil {
			groups = append(groups, name)
		}
	}
	sort.Strings(groups)
	counted := allocs[:0:0]
	for _, a := range allocs {
		if structs.CountsForRollout(d, a) {
			counted = append(counted, a)
		}
	}
	allocs = counted
	counts := structs.GroupRolloutSignals(d, allocs)
	for _, g := range groups {
		for _, c := range rules[g].fail {
			if n := counts[g][c.Signal]; c.Holds(n) {
				return SignalVerdict{Status: structs.DeploymentStatusFailed, Reason: reason(c, n, 0, g, allocs)}
			}
		}
	}
	if d.Status != structs.DeploymentStatusRunning {
		return SignalVerdict{}
	}
	for _, g := range groups {
		at := d.TaskGroups[g].SignalsAtResume
		for _, c := range rules[g].pause {
			if n := counts[g][c.Signal]; c.Holds(n) && n > at[c.Signal] {
				return SignalVerdict{Status: structs.DeploymentStatusPaused, Reason: reason(c, n, at[c.Signal], g, allocs)}
			}
		}
	}
	return SignalVerdict{}
}

// maxNamedNodes bounds the nodes a reason names.
const maxNamedNodes = 5

// reason describes condition c holding with count n (atResume: the count
// at the last resume, named when not 0) in group g, with the short IDs of
// the nodes whose allocations counted.
func reason(c structs.RolloutCondition, n, atResume int, g string, allocs []*structs.Allocation) string {
	seen := map[string]bool{}
	var nodes []string
	for _, a := range allocs {
		if a.TaskGroup != g || structs.AllocRolloutSignals(a)[c.Signal] == 0 {
			continue
		}
		id := a.NodeID
		if len(id) > 8 {
			id = id[:8]
		}
		if id != "" && !seen[id] {
			seen[id] = true
			nodes = append(nodes, id)
		}
	}
	sort.Strings(nodes)
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d %s %d", c.Signal, n, c.Op(), c.Threshold)
	if atResume > 0 {
		fmt.Fprintf(&b, " (%d at resume)", atResume)
	}
	fmt.Fprintf(&b, " in group %q", g)
	if len(nodes) > 0 {
		named := nodes[:min(len(nodes), maxNamedNodes)]
		fmt.Fprintf(&b, " on nodes %s", strings.Join(named, ", "))
		if more := len(nodes) - len(named); more > 0 {
			fmt.Fprintf(&b, " and %d more", more)
		}
	}
	return b.String()
}

// Descriptions of the statuses the signals set.
const (
	signalPausedPrefix = "Deployment paused: "
	signalFailedPrefix = "Deployment failed: "
)

// applySignals returns the effects of verdict v on the machine's
// deployment (nil: none): a failure (auto-reverting as any failure) or a
// pause.
func (m *Machine) applySignals(v SignalVerdict) []Effect {
	switch v.Status {
	case structs.DeploymentStatusFailed:
		return m.fail(signalFailedPrefix + v.Reason)
	case structs.DeploymentStatusPaused:
		desc := signalPausedPrefix + v.Reason
		m.d.Status, m.d.StatusDescription = structs.DeploymentStatusPaused, desc
		return []Effect{UpdateStatus{Status: structs.DeploymentStatusPaused, Description: desc}}
	}
	return nil
}
