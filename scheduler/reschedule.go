package scheduler

import (
	"time"

	"github.com/drover-project/drover/nomad/structs"
)

// rescheduleDecision is what the reschedule policy says about one failed
// allocation.
type rescheduleDecision int

const (
	rescheduleNever rescheduleDecision = iota // policy exhausted or disabled
	rescheduleNow                             // the delay has passed
	rescheduleLater                           // at the returned time
)

// decideReschedule applies policy to a failed allocation a at now. It
// returns when the replacement may be placed (zero for rescheduleNever).
//
// Rules:
//   - a nil policy, or Attempts 0 without Unlimited, never reschedules;
//   - without Unlimited, the reschedules of a's history within the last
//     Interval (all of them when Interval is 0) must be fewer than
//     Attempts;
//   - the replacement waits rescheduleDelay after a failed (the latest
//     FinishedAt of its tasks, else its ModifyTime).
func decideReschedule(policy *structs.ReschedulePolicy, a *structs.Allocation, now time.Time) (rescheduleDecision, time.Time) {
	if !rescheduleAttemptsLeft(policy, a, now) {
		return rescheduleNever, time.Time{}
	}
	var events []*structs.RescheduleEvent
	if a.RescheduleTracker != nil {
		events = a.RescheduleTracker.Events
	}
	at := failedAt(a).Add(rescheduleDelay(policy, len(events)))
	if !at.After(now) {
		return rescheduleNow, at
	}
	return rescheduleLater, at
}

// rescheduleAttemptsLeft reports whether policy lets a be rescheduled once
// more at now (the first two rules of decideReschedule): a replacement of
// an unknown allocation is a reschedule too, placed at once.
func rescheduleAttemptsLeft(policy *structs.ReschedulePolicy, a *structs.Allocation, now time.Time) bool {
	if policy == nil || (!policy.Unlimited && policy.Attempts <= 0) {
		return false
	}
	if policy.Unlimited || a.RescheduleTracker == nil {
		return true
	}
	recent := 0
	for _, e := range a.RescheduleTracker.Events {
		if policy.Interval <= 0 || now.Sub(time.Unix(0, e.RescheduleTime)) < policy.Interval {
			recent++
		}
	}
	return recent < policy.Attempts
}

// rescheduleDelay is the delay before the (n+1)-th reschedule of an
// allocation that was already rescheduled n times: Delay for "constant";
// Delay·2ⁿ for "exponential"; the n-th term of the Fibonacci sequence
// starting Delay, Delay for "fibonacci"; never more than MaxDelay when it
// is set.
func rescheduleDelay(policy *structs.ReschedulePolicy, n int) time.Duration {
	d := policy.Delay
	switch policy.DelayFunction {
	case structs.DelayFunctionExponential:
		for i := 0; i < n && (policy.MaxDelay <= 0 || d < policy.MaxDelay); i++ {
			d *= 2
		}
	case structs.DelayFunctionFibonacci:
		prev := time.Duration(0)
		for i := 0; i < n && (policy.MaxDelay <= 0 || d < policy.MaxDelay); i++ {
			if i == 0 {
				prev = d
				continue
			}
			prev, d = d, d+prev
		}
	}
	if policy.MaxDelay > 0 && d > policy.MaxDelay && policy.DelayFunction != structs.DelayFunctionConstant {
		d = policy.MaxDelay
	}
	return d
}

// failedAt is when a failed: its tasks' latest FinishedAt, or its
// ModifyTime when no task reports one.
func failedAt(a *structs.Allocation) time.Time {
	var t time.Time
	for _, ts := range a.TaskStates {
		if ts != nil && ts.FinishedAt.After(t) {
			t = ts.FinishedAt
		}
	}
	if t.IsZero() {
		t = time.Unix(0, a.ModifyTime)
	}
	return t
}

// nextTracker is the tracker of the replacement of prev, rescheduled at now.
func nextTracker(prev *structs.Allocation, now time.Time) *structs.RescheduleTracker {
	t := &structs.RescheduleTracker{}
	if prev.RescheduleTracker != nil {
		t.Events = append(t.Events, prev.RescheduleTracker.Events...)
	}
	t.Events = append(t.Events, &structs.RescheduleEvent{
		RescheduleTime: now.UnixNano(), PrevAllocID: prev.ID, PrevNodeID: prev.NodeID,
	})
	return t
}
