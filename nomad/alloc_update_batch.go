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
// previous apply has finished. A node sends its next update only after the
// previous one was answered, so its updates are applied in order.
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
	done   chan struct{}
	index  uint64
	err    error
}

func newAllocUpdateBatcher(window time.Duration, apply func([]*structs.Allocation) (uint64, error)) *allocUpdateBatcher {
	return &allocUpdateBatcher{window: window, apply: apply, applying: make(chan struct{}, 1)}
}

// submit adds allocs to the pending batch (starting one if none) and waits
// for its apply.
func (b *allocUpdateBatcher) submit(allocs []*structs.Allocation) (uint64, error) {
	b.mu.Lock()
	p := b.pending
	if p == nil {
		p = &allocBatch{done: make(chan struct{})}
		b.pending = p
		time.AfterFunc(b.window, b.flush)
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
	b.mu.Unlock()
	if p == nil {
		return
	}
	p.index, p.err = b.apply(p.allocs)
	close(p.done)
}
