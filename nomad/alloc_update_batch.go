package nomad

import (
	"sync"
	"time"

	"github.com/drover-project/drover/nomad/structs"
)

// allocUpdateWindow is the least time between the starts of two applies
// of client allocation updates.
const allocUpdateWindow = 50 * time.Millisecond

// allocUpdateBatcher coalesces the allocation updates clients send into
// one apply per window, as Nomad does: a fleet reporting at once costs one
// raft entry and one FSM transaction per window instead of one per node.
// Every submitter waits for the apply of the batch that carries its
// updates and gets that apply's index and error, so the client protocol is
// unchanged (an answered PUT means the update is committed).
//
// The window is a throttle with a leading edge (flushDelay): the first
// update after a quiet spell (no apply started for a window) is applied at
// once, so a lone health verdict waits for nothing; later ones gather
// until a window after the last apply started. Under a steady stream that
// is one apply per window, as a fixed window has it.
//
// An urgent update (a decisive one: a new health verdict or a terminal
// client status, see decisiveUpdate) is never held back by the window: its
// batch is applied as soon as no apply runs, a group commit. Deployments
// and rescheduling wait on exactly these; the running and pending reports
// that make up most of the stream keep the window.
//
// At most one apply runs at a time; updates that arrive meanwhile gather
// into the next batch, which is applied once its time has come and the
// previous apply has finished. A node sends its next update only after the
// previous one was answered, so its updates are applied in order.
type allocUpdateBatcher struct {
	window time.Duration
	apply  func([]*structs.Allocation) (uint64, error)
	now    func() time.Time

	applying chan struct{} // holds a token while a batch is applied

	mu        sync.Mutex
	pending   *allocBatch // guarded by mu; nil when nothing waits
	lastApply time.Time   // guarded by mu; when the last batch was taken for its apply
}

// allocBatch is one batch of updates and, once done is closed, its result.
type allocBatch struct {
	allocs []*structs.Allocation
	done   chan struct{}
	index  uint64
	err    error
	// timer is the window's wait before the batch's flush (nil when its
	// flush is on its way without one). Guarded by the batcher's mu.
	timer *time.Timer
}

func newAllocUpdateBatcher(window time.Duration, apply func([]*structs.Allocation) (uint64, error)) *allocUpdateBatcher {
	return &allocUpdateBatcher{window: window, apply: apply, now: time.Now, applying: make(chan struct{}, 1)}
}

// flushDelay is how long a batch opened at now waits before its apply:
// until a window after the last apply started (lastApply), and not at all
// when that is past (or there was none).
func flushDelay(lastApply, now time.Time, window time.Duration) time.Duration {
	if lastApply.IsZero() {
		return 0
	}
	return max(lastApply.Add(window).Sub(now), 0)
}

// submit adds allocs to the pending batch (starting one if none) and waits
// for its apply. An urgent submission's batch does not wait for the
// window. Each batch has exactly one flush on its way: the window's timer,
// or (urgent, or the window past) one started at once.
func (b *allocUpdateBatcher) submit(allocs []*structs.Allocation, urgent bool) (uint64, error) {
	b.mu.Lock()
	p := b.pending
	if p == nil {
		p = &allocBatch{done: make(chan struct{})}
		b.pending = p
		if d := flushDelay(b.lastApply, b.now(), b.window); d > 0 && !urgent {
			p.timer = time.AfterFunc(d, b.flush)
		} else {
			go b.flush()
		}
	} else if urgent && p.timer != nil && p.timer.Stop() {
		// The window's flush had not fired: it never will; flush now.
		p.timer = nil
		go b.flush()
	}
	p.allocs = append(p.allocs, allocs...)
	b.mu.Unlock()
	<-p.done
	return p.index, p.err
}

// flush applies the pending batch, after any apply in progress.
func (b *allocUpdateBatcher) flush() {
	b.applying <- struct{}{}
	defer func() { <-b.applying }()
	b.mu.Lock()
	p := b.pending
	b.pending = nil
	if p != nil {
		b.lastApply = b.now()
	}
	b.mu.Unlock()
	if p == nil {
		return
	}
	p.index, p.err = b.apply(p.allocs)
	close(p.done)
}

// decisiveUpdate reports whether a client's update of an allocation
// decides something the server did not know (stored is the allocation as
// the server has it, nil if unknown): a health verdict it did not have, or
// a terminal client status. Deployments and rescheduling wait on these.
func decisiveUpdate(update, stored *structs.Allocation) bool {
	if update.ClientTerminal() && (stored == nil || !stored.ClientTerminal()) {
		return true
	}
	u := update.DeploymentStatus
	if u == nil || u.Healthy == nil {
		return false
	}
	if stored == nil || stored.DeploymentStatus == nil || stored.DeploymentStatus.Healthy == nil {
		return true
	}
	return *stored.DeploymentStatus.Healthy != *u.Healthy
}
