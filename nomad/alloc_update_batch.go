package nomad

import (
	"sync"
	"time"

	"github.com/drover-project/drover/nomad/structs"
)

// allocUpdateWindow is how long the server gathers client allocation
// updates before committing them as one raft entry.
const allocUpdateWindow = 50 * time.Millisecond

// allocUpdateBatcher coalesces the allocation updates clients send within
// a window into one apply, as Nomad does: a fleet reporting at once costs
// one raft entry and one FSM transaction per window instead of one per
// node. Every submitter waits for the apply of the batch that carries its
// updates and gets that apply's index and error, so the client protocol is
// unchanged (an answered PUT means the update is committed).
//
// At most one apply runs at a time; updates that arrive meanwhile gather
// into the next batch, which is applied once the window has passed and the
// previous apply has finished. An urgent submission (a deployment-health
// verdict, which a rollout's next placement waits for) cuts its batch's
// window short: the batch is applied as soon as the apply before it ends.
// A node sends its next update only after the previous one was answered,
// so its updates are applied in order.
type allocUpdateBatcher struct {
	window time.Duration
	apply  func([]*structs.Allocation) (uint64, error)

	applying chan struct{} // holds a token while a batch is applied

	mu      sync.Mutex
	pending *allocBatch // guarded by mu; nil when nothing waits
}

// allocBatch is one batch of updates and, once done is closed, its result.
type allocBatch struct {
	allocs []*structs.Allocation
	window *time.Timer // flushes the batch when its window ends
	done   chan struct{}
	index  uint64
	err    error
}

func newAllocUpdateBatcher(window time.Duration, apply func([]*structs.Allocation) (uint64, error)) *allocUpdateBatcher {
	return &allocUpdateBatcher{window: window, apply: apply, applying: make(chan struct{}, 1)}
}

// submit adds allocs to the pending batch (starting one if none) and waits
// for its apply. With urgent, the batch does not wait for the rest of its
// window.
func (b *allocUpdateBatcher) submit(allocs []*structs.Allocation, urgent bool) (uint64, error) {
	b.mu.Lock()
	p := b.pending
	if p == nil {
		p = &allocBatch{done: make(chan struct{})}
		b.pending = p
		p.window = time.AfterFunc(b.window, b.flush)
	}
	p.allocs = append(p.allocs, allocs...)
	if urgent && p.window.Stop() {
		go b.flush() // Stop false: the window already ended and flush runs
	}
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
	b.mu.Unlock()
	if p == nil {
		return
	}
	p.index, p.err = b.apply(p.allocs)
	close(p.done)
}
