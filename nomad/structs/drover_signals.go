package structs

import (
	"fmt"
	"strconv"
	"strings"
)

// Rollout signals: what the group meta keys drover.auto_pause_on and
// drover.auto_fail_on count over a deployment's allocations of the group
// (docs/semantics.md, "Auto-pause and auto-fail on runtime signals"). The
// deployment watcher decides on them; the state store records them when a
// paused deployment resumes (DeploymentState.SignalsAtResume).
const (
	DroverMetaAutoPauseOn = "drover.auto_pause_on"
	DroverMetaAutoFailOn  = "drover.auto_fail_on"

	// SignalRestarts is the sum of the Restarts of the allocation's tasks.
	SignalRestarts = "restarts"
	// SignalOOM is the number of the tasks' retained Terminated events
	// that say the task was OOM killed.
	SignalOOM = "oom"
	// SignalPullFailures is the number of the tasks' retained Driver
	// Failure events whose error is a failed image pull.
	SignalPullFailures = "pull_failures"
	// SignalUnhealthy is 1 for an allocation marked unhealthy in its
	// deployment that the server did not stop, else 0.
	SignalUnhealthy = "unhealthy"
)

// RolloutSignalNames lists the signals in the order descriptions use.
var RolloutSignalNames = []string{SignalRestarts, SignalOOM, SignalPullFailures, SignalUnhealthy}

// Task event wording the client uses (client/allocrunner/taskrunner) and the
// start of the text of a failed image pull (drivers/docker PullError); a
// test of the task runner ties them to the client's events.
const (
	taskEventTerminated    = "Terminated"
	taskEventDriverFailure = "Driver Failure"
	taskDetailOOMKilled    = "oom_killed"
	PullFailureText        = "failed to pull image"
)

// RolloutCondition is one condition of a drover.auto_*_on list: it holds
// when the signal's count is above Threshold (OrEqual: at least Threshold).
type RolloutCondition struct {
	Signal    string
	OrEqual   bool
	Threshold int
}

// String is the condition as written canonically ("restarts>2").
func (c RolloutCondition) String() string { return c.Signal + c.Op() + strconv.Itoa(c.Threshold) }

// Op is ">" or ">=".
func (c RolloutCondition) Op() string {
	if c.OrEqual {
		return ">="
	}
	return ">"
}

// Holds reports whether count satisfies the condition.
func (c RolloutCondition) Holds(count int) bool {
	if c.OrEqual {
		return count >= c.Threshold
	}
	return count > c.Threshold
}

// ParseRolloutConditions parses a comma-separated list such as
// "restarts>2,oom>0,pull_failures>0,unhealthy>1". Spaces around items and
// operators are allowed; a signal appears at most once. The problems name
// the bad condition.
func ParseRolloutConditions(s string) ([]RolloutCondition, []string) {
	var out []RolloutCondition
	var probs []string
	seen := map[string]bool{}
	items := strings.Split(s, ",")
	for _, raw := range items {
		item := strings.TrimSpace(raw)
		if item == "" {
			probs = append(probs, fmt.Sprintf("empty condition in %q (want e.g. \"restarts>2,oom>0\")", s))
			continue
		}
		c, err := parseRolloutCondition(item)
		if err != "" {
			probs = append(probs, fmt.Sprintf("condition %q: %s", item, err))
			continue
		}
		if seen[c.Signal] {
			probs = append(probs, fmt.Sprintf("condition %q: signal %s given twice", item, c.Signal))
			continue
		}
		seen[c.Signal] = true
		out = append(out, c)
	}
	return out, probs
}

func parseRolloutCondition(item string) (RolloutCondition, string) {
	i := strings.IndexAny(item, "<>=!")
	if i < 0 {
		return RolloutCondition{}, "no operator (want signal>N or signal>=N)"
	}
	name := strings.TrimSpace(item[:i])
	j := i
	for j < len(item) && strings.ContainsRune("<>=!", rune(item[j])) {
		j++
	}
	op, num := item[i:j], strings.TrimSpace(item[j:])
	known := false
	for _, s := range RolloutSignalNames {
		known = known || s == name
	}
	if !known {
		return RolloutCondition{}, fmt.Sprintf("unknown signal %q (known: %s)", name, strings.Join(RolloutSignalNames, ", "))
	}
	if op != ">" && op != ">=" {
		return RolloutCondition{}, fmt.Sprintf("operator %q not supported (want > or >=)", op)
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 {
		return RolloutCondition{}, fmt.Sprintf("threshold %q is not a non-negative integer", num)
	}
	if op == ">=" && n == 0 {
		return RolloutCondition{}, "always holds (>= 0); use >= 1 or > 0"
	}
	return RolloutCondition{Signal: name, OrEqual: op == ">=", Threshold: n}, ""
}

// AllocRolloutSignals returns the signal counts of one allocation (see the
// Signal* constants); signals with a zero count are absent.
func AllocRolloutSignals(a *Allocation) map[string]int {
	out := map[string]int{}
	for _, ts := range a.TaskStates {
		if ts == nil {
			continue
		}
		if ts.Restarts > 0 {
			out[SignalRestarts] += int(ts.Restarts)
		}
		for _, e := range ts.Events {
			switch {
			case e == nil:
			case e.Type == taskEventTerminated && e.Details[taskDetailOOMKilled] == "true":
				out[SignalOOM]++
			case e.Type == taskEventDriverFailure && isPullFailure(e):
				out[SignalPullFailures]++
			}
		}
	}
	if a.DeploymentStatus.IsUnhealthy() && !a.ServerTerminal() {
		out[SignalUnhealthy] = 1
	}
	return out
}

func isPullFailure(e *TaskEvent) bool {
	return strings.Contains(e.DriverError, PullFailureText) || strings.Contains(e.DisplayMessage, PullFailureText)
}

// CountsForRollout reports whether a, an allocation of deployment d, is
// counted for d's rollout signals: it was placed for d (created with or
// after it). An allocation updated in place joined d with the task states
// of its earlier version, whose restarts are not the new version's.
func CountsForRollout(d *Deployment, a *Allocation) bool {
	return a.CreateIndex >= d.CreateIndex
}

// GroupRolloutSignals sums AllocRolloutSignals per task group over the
// allocations of deployment d that count for it (CountsForRollout).
func GroupRolloutSignals(d *Deployment, allocs []*Allocation) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, a := range allocs {
		if !CountsForRollout(d, a) {
			continue
		}
		for sig, n := range AllocRolloutSignals(a) {
			if out[a.TaskGroup] == nil {
				out[a.TaskGroup] = map[string]int{}
			}
			out[a.TaskGroup][sig] += n
		}
	}
	return out
}

func init() {
	check := func(v string, tg *TaskGroup, jobType string) []string {
		_, probs := ParseRolloutConditions(v)
		switch {
		case jobType != JobTypeService && jobType != JobTypeSystem:
			probs = append(probs, "only service and system jobs have deployments")
		case !tg.UsesDeployment():
			probs = append(probs, "the group has no deployment (its update block has max_parallel = 0)")
		}
		return probs
	}
	RegisterDroverMetaKey(DroverMetaAutoPauseOn, check)
	RegisterDroverMetaKey(DroverMetaAutoFailOn, check)
}
