package health

import (
	"fmt"
	"sort"
	"time"

	"github.com/drover-project/drover/nomad/structs"
)

// Task states, as the task runner reports them.
const (
	TaskRunning = "running"
	TaskDead    = "dead"
)

// Reasons of decisions. The deadline reasons take the durations; the failed
// task reason takes the task's name.
const (
	ReasonHealthy        = "All tasks running and checks passing for min_healthy_time"
	ReasonManual         = "Health is set through the API (health_check = \"manual\")"
	ReasonFailedTask     = "Unhealthy because of failed task %q"
	ReasonTasksDead      = "Unhealthy because every task is dead"
	ReasonNotRunning     = "Task not running by healthy_deadline of %v"
	ReasonNotRunningLong = "Task not running for min_healthy_time of %v by healthy_deadline of %v"
	ReasonChecks         = "Service checks not passing by healthy_deadline of %v"
	ReasonChecksLong     = "Service checks not passing for min_healthy_time of %v by healthy_deadline of %v"
)

// Input is what Evaluate decides on: the group's update strategy, when
// tracking began, and the current state of the tasks and checks.
type Input struct {
	// Mode is the update block's health_check: structs.UpdateHealthCheck*.
	// "" means "checks" (the default); any other value never decides.
	Mode            string
	MinHealthyTime  time.Duration
	HealthyDeadline time.Duration // 0: no deadline
	// Start is when the client began tracking health (the runner started,
	// or the allocation joined a new deployment). The deadline counts from
	// it.
	Start  time.Time
	Tasks  []Task
	Checks []Check // Nomad-native checks that count; read in "checks" mode only
}

// Task is one task's state.
type Task struct {
	Name        string
	State       string // "pending", "running" or "dead"
	Failed      bool   // dead and failed: it will not run again
	StartedAt   time.Time
	Restarts    uint64
	LastRestart time.Time
	// CompleteOK marks a dead, non-failed task whose end is expected (a
	// batch or sysbatch task that completed, a non-sidecar lifecycle task):
	// it does not need to run for the allocation to be healthy.
	CompleteOK bool
}

// Check is one check's latest status.
type Check struct {
	ID      string
	Name    string
	Passing bool
	Since   time.Time // when Passing took its current value
}

// Result is a decision, or when to look again.
type Result struct {
	Decided bool
	Healthy bool   // when Decided
	Reason  string // why (or, undecided, what is awaited)
	// WakeAt is, when not Decided, the next moment the decision may change
	// without a change of input (min_healthy_time elapsing, the deadline);
	// zero when only a change of input can change it.
	WakeAt time.Time
}

// Evaluate decides an allocation's deployment health at now:
//
//	manual (or an unknown mode)    never decides
//	a task failed                  unhealthy at once
//	every task dead, not all OK    unhealthy at once
//	ready at R ≤ now               healthy if R ≤ deadline, else unhealthy
//	now ≥ deadline                 unhealthy
//	otherwise                      undecided; WakeAt = min(R, deadline)
//
// The allocation is ready at R = (the latest of Start, the start of a
// running task and, in "checks" mode, the moment a check became passing) +
// MinHealthyTime, when every task that must run is running and, in "checks"
// mode, every check passes. A restart therefore starts min_healthy_time
// over, and so does a new deployment (a new Start). The deadline is Start +
// HealthyDeadline. Evaluate keeps no memory: callers treat the first
// decision as final.
func Evaluate(in Input, now time.Time) Result {
	switch in.Mode {
	case "", structs.UpdateHealthCheckChecks, structs.UpdateHealthCheckTaskStates:
	case structs.UpdateHealthCheckManual:
		return Result{Reason: ReasonManual}
	default:
		return Result{Reason: fmt.Sprintf("Unknown health_check %q: health is not tracked", in.Mode)}
	}
	tasks := sortedTasks(in.Tasks)
	for _, t := range tasks {
		if t.State == TaskDead && t.Failed {
			return unhealthy(fmt.Sprintf(ReasonFailedTask, t.Name))
		}
	}
	r := computeReadiness(in, tasks)
	if r.allDead {
		return unhealthy(ReasonTasksDead)
	}
	var deadline time.Time
	if in.HealthyDeadline > 0 {
		deadline = in.Start.Add(in.HealthyDeadline)
	}
	at, ready := r.readyAt(in.Start, in.MinHealthyTime)
	// Invariants: when ready, the conditions have held without a break
	// from at-MinHealthyTime until now.
	if ready && !at.After(now) {
		if deadline.IsZero() || !at.After(deadline) {
			return Result{Decided: true, Healthy: true, Reason: ReasonHealthy}
		}
		return unhealthy(r.deadlineReason(in))
	}
	if !deadline.IsZero() && !now.Before(deadline) {
		return unhealthy(r.deadlineReason(in))
	}
	wake := deadline
	if ready && (wake.IsZero() || at.Before(wake)) {
		wake = at
	}
	return Result{Reason: r.waiting(), WakeAt: wake}
}

func unhealthy(reason string) Result { return Result{Decided: true, Reason: reason} }

// readiness is which conditions hold now, and since when.
type readiness struct {
	checksMode  bool
	allDone     bool      // every task is CompleteOK: nothing has to run
	allDead     bool      // every task is dead and not all are CompleteOK
	tasksOK     bool      // every task that must run is running
	tasksSince  time.Time // latest start of a running task
	taskWaiting string    // the first task not running, by name
	checksOK    bool      // every check passes (true outside "checks" mode)
	checksSince time.Time // latest moment a check became passing
	checkWait   string    // the first check not passing, by ID
}

func computeReadiness(in Input, tasks []Task) readiness {
	r := readiness{checksMode: in.Mode != structs.UpdateHealthCheckTaskStates, tasksOK: len(tasks) > 0, checksOK: true}
	if len(tasks) == 0 {
		r.taskWaiting = "(no task state yet)"
	}
	done, dead := 0, 0
	for _, t := range tasks {
		if t.CompleteOK {
			done++
			continue
		}
		if t.State == TaskDead {
			dead++
		}
		if t.State != TaskRunning {
			if r.tasksOK {
				r.tasksOK, r.taskWaiting = false, t.Name
			}
			continue
		}
		since := t.StartedAt
		if t.LastRestart.After(since) {
			since = t.LastRestart
		}
		if since.After(r.tasksSince) {
			r.tasksSince = since
		}
	}
	r.allDone = len(tasks) > 0 && done == len(tasks)
	r.allDead = dead > 0 && dead+done == len(tasks)
	if !r.checksMode {
		return r
	}
	checks := append([]Check(nil), in.Checks...)
	sort.Slice(checks, func(i, j int) bool { return checks[i].ID < checks[j].ID })
	for _, c := range checks {
		if !c.Passing {
			if r.checksOK {
				r.checksOK, r.checkWait = false, c.Name
			}
			continue
		}
		if c.Since.After(r.checksSince) {
			r.checksSince = c.Since
		}
	}
	return r
}

// readyAt returns when the allocation is (or will be) healthy if nothing
// changes, and whether it can be at all without a change. An allocation
// whose tasks all completed as expected is ready at once (its checks no
// longer run).
func (r readiness) readyAt(start time.Time, minHealthy time.Duration) (time.Time, bool) {
	if r.allDone {
		return time.Time{}, true
	}
	if !r.tasksOK || !r.checksOK {
		return time.Time{}, false
	}
	since := start
	for _, t := range []time.Time{r.tasksSince, r.checksSince} {
		if t.After(since) {
			since = t
		}
	}
	return since.Add(minHealthy), true
}

// deadlineReason says which condition was not met by the deadline.
func (r readiness) deadlineReason(in Input) string {
	d, m := in.HealthyDeadline, in.MinHealthyTime
	switch {
	case !r.tasksOK:
		return fmt.Sprintf(ReasonNotRunning, d)
	case !r.checksOK:
		return fmt.Sprintf(ReasonChecks, d)
	case !r.checksSince.After(r.tasksSince):
		return fmt.Sprintf(ReasonNotRunningLong, m, d)
	}
	return fmt.Sprintf(ReasonChecksLong, m, d)
}

// waiting says what an undecided allocation waits for.
func (r readiness) waiting() string {
	switch {
	case !r.tasksOK:
		return fmt.Sprintf("Waiting for task %q to run", r.taskWaiting)
	case !r.checksOK:
		return fmt.Sprintf("Waiting for check %q to pass", r.checkWait)
	}
	return "Waiting for min_healthy_time"
}

func sortedTasks(in []Task) []Task {
	out := append([]Task(nil), in...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
