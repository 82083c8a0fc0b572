package allocrunner

import (
	"time"

	"github.com/drover-project/drover/client/allocrunner/taskrunner"
	"github.com/drover-project/drover/nomad/structs"
)

// max_run_duration, as in Nomad: a batch or sysbatch group's
// max_run_duration bounds how long its allocation runs, counted from the
// moment the runner starts it, whatever the tasks' states (a slow start
// counts). When it is up, the tasks are killed (their shutdown_delay and
// kill_timeout are outside the bound), poststop tasks never run, and the
// allocation completes with DescMaxRunExceeded. An in-place update that
// changes the bound applies at once, from the same start.

// maxRunBound returns the allocation's bound (0: none): the group's
// max_run_duration, for batch and sysbatch jobs only.
func maxRunBound(alloc *structs.Allocation) time.Duration {
	if alloc == nil || alloc.Job == nil {
		return 0
	}
	if t := alloc.Job.Type; t != structs.JobTypeBatch && t != structs.JobTypeSysBatch {
		return 0
	}
	tg := alloc.Job.LookupTaskGroup(alloc.TaskGroup)
	if tg == nil || tg.MaxRunDuration == nil || *tg.MaxRunDuration <= 0 {
		return 0
	}
	return *tg.MaxRunDuration
}

// maxRunStart returns when the bound's clock started: now for an
// allocation run for the first time; for one a restarted client restored,
// the earliest time its task states record (a start or an event), so the
// client's restart does not extend the bound (now when they record none).
func maxRunStart(states map[string]*structs.TaskState, restored bool, now time.Time) time.Time {
	if !restored {
		return now
	}
	start := now
	earlier := func(t time.Time) {
		if !t.IsZero() && t.Before(start) {
			start = t
		}
	}
	for _, st := range states {
		if st == nil {
			continue
		}
		earlier(st.StartedAt)
		for _, e := range st.Events {
			if e != nil && e.Time != 0 {
				earlier(time.Unix(0, e.Time))
			}
		}
	}
	return start
}

// maxRunLeft returns how long the allocation may still run at now, given
// its bound and its start; ok is false when there is no bound. A left of
// zero means the bound is up.
func maxRunLeft(bound time.Duration, start, now time.Time) (left time.Duration, ok bool) {
	if bound <= 0 {
		return 0, false
	}
	left = start.Add(bound).Sub(now)
	if left < 0 {
		left = 0
	}
	return left, true
}

// enforceMaxRun waits until the allocation's bound is up, then stops it
// (maxRunExpired). It returns early when the allocation is killed, the
// runner shuts down or Run returns. Updates (maxRunUpdated) re-read the
// bound.
func (ar *AllocRunner) enforceMaxRun(start time.Time) {
	for {
		left, ok := maxRunLeft(maxRunBound(ar.serverAlloc()), start, ar.now())
		var timeout <-chan time.Time
		var timer *time.Timer
		if ok {
			if left == 0 {
				ar.maxRunExpired()
				return
			}
			timer = time.NewTimer(left)
			timeout = timer.C
		}
		select {
		case <-timeout:
		case <-ar.maxRunUpdated:
		case <-ar.killCh:
		case <-ar.shutdownCh:
		case <-ar.waitCh:
		}
		if timer != nil {
			timer.Stop()
		}
		if ar.isKilled() || ar.isShutdown() || isClosed(ar.waitCh) {
			return
		}
	}
}

// maxRunExpired stops the allocation because its bound is up: poststop
// tasks must not run, and every task killed records why.
func (ar *AllocRunner) maxRunExpired() {
	bound := maxRunBound(ar.serverAlloc())
	ar.logger.Info("allocation exceeded max_run_duration; stopping it", "max_run_duration", bound)
	ar.maxRunHit.Store(int64(bound))
	ar.stopLifecycle(false, true)
	ar.requestKill()
}

// maxRunKillEvent is the kill reason of the tasks once the bound is up,
// or nil before.
func (ar *AllocRunner) maxRunKillEvent() *structs.TaskEvent {
	bound := time.Duration(ar.maxRunHit.Load())
	if bound == 0 {
		return nil
	}
	return taskrunner.NewMaxRunExceeded(ar.now(), bound)
}

// noteMaxRunUpdate wakes enforceMaxRun to re-read the bound.
func (ar *AllocRunner) noteMaxRunUpdate() {
	select {
	case ar.maxRunUpdated <- struct{}{}:
	default:
	}
}
