package allocrunner

import (
	"context"
	"errors"
	"io"
	"sync"
)

// LocalPrevAlloc returns the PrevAllocController of a local alloc runner:
// Stop is prev.StopTasks, Wait waits for prev.TasksExitedCh. A nil prev
// gives nil.
//
// It also hands the previous allocation's stop over to the replacement.
// The server stops the previous allocation in the same plan that places the
// replacement, so the client passes prev an Update with a desired stop at
// about the time it creates the replacement. While a replacement built with
// this controller (NewAllocRunner) lives and has not stopped it, prev defers
// such a stop instead of killing its tasks: the replacement stops it once
// prepared (prefetch before kill). A replacement that is killed or destroyed
// before that releases prev, which then honours a deferred stop at once; a
// replacement whose prepare failed keeps prev running until it is itself
// stopped or destroyed.
func LocalPrevAlloc(prev *AllocRunner) PrevAllocController {
	if prev == nil {
		return nil
	}
	return &localPrevAlloc{prev: prev}
}

// localPrevAlloc is the controller of a local previous allocation.
type localPrevAlloc struct {
	prev *AllocRunner

	holdOnce    sync.Once
	releaseOnce sync.Once
}

// Stop stops prev's tasks now.
func (l *localPrevAlloc) Stop() { l.prev.StopTasks() }

// Wait waits until prev's tasks exited and, when prev itself released the
// allocation it replaced with a stop (prev was a failed replacement), until
// that one's tasks exited too: a replacement never starts next to either.
func (l *localPrevAlloc) Wait(ctx context.Context) error {
	select {
	case <-l.prev.TasksExitedCh():
	case <-ctx.Done():
		return ctx.Err()
	}
	if inner, ok := l.prev.prevAlloc.(*localPrevAlloc); ok && inner.prev.isKilled() {
		return inner.Wait(ctx)
	}
	return nil
}

// hold makes prev defer desired stops to the replacement. NewAllocRunner
// calls it once the replacement exists.
func (l *localPrevAlloc) hold() {
	l.holdOnce.Do(func() { l.prev.holdStop() })
}

// release ends the hold; prev then honours a deferred desired stop when
// stop is set.
func (l *localPrevAlloc) release(stop bool) {
	l.releaseOnce.Do(func() { l.prev.releaseStop(stop) })
}

// holdStop is called by a local replacement (see LocalPrevAlloc).
func (ar *AllocRunner) holdStop() {
	ar.mu.Lock()
	ar.stopHolds++
	ar.mu.Unlock()
}

// releaseStop ends a hold; with stop, a desired stop deferred meanwhile is
// carried out.
func (ar *AllocRunner) releaseStop(stop bool) {
	ar.mu.Lock()
	ar.stopHolds--
	kill := stop && ar.stopHolds == 0 && ar.stopDeferred
	ar.mu.Unlock()
	if kill {
		ar.logger.Debug("replacement released the allocation; carrying out its desired stop")
		ar.requestKill()
	}
}

// maybeDeferStop reports whether a desired stop must wait for a local
// replacement, recording it if so.
func (ar *AllocRunner) maybeDeferStop() bool {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	if ar.stopHolds == 0 {
		return false
	}
	ar.stopDeferred = true
	return true
}

// releasePrev releases this runner's previous allocation (no-op after Stop
// was called, since it is being killed anyway): called when this runner is
// killed or destroyed.
func (ar *AllocRunner) releasePrev() {
	if l, ok := ar.prevAlloc.(*localPrevAlloc); ok {
		l.release(true)
	}
}

// ErrStillRunning is returned by WriteSnapshot while a task of the
// allocation may still run.
var ErrStillRunning = errors.New("the allocation's tasks are still running")

// WriteSnapshot writes the allocation's ephemeral data (alloc/data and each
// task's local/, see allocdir.WriteSnapshot) to w, for a replacement on
// another node (ephemeral_disk migrate). It refuses with ErrStillRunning
// until every task has exited, so the data is never read while a task
// writes it.
func (ar *AllocRunner) WriteSnapshot(w io.Writer) error {
	select {
	case <-ar.exitedCh:
	default:
		return ErrStillRunning
	}
	return ar.allocDir.WriteSnapshot(w, ar.taskNames())
}
