package restarts

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/nomad/structs"
)

// Actions returned by Decide.
const (
	ActionRestart = "restart"
	ActionFail    = "fail"
	ActionDone    = "done"
)

// Restart policy modes.
const (
	ModeFail  = "fail"
	ModeDelay = "delay"
)

// Reasons, in Nomad's wording (they end up in task events users read).
const (
	ReasonWithinPolicy      = "Restart within policy"
	ReasonDelay             = "Exceeded allowed attempts, applying a delay"
	ReasonNoRestartsAllowed = "Policy allows no restarts"
	ReasonUnrecoverable     = "Error was unrecoverable"
	ReasonSuccess           = "Task completed successfully"
)

// Decision is the outcome of Evaluate.
type Decision struct {
	Action string        // ActionRestart, ActionFail or ActionDone
	Delay  time.Duration // how long to wait before restarting; 0 otherwise
	Reason string        // why, for the task event
}

// Decide is Evaluate without the reason.
func Decide(policy structs.RestartPolicy, jobType string, history []time.Time, exit *drivers.ExitResult, now time.Time) (action string, delay time.Duration) {
	d := Evaluate(policy, jobType, history, exit, now)
	return d.Action, d.Delay
}

// Evaluate decides what to do after a task exited with exit (or failed to
// start: exit.Err holds the start error). history holds the times of the
// task's earlier restarts; entries older than the interval are ignored, so
// callers may keep or prune them. jobType tells long-running tasks (system,
// service) from batch ones (sysbatch, batch).
func Evaluate(policy structs.RestartPolicy, jobType string, history []time.Time, exit *drivers.ExitResult, now time.Time) Decision {
	return evaluate(policy, IsBatch(jobType), history, exit, now)
}

// EvaluateTask is Evaluate for a task with a lifecycle block (lc, or nil):
// see DoneOnSuccess.
func EvaluateTask(policy structs.RestartPolicy, jobType string, lc *structs.TaskLifecycle, history []time.Time, exit *drivers.ExitResult, now time.Time) Decision {
	return evaluate(policy, DoneOnSuccess(jobType, lc), history, exit, now)
}

// DoneOnSuccess reports whether a task that exits successfully is done
// rather than restarted (Nomad's rule): an ephemeral lifecycle task
// (prestart or poststart without sidecar, and every poststop task) is done
// in every job type, a sidecar is restarted even in a batch job, and other
// tasks are done in batch and sysbatch jobs only.
func DoneOnSuccess(jobType string, lc *structs.TaskLifecycle) bool {
	if lc != nil && lc.Hook != "" {
		return lc.Hook == "poststop" || !lc.Sidecar
	}
	return IsBatch(jobType)
}

func evaluate(policy structs.RestartPolicy, doneOnSuccess bool, history []time.Time, exit *drivers.ExitResult, now time.Time) Decision {
	if exit.Successful() && doneOnSuccess {
		return Decision{Action: ActionDone, Reason: ReasonSuccess}
	}
	if exit != nil && unrecoverable(exit.Err) {
		return Decision{Action: ActionFail, Reason: ReasonUnrecoverable}
	}
	if policy.Attempts <= 0 && policy.Mode != ModeDelay {
		return Decision{Action: ActionFail, Reason: ReasonNoRestartsAllowed}
	}
	window := inWindow(history, policy.Interval, now)
	if len(window) < policy.Attempts {
		return Decision{Action: ActionRestart, Delay: nonNegative(policy.Delay), Reason: ReasonWithinPolicy}
	}
	if policy.Mode != ModeDelay {
		return Decision{
			Action: ActionFail,
			Reason: fmt.Sprintf("Exceeded allowed attempts %d in interval %v and mode is %q", policy.Attempts, policy.Interval, policy.Mode),
		}
	}
	// Invariants: window is sorted and holds at least Attempts entries. The
	// restart at now+wait fits when the entries up to window[n-Attempts]
	// have left the window (t > restart-interval is inside it).
	wait := policy.Interval
	if policy.Attempts > 0 {
		wait = window[len(window)-policy.Attempts].Add(policy.Interval).Sub(now)
	}
	if wait < policy.Delay {
		wait = policy.Delay
	}
	return Decision{Action: ActionRestart, Delay: nonNegative(wait), Reason: ReasonDelay}
}

// IsBatch reports whether tasks of jobType run to completion (sysbatch and
// batch) rather than forever (system and service).
func IsBatch(jobType string) bool {
	return jobType == structs.JobTypeSysBatch || jobType == structs.JobTypeBatch
}

// DefaultPolicy is the restart policy of a group that has none, per job type
// (Nomad's defaults).
func DefaultPolicy(jobType string) structs.RestartPolicy {
	if IsBatch(jobType) {
		return structs.RestartPolicy{Attempts: 3, Interval: 24 * time.Hour, Delay: 15 * time.Second, Mode: ModeFail}
	}
	return structs.RestartPolicy{Attempts: 2, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: ModeFail}
}

// unrecoverable reports whether err is explicitly marked unrecoverable.
func unrecoverable(err error) bool {
	var re *drivers.RecoverableError
	return errors.As(err, &re) && !re.Recoverable
}

// inWindow returns the entries of history in (now-interval, now], sorted.
func inWindow(history []time.Time, interval time.Duration, now time.Time) []time.Time {
	since := now.Add(-interval)
	out := make([]time.Time, 0, len(history))
	for _, t := range history {
		if t.After(since) && !t.After(now) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, time.Time.Compare)
	return out
}

func nonNegative(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d
}

// Tracker is the restart history of one task. It is not safe for concurrent
// use; the task runner goroutine owns it.
type Tracker struct {
	policy    structs.RestartPolicy
	jobType   string
	lifecycle *structs.TaskLifecycle // or nil
	history   []time.Time
}

// NewTracker returns a tracker with the given history (restored from task
// events after a client restart, or nil).
func NewTracker(policy structs.RestartPolicy, jobType string, history []time.Time) *Tracker {
	return &Tracker{policy: policy, jobType: jobType, history: append([]time.Time(nil), history...)}
}

// NewTaskTracker is NewTracker for a task with a lifecycle block (lc, or
// nil): its decisions follow EvaluateTask.
func NewTaskTracker(policy structs.RestartPolicy, jobType string, lc *structs.TaskLifecycle, history []time.Time) *Tracker {
	t := NewTracker(policy, jobType, history)
	t.lifecycle = lc
	return t
}

// SetPolicy replaces the policy (an in-place job update); history is kept.
func (t *Tracker) SetPolicy(policy structs.RestartPolicy) { t.policy = policy }

// Next evaluates exit and, when the decision is to restart, records the
// restart at now+delay and prunes entries older than the interval.
func (t *Tracker) Next(exit *drivers.ExitResult, now time.Time) Decision {
	d := EvaluateTask(t.policy, t.jobType, t.lifecycle, t.history, exit, now)
	if d.Action == ActionRestart {
		at := now.Add(d.Delay)
		kept := t.history[:0]
		for _, h := range t.history {
			if h.After(at.Add(-t.policy.Interval)) {
				kept = append(kept, h)
			}
		}
		t.history = append(kept, at)
	}
	return d
}

// History returns a copy of the recorded restart times.
func (t *Tracker) History() []time.Time { return append([]time.Time(nil), t.history...) }
