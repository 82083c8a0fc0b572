package broker

import (
	"container/heap"
	"fmt"
	"time"

	"github.com/drover-project/drover/nomad/structs"
)

// phase is where an evaluation currently sits inside the broker.
type phase uint8

const (
	// phaseReady: in the ready queue named by item.queue; holds its job's slot.
	phaseReady phase = iota + 1
	// phaseUnacked: handed to a worker, awaiting Ack/Nack; holds its job's slot.
	phaseUnacked
	// phasePending: waiting for its job's slot (another eval of the job is in flight).
	phasePending
	// phaseDelayed: WaitUntil/Wait not reached yet; does not hold the job's slot.
	phaseDelayed
	// phaseNackWait: nacked, waiting out the re-enqueue delay; holds its job's slot.
	phaseNackWait
	// phaseSettling: a job-register evaluation of a job whose previous
	// job-register evaluation was acked less than registerSettle ago; it
	// holds its job's slot and waits out the rest of that window, so that
	// a burst of registrations piles up behind it and coalesces.
	phaseSettling
)

// jobKey identifies a job across namespaces.
type jobKey struct{ namespace, jobID string }

func keyOf(ev *structs.Evaluation) jobKey {
	ns := ev.Namespace
	if ns == "" {
		ns = structs.DefaultNamespace
	}
	return jobKey{namespace: ns, jobID: ev.JobID}
}

// item is the broker's record of one evaluation.
type item struct {
	eval       *structs.Evaluation // private copy taken at Enqueue
	key        jobKey
	phase      phase
	queue      string    // ready queue the item is in / was delivered from
	deliveries int       // number of Dequeues so far
	token      string    // current token while unacked
	paused     bool      // nack timer paused while unacked
	deadline   time.Time // meaningful while timerIdx >= 0
	timerIdx   int       // index in queueState.timers, -1 when no timer runs
	seq        uint64    // order of entry into the current prio heap
	tseq       uint64    // order of entry into the timer heap
}

// coreConfig is the normalized configuration the pure core needs.
type coreConfig struct {
	nackTimeout         time.Duration
	deliveryLimit       int
	initialNackDelay    time.Duration
	subsequentNackDelay time.Duration
	// registerSettle is the least time between the end of one job-register
	// evaluation of a job and the start of the next (0: none).
	registerSettle time.Duration
}

// effects tells the concurrency shell what a core operation changed that it
// must act on. The timer to arm is read with nextDeadline.
type effects struct {
	wake     []string // ready queues that gained at least one evaluation
	timedOut []string // eval IDs nacked because their nack timer expired
	failed   []string // eval IDs moved to the failed queue
	// cancelled are pending evaluations dropped in favour of a newer one of
	// the same job (see release); the broker forgets them, and the leader
	// records them as cancelled.
	cancelled []*structs.Evaluation
}

// queueState is the broker's decision core. It is single-threaded and pure:
// it never reads a clock, starts a goroutine or blocks. Every operation takes
// the current time, first fires every deadline at or before it (so results do
// not depend on when the shell's timer callbacks happen to run), then applies
// the operation and reports its effects.
type queueState struct {
	cfg      coreConfig
	items    map[string]*item     // every known eval, by ID
	ready    map[string]*prioHeap // ready queues by scheduler type (and FailedQueue)
	pending  map[jobKey][]*item   // evals waiting for their job's slot, in arrival order
	inflight map[jobKey]string    // eval ID holding each job's slot
	// hot holds, per job, the end of the settle window opened by the ack of
	// its last job-register evaluation; expired entries are swept lazily.
	hot       map[jobKey]time.Time
	lastSweep time.Time
	timers    timerHeap // nack timeouts, delays, nack re-enqueue delays
	seq       uint64    // prio heap insertion counter
	tseq      uint64    // timer heap insertion counter
	fx        effects   // effects accumulated by the running operation
}

func newQueueState(cfg coreConfig) *queueState {
	return &queueState{
		cfg:      cfg,
		items:    make(map[string]*item),
		ready:    make(map[string]*prioHeap),
		pending:  make(map[jobKey][]*item),
		inflight: make(map[jobKey]string),
		hot:      make(map[jobKey]time.Time),
	}
}

// takeEffects returns the effects accumulated so far and clears them.
func (s *queueState) takeEffects() effects {
	fx := s.fx
	s.fx = effects{}
	return fx
}

// advance fires every deadline at or before now and reports the effects.
func (s *queueState) advance(now time.Time) effects {
	s.fire(now)
	return s.takeEffects()
}

// nextDeadline is the earliest pending deadline: the moment the shell must
// call advance again. ok is false when nothing waits for time.
func (s *queueState) nextDeadline() (at time.Time, ok bool) {
	if len(s.timers) == 0 {
		return time.Time{}, false
	}
	return s.timers[0].deadline, true
}

// enqueue accepts a pending evaluation. Evaluations that are not pending, and
// IDs the broker already knows, are ignored.
func (s *queueState) enqueue(now time.Time, ev *structs.Evaluation) effects {
	s.fire(now)
	if ev == nil || ev.Status != structs.EvalStatusPending {
		return s.takeEffects()
	}
	if _, known := s.items[ev.ID]; known {
		return s.takeEffects()
	}
	it := &item{eval: ev.Copy(), key: keyOf(ev), timerIdx: -1}
	s.items[ev.ID] = it

	var until time.Time
	switch {
	case !ev.WaitUntil.IsZero() && ev.WaitUntil.After(now):
		until = ev.WaitUntil
	case ev.WaitUntil.IsZero() && ev.Wait > 0:
		until = now.Add(ev.Wait)
	}
	if !until.IsZero() {
		it.phase = phaseDelayed
		s.startTimer(it, until)
	} else {
		s.admit(it, now)
	}
	return s.takeEffects()
}

// dequeue hands out the best ready evaluation among the given queues, or nil.
// The caller supplies the token (the core draws no random numbers).
func (s *queueState) dequeue(now time.Time, types []string, token string) (*structs.Evaluation, effects) {
	s.fire(now)
	var best *item
	for _, t := range types {
		h := s.ready[t]
		if h == nil {
			continue
		}
		if top := h.peek(); top != nil && (best == nil || prioLess(top, best)) {
			best = top
		}
	}
	if best == nil {
		return nil, s.takeEffects()
	}
	h := s.ready[best.queue]
	h.pop()
	if h.Len() == 0 {
		delete(s.ready, best.queue)
	}
	best.phase = phaseUnacked
	best.deliveries++
	best.token = token
	best.paused = false
	s.startTimer(best, now.Add(s.cfg.nackTimeout))
	return best.eval.Copy(), s.takeEffects()
}

// ack completes an outstanding evaluation and releases its job's slot to the
// next pending evaluation of the same job.
func (s *queueState) ack(now time.Time, id, token string) (effects, error) {
	s.fire(now)
	it, err := s.outstanding(id, token)
	if err != nil {
		return s.takeEffects(), err
	}
	s.stopTimer(it)
	delete(s.items, id)
	if s.cfg.registerSettle > 0 && it.eval.TriggeredBy == structs.EvalTriggerJobRegister {
		s.sweepHot(now)
		s.hot[it.key] = now.Add(s.cfg.registerSettle)
	}
	s.release(it.key, id, now)
	return s.takeEffects(), nil
}

// sweepHot forgets expired settle windows, at most once per window length,
// so that the map holds only jobs registered recently.
func (s *queueState) sweepHot(now time.Time) {
	if now.Sub(s.lastSweep) < s.cfg.registerSettle {
		return
	}
	s.lastSweep = now
	for k, until := range s.hot {
		if !until.After(now) {
			delete(s.hot, k)
		}
	}
}

// nack gives an outstanding evaluation back: it is re-enqueued after a delay,
// or moved to the failed queue once it has been delivered DeliveryLimit times.
func (s *queueState) nack(now time.Time, id, token string) (effects, error) {
	s.fire(now)
	it, err := s.outstanding(id, token)
	if err != nil {
		return s.takeEffects(), err
	}
	s.stopTimer(it)
	s.requeue(it, now)
	return s.takeEffects(), nil
}

// outstandingReset restarts the nack timer of an outstanding evaluation. A
// paused timer stays paused (ResumeNackTimeout restarts it in full).
func (s *queueState) outstandingReset(now time.Time, id, token string) (effects, error) {
	s.fire(now)
	it, err := s.outstanding(id, token)
	if err == nil && !it.paused {
		s.stopTimer(it)
		s.startTimer(it, now.Add(s.cfg.nackTimeout))
	}
	return s.takeEffects(), err
}

// pauseNack stops the nack timer of an outstanding evaluation.
func (s *queueState) pauseNack(now time.Time, id, token string) (effects, error) {
	s.fire(now)
	it, err := s.outstanding(id, token)
	if err == nil {
		s.stopTimer(it)
		it.paused = true
	}
	return s.takeEffects(), err
}

// resumeNack restarts the nack timer of an outstanding evaluation with a full
// NackTimeout, whether or not it was paused.
func (s *queueState) resumeNack(now time.Time, id, token string) (effects, error) {
	s.fire(now)
	it, err := s.outstanding(id, token)
	if err == nil {
		s.stopTimer(it)
		it.paused = false
		s.startTimer(it, now.Add(s.cfg.nackTimeout))
	}
	return s.takeEffects(), err
}

// token reports the token of an outstanding evaluation.
func (s *queueState) token(id string) (string, bool) {
	it, ok := s.items[id]
	if !ok || it.phase != phaseUnacked {
		return "", false
	}
	return it.token, true
}

// isFailed reports whether the evaluation sits in, or was delivered from,
// the failed queue.
func (s *queueState) isFailed(id string) bool {
	it, ok := s.items[id]
	return ok && (it.phase == phaseReady || it.phase == phaseUnacked) && it.queue == FailedQueue
}

// stats counts the evaluations per phase. It does not advance time.
func (s *queueState) stats() Stats {
	st := Stats{ByType: make(map[string]int)}
	for _, it := range s.items {
		switch it.phase {
		case phaseReady:
			if it.queue == FailedQueue {
				st.TotalFailed++
			} else {
				st.TotalReady++
				st.ByType[it.queue]++
			}
		case phaseUnacked:
			st.TotalUnacked++
		case phasePending:
			st.TotalPending++
		case phaseDelayed, phaseNackWait, phaseSettling:
			st.TotalWaiting++
		}
	}
	return st
}

// outstanding finds the unacked item for id and checks its token.
func (s *queueState) outstanding(id, token string) (*item, error) {
	it, ok := s.items[id]
	if !ok || it.phase != phaseUnacked {
		return nil, fmt.Errorf("eval %q: %w", id, ErrNotOutstanding)
	}
	if it.token != token {
		return nil, fmt.Errorf("eval %q: %w", id, ErrTokenMismatch)
	}
	return it, nil
}

// fire processes every deadline at or before now, in deadline order. Work
// triggered by a deadline is dated at that deadline, so a long gap between
// calls gives the same result as timely calls would have.
func (s *queueState) fire(now time.Time) {
	for len(s.timers) > 0 && !s.timers[0].deadline.After(now) {
		it := heap.Pop(&s.timers).(*item)
		at := it.deadline
		switch it.phase {
		case phaseUnacked: // nack timeout
			s.fx.timedOut = append(s.fx.timedOut, it.eval.ID)
			s.requeue(it, at)
		case phaseDelayed: // WaitUntil reached: enqueue for real
			s.admit(it, at)
		case phaseNackWait: // re-enqueue delay over; the job slot is still held
			s.pushReady(it, it.eval.Type)
		case phaseSettling: // settle window over: the newest of the pile runs
			s.pushReady(s.supersede(it), it.eval.Type)
		}
	}
}

// requeue handles a nack (explicit or by timeout) of an unacked item at time at.
func (s *queueState) requeue(it *item, at time.Time) {
	it.token = ""
	it.paused = false
	if it.deliveries >= s.cfg.deliveryLimit {
		s.fx.failed = append(s.fx.failed, it.eval.ID)
		s.pushReady(it, FailedQueue)
		return
	}
	delay := s.cfg.subsequentNackDelay
	if it.deliveries <= 1 {
		delay = s.cfg.initialNackDelay
	}
	if delay <= 0 {
		s.pushReady(it, it.eval.Type)
		return
	}
	it.phase = phaseNackWait
	s.startTimer(it, at.Add(delay))
}

// admit makes an item ready if its job has no evaluation in flight, and
// parks it in the job's pending list otherwise. A job-register evaluation
// of a job inside its settle window takes the job's slot but waits out the
// window first (phaseSettling).
func (s *queueState) admit(it *item, now time.Time) {
	if holder, busy := s.inflight[it.key]; busy && holder != it.eval.ID {
		it.phase = phasePending
		s.seq++
		it.seq = s.seq
		s.pending[it.key] = append(s.pending[it.key], it)
		return
	}
	s.inflight[it.key] = it.eval.ID
	if until, hot := s.hot[it.key]; hot && until.After(now) && it.eval.TriggeredBy == structs.EvalTriggerJobRegister {
		it.phase = phaseSettling
		s.startTimer(it, until)
		return
	}
	s.pushReady(it, it.eval.Type)
}

// release frees a job's slot held by id and hands it to the newest pending
// evaluation of the job (highest CreateIndex, then latest arrival), if any.
// The other pending evaluations of the job are cancelled: every evaluation
// of a job reconciles the whole job against the newest state, so the newest
// one does the work of all of them, and a burst of N job versions costs one
// more scheduling pass, not N.
func (s *queueState) release(key jobKey, id string, now time.Time) {
	if s.inflight[key] != id {
		return
	}
	delete(s.inflight, key)
	waiting := s.pending[key]
	if len(waiting) == 0 {
		return
	}
	delete(s.pending, key)
	newest := s.cancelAllButNewest(waiting)
	s.admit(newest, now)
}

// supersede ends the settle window of holder, which holds its job's slot:
// the newest of holder and the job's pending evaluations takes the slot
// and is returned; the others are cancelled.
func (s *queueState) supersede(holder *item) *item {
	pile := append([]*item{holder}, s.pending[holder.key]...)
	delete(s.pending, holder.key)
	newest := s.cancelAllButNewest(pile)
	s.inflight[holder.key] = newest.eval.ID
	return newest
}

// cancelAllButNewest forgets every item of pile but the newest, reporting
// them cancelled, and returns the newest.
func (s *queueState) cancelAllButNewest(pile []*item) *item {
	var newest *item
	for _, it := range pile {
		if newest == nil || newerThan(it, newest) {
			newest = it
		}
	}
	for _, it := range pile {
		if it == newest {
			continue
		}
		delete(s.items, it.eval.ID)
		s.fx.cancelled = append(s.fx.cancelled, it.eval.Copy())
	}
	return newest
}

// newerThan orders a job's pending evaluations by recency: higher
// CreateIndex first, then later arrival.
func newerThan(a, b *item) bool {
	if a.eval.CreateIndex != b.eval.CreateIndex {
		return a.eval.CreateIndex > b.eval.CreateIndex
	}
	return a.seq > b.seq
}

// pushReady puts an item (already holding its job's slot) in a ready queue.
func (s *queueState) pushReady(it *item, queue string) {
	it.phase = phaseReady
	it.queue = queue
	h := s.ready[queue]
	if h == nil {
		h = &prioHeap{}
		s.ready[queue] = h
	}
	s.seq++
	it.seq = s.seq
	h.push(it)
	for _, q := range s.fx.wake {
		if q == queue {
			return
		}
	}
	s.fx.wake = append(s.fx.wake, queue)
}

func (s *queueState) startTimer(it *item, at time.Time) {
	it.deadline = at
	s.tseq++
	it.tseq = s.tseq
	heap.Push(&s.timers, it)
}

func (s *queueState) stopTimer(it *item) {
	if it.timerIdx >= 0 {
		heap.Remove(&s.timers, it.timerIdx)
	}
}
