package nomad

import (
	"errors"
	"sync"

	"github.com/drover-project/drover/nomad/structs"
)

// errAllocUpdatesClosed answers a client update that the server, shutting
// down, will not commit: the client keeps it and sends it again.
var errAllocUpdatesClosed = errors.New("server shutting down: client allocation update not committed")

// allocUpdateBatcher commits the allocation updates clients send by group
// commit, as a database commits transactions: an update that finds no
// proposal in flight is proposed at once, alone; updates that arrive while
// a proposal is in flight gather and go together in the next one, started
// the moment the one in flight ends. A quiet fleet's update (a health
// verdict ending a wave, a terminal status) is never held back behind a
// timer, and a busy fleet's updates cost one raft entry and one FSM
// transaction per proposal, however many nodes report meanwhile.
//
// Every submitter waits for the proposal that carries its updates and gets
// that proposal's index and error, so the client protocol is unchanged (an
// answered PUT means the update is committed). At most one proposal is in
// flight, and batches are proposed in the order they were started, each
// holding its updates in arrival order, so updates of one allocation are
// applied in the order they were submitted.
//
// The decisions are groupCommit's; the batcher only locks, waits and
// carries them out.
type allocUpdateBatcher struct {
	apply func([]*structs.Allocation) (uint64, error)

	mu        sync.Mutex
	gc        groupCommit    // guarded by mu
	proposing sync.WaitGroup // counts the running proposer (at most one)
}

// allocBatch is one proposal's updates and, once done is closed, its
// result.
type allocBatch struct {
	allocs []*structs.Allocation
	done   chan struct{}
	index  uint64
	err    error
}

func newAllocBatch(allocs []*structs.Allocation) *allocBatch {
	return &allocBatch{allocs: append([]*structs.Allocation(nil), allocs...), done: make(chan struct{})}
}

// groupCommit is the group commit's decision state, pure (no lock, no
// goroutine, no clock): which batch an update joins, whether it must be
// proposed now, what is proposed when a proposal ends, and what shutdown
// drops.
type groupCommit struct {
	inFlight *allocBatch // being proposed; nil when idle
	next     *allocBatch // gathered while inFlight; nil when none
	closed   bool
}

// add joins allocs to the batch that will carry them. propose is true when
// no proposal was in flight: b is now in flight and the caller must propose
// it. After close, add refuses (errAllocUpdatesClosed).
func (g *groupCommit) add(allocs []*structs.Allocation) (b *allocBatch, propose bool, err error) {
	switch {
	case g.closed:
		return nil, false, errAllocUpdatesClosed
	case g.inFlight == nil:
		g.inFlight = newAllocBatch(allocs)
		return g.inFlight, true, nil
	case g.next == nil:
		g.next = newAllocBatch(allocs)
	default:
		g.next.allocs = append(g.next.allocs, allocs...)
	}
	return g.next, false, nil
}

// finished records the end of the proposal in flight and returns the batch
// to propose next (now in flight), or nil when nothing gathered meanwhile.
func (g *groupCommit) finished() *allocBatch {
	g.inFlight, g.next = g.next, nil
	return g.inFlight
}

// close refuses every later update and returns the gathered batch, which
// will not be proposed: its waiters must be failed. The proposal in flight,
// if any, still ends normally.
func (g *groupCommit) close() (dropped *allocBatch) {
	g.closed = true
	dropped, g.next = g.next, nil
	return dropped
}

func newAllocUpdateBatcher(apply func([]*structs.Allocation) (uint64, error)) *allocUpdateBatcher {
	return &allocUpdateBatcher{apply: apply}
}

// submit hands allocs to the group commit and waits for the proposal that
// carries them.
func (b *allocUpdateBatcher) submit(allocs []*structs.Allocation) (uint64, error) {
	b.mu.Lock()
	p, propose, err := b.gc.add(allocs)
	if propose {
		b.proposing.Add(1)
	}
	b.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if propose {
		go b.propose(p)
	}
	<-p.done
	return p.index, p.err
}

// propose applies p, then each batch gathered meanwhile, until none is.
func (b *allocUpdateBatcher) propose(p *allocBatch) {
	defer b.proposing.Done()
	for p != nil {
		p.index, p.err = b.apply(p.allocs)
		close(p.done)
		b.mu.Lock()
		p = b.gc.finished()
		b.mu.Unlock()
	}
}

// close refuses later updates, fails the waiters of the gathered batch
// with errAllocUpdatesClosed, and waits for the proposal in flight to end
// (its waiters get its result). Idempotent.
func (b *allocUpdateBatcher) close() {
	b.mu.Lock()
	dropped := b.gc.close()
	b.mu.Unlock()
	if dropped != nil {
		dropped.err = errAllocUpdatesClosed
		close(dropped.done)
	}
	b.proposing.Wait()
}
