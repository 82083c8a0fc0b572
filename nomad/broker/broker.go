package broker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/nomad/structs"
)

// FailedQueue is the pseudo scheduler type of evaluations that reached the
// delivery limit. The leader dequeues it; see the package documentation.
const FailedQueue = "_failed"

// Defaults applied by New to zero Config fields.
const (
	DefaultNackTimeout         = 60 * time.Second
	DefaultDeliveryLimit       = 3
	DefaultInitialNackDelay    = 1 * time.Second
	DefaultSubsequentNackDelay = 20 * time.Second
	DefaultRegisterSettle      = 200 * time.Millisecond
)

var (
	// ErrNotEnabled is returned by Dequeue, Ack, Nack and the nack-timer
	// calls while the broker is disabled (this server is not the leader).
	ErrNotEnabled = errors.New("eval broker disabled")
	// ErrNotOutstanding: the evaluation is not currently handed out (unknown,
	// already acked or nacked, or its nack timer expired).
	ErrNotOutstanding = errors.New("evaluation is not outstanding")
	// ErrTokenMismatch: the evaluation is outstanding under another token.
	ErrTokenMismatch = errors.New("evaluation token does not match")
	// ErrNoTypes: Dequeue was called without scheduler types.
	ErrNoTypes = errors.New("no scheduler types to dequeue")
)

// Config configures a Broker. Zero durations and limits take the defaults;
// a negative nack delay means no delay.
type Config struct {
	// NackTimeout is how long a dequeued evaluation may stay un-acked before
	// it is nacked automatically (default 60s).
	NackTimeout time.Duration
	// DeliveryLimit is how many times an evaluation is delivered before a
	// nack sends it to the failed queue (default 3).
	DeliveryLimit int
	// InitialNackDelay delays the re-enqueue after the first nack (default 1s).
	InitialNackDelay time.Duration
	// SubsequentNackDelay delays the re-enqueue after later nacks (default 20s).
	SubsequentNackDelay time.Duration
	// RegisterSettle is the least time between the end of one job-register
	// evaluation of a job and the start of the next (default 200ms; negative:
	// none). A single registration never waits; a burst of registrations of
	// one job is scheduled at most once per window, the newest version
	// each time. Other triggers (deployment waves, node updates) never wait.
	RegisterSettle time.Duration
	// Now reads the time when Clock is nil (default time.Now).
	Now func() time.Time
	// Clock supplies time and timers (default RealClock(Now)).
	Clock Clock
	// Logger (default: discard).
	Logger hclog.Logger
}

// Stats is a snapshot of the broker's queues, for metrics.
type Stats struct {
	TotalReady   int            // ready in scheduler queues (not FailedQueue)
	TotalUnacked int            // handed out, awaiting Ack/Nack (any queue)
	TotalPending int            // waiting for their job's in-flight eval to be acked
	TotalWaiting int            // waiting for time: WaitUntil/Wait, or a nack re-enqueue delay
	TotalFailed  int            // ready in FailedQueue
	ByType       map[string]int // ready evaluations per scheduler type (not FailedQueue)
}

// Broker is the leader's evaluation broker. It is safe for concurrent use.
// All decisions are made by a pure core (queueState); the Broker adds a
// mutex, blocked Dequeue callers and one timer for the core's next deadline.
type Broker struct {
	clock  Clock
	logger hclog.Logger
	core   coreConfig

	mu      sync.Mutex
	enabled bool
	paused  bool // hands nothing out (SetPaused)
	state   *queueState
	waiters map[*waiter]struct{}
	timer   Timer     // armed for timerAt, nil when none
	timerAt time.Time // deadline the timer is armed for
	gen     uint64    // identifies the current timer; stale callbacks see a mismatch

	// cancelled holds evaluations the core dropped in favour of a newer one
	// of their job, until the leader takes them (TakeCancelled) to record
	// them as cancelled. cancelledCh (buffered 1) says the list grew.
	cancelled   []*structs.Evaluation
	cancelledCh chan struct{}
}

// waiter is a blocked Dequeue call.
type waiter struct {
	types []string
	ch    chan struct{} // buffered(1): "something you may want changed"
}

// New returns a disabled broker; the leader calls SetEnabled(true).
func New(cfg Config) *Broker {
	c := coreConfig{
		nackTimeout:         orDefault(cfg.NackTimeout, DefaultNackTimeout),
		deliveryLimit:       cfg.DeliveryLimit,
		initialNackDelay:    max(orDefault(cfg.InitialNackDelay, DefaultInitialNackDelay), 0),
		subsequentNackDelay: max(orDefault(cfg.SubsequentNackDelay, DefaultSubsequentNackDelay), 0),
		registerSettle:      max(orDefault(cfg.RegisterSettle, DefaultRegisterSettle), 0),
	}
	if c.nackTimeout < 0 {
		c.nackTimeout = DefaultNackTimeout
	}
	if c.deliveryLimit <= 0 {
		c.deliveryLimit = DefaultDeliveryLimit
	}
	clock := cfg.Clock
	if clock == nil {
		clock = RealClock(cfg.Now)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &Broker{
		clock:       clock,
		logger:      logger.Named("eval_broker"),
		core:        c,
		state:       newQueueState(c),
		waiters:     make(map[*waiter]struct{}),
		cancelledCh: make(chan struct{}, 1),
	}
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// Enabled reports whether the broker accepts work.
func (b *Broker) Enabled() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.enabled
}

// SetEnabled turns the broker on (leadership gained) or off (lost). Turning it
// off drops every evaluation it holds, stops its timer and makes blocked
// Dequeue calls return ErrNotEnabled. Turning it on starts from empty.
func (b *Broker) SetEnabled(enabled bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.enabled == enabled {
		return
	}
	b.enabled = enabled
	b.state = newQueueState(b.core)
	b.cancelled = nil
	b.stopTimer()
	if !enabled {
		for w := range b.waiters {
			notify(w)
		}
	}
}

// SetPaused pauses (true) or resumes the broker: while paused it keeps
// accepting evaluations but hands none out, so nothing is scheduled (the
// operator's pause_eval_broker). Resuming wakes blocked Dequeue calls.
func (b *Broker) SetPaused(paused bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.paused == paused {
		return
	}
	b.paused = paused
	if !paused {
		for w := range b.waiters {
			notify(w)
		}
	}
}

// Paused reports whether the broker is paused.
func (b *Broker) Paused() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.paused
}

// Enqueue adds a pending evaluation. It is ignored when the broker is
// disabled, when the evaluation is not pending, or when its ID is already
// known. If another evaluation of the same job is ready or outstanding, it
// waits for that one to be acked. WaitUntil in the future (or Wait > 0)
// delays it until then.
func (b *Broker) Enqueue(eval *structs.Evaluation) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.enabled {
		return
	}
	now := b.clock.Now()
	b.apply(b.state.enqueue(now, eval), now)
}

// Dequeue blocks until an evaluation of one of types is ready, and returns it
// with the token that Ack, Nack and the nack-timer calls need. It returns
// ctx.Err() when ctx ends first and ErrNotEnabled when the broker is (or
// becomes) disabled. The evaluation is nacked automatically if it is neither
// acked nor nacked within NackTimeout. Pass FailedQueue to receive
// evaluations that reached the delivery limit.
func (b *Broker) Dequeue(ctx context.Context, types []string) (*structs.Evaluation, string, error) {
	if len(types) == 0 {
		return nil, "", ErrNoTypes
	}
	var w *waiter
	defer func() {
		if w != nil {
			b.mu.Lock()
			delete(b.waiters, w)
			b.mu.Unlock()
		}
	}()
	for {
		if err := ctx.Err(); err != nil {
			return nil, "", err
		}
		b.mu.Lock()
		ev, token, err := b.tryDequeueLocked(types)
		if ev != nil || err != nil {
			b.mu.Unlock()
			return ev, token, err
		}
		if w == nil {
			w = &waiter{types: types, ch: make(chan struct{}, 1)}
			b.waiters[w] = struct{}{}
		}
		b.mu.Unlock()

		select {
		case <-w.ch:
		case <-ctx.Done():
			return nil, "", ctx.Err()
		}
	}
}

// tryDequeueLocked is one non-blocking Dequeue attempt; ev is nil when
// nothing is ready. b.mu must be held.
func (b *Broker) tryDequeueLocked(types []string) (*structs.Evaluation, string, error) {
	if !b.enabled {
		return nil, "", ErrNotEnabled
	}
	if b.paused {
		return nil, "", nil
	}
	now := b.clock.Now()
	token := uuid.NewString()
	ev, fx := b.state.dequeue(now, types, token)
	b.apply(fx, now)
	if ev == nil {
		return nil, "", nil
	}
	return ev, token, nil
}

// Ack reports that the outstanding evaluation was processed. The next
// pending evaluation of the same job, if any, becomes ready.
func (b *Broker) Ack(evalID, token string) error {
	return b.do(evalID, token, (*queueState).ack)
}

// Nack gives an outstanding evaluation back. It is re-enqueued after
// InitialNackDelay (first delivery) or SubsequentNackDelay (later ones), or
// moves to FailedQueue once it has been delivered DeliveryLimit times. Its
// job stays blocked for other evaluations until it is finally acked.
func (b *Broker) Nack(evalID, token string) error {
	return b.do(evalID, token, (*queueState).nack)
}

// OutstandingReset restarts the nack timer of an outstanding evaluation;
// workers call it while they plan a long evaluation. A paused timer stays
// paused.
func (b *Broker) OutstandingReset(evalID, token string) error {
	return b.do(evalID, token, (*queueState).outstandingReset)
}

// PauseNackTimeout stops the nack timer of an outstanding evaluation, while
// its plan waits in the plan queue.
func (b *Broker) PauseNackTimeout(evalID, token string) error {
	return b.do(evalID, token, (*queueState).pauseNack)
}

// ResumeNackTimeout restarts the nack timer with a full NackTimeout.
func (b *Broker) ResumeNackTimeout(evalID, token string) error {
	return b.do(evalID, token, (*queueState).resumeNack)
}

// Outstanding returns the token of an outstanding evaluation.
func (b *Broker) Outstanding(evalID string) (token string, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state.token(evalID)
}

// IsFailed reports whether the evaluation is in, or was handed out from,
// FailedQueue. Dequeue returns evaluations with their own Type, so a worker
// that also takes FailedQueue uses this to pick the failed-eval path.
func (b *Broker) IsFailed(evalID string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state.isFailed(evalID)
}

// CancelledCh is signalled (coalesced) whenever evaluations were cancelled
// in favour of a newer evaluation of their job; TakeCancelled returns them.
func (b *Broker) CancelledCh() <-chan struct{} { return b.cancelledCh }

// TakeCancelled returns, and forgets, the evaluations the broker cancelled
// since the last call: pending evaluations of a job that were superseded by
// a newer one when the job's in-flight evaluation was acked. The broker no
// longer holds them; the caller records them as cancelled.
func (b *Broker) TakeCancelled() []*structs.Evaluation {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.cancelled
	b.cancelled = nil
	return out
}

// Stats returns a snapshot of the queues.
func (b *Broker) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state.stats()
}

func (b *Broker) do(evalID, token string, op func(*queueState, time.Time, string, string) (effects, error)) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.enabled {
		return ErrNotEnabled
	}
	now := b.clock.Now()
	fx, err := op(b.state, now, evalID, token)
	b.apply(fx, now)
	return err
}

// apply carries out what the core decided: wake Dequeue callers, log, and
// arm the timer for the next deadline. b.mu must be held.
func (b *Broker) apply(fx effects, now time.Time) {
	for _, id := range fx.timedOut {
		b.logger.Warn("nack timeout reached, evaluation nacked", "eval_id", id)
	}
	for _, id := range fx.failed {
		b.logger.Warn("evaluation reached delivery limit, moved to failed queue", "eval_id", id)
	}
	if len(fx.cancelled) > 0 {
		b.logger.Debug("pending evaluations superseded by a newer one", "count", len(fx.cancelled), "job_id", fx.cancelled[0].JobID)
		b.cancelled = append(b.cancelled, fx.cancelled...)
		select {
		case b.cancelledCh <- struct{}{}:
		default:
		}
	}
	if len(fx.wake) > 0 {
		for w := range b.waiters {
			if intersects(w.types, fx.wake) {
				notify(w)
			}
		}
	}
	b.reschedule(now)
}

// reschedule keeps exactly one timer armed for the core's next deadline.
func (b *Broker) reschedule(now time.Time) {
	next, ok := b.state.nextDeadline()
	if !ok || !b.enabled {
		b.stopTimer()
		return
	}
	if b.timer != nil && b.timerAt.Equal(next) {
		return
	}
	b.stopTimer()
	b.gen++
	gen := b.gen
	b.timerAt = next
	b.timer = b.clock.AfterFunc(max(next.Sub(now), 0), func() { b.onTimer(gen) })
}

func (b *Broker) stopTimer() {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	b.gen++
}

// onTimer runs in the timer's goroutine: it lets the core fire what is due.
// A stale callback (timer replaced or stopped) is harmless: the core only
// fires deadlines that have passed.
func (b *Broker) onTimer(gen uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if gen == b.gen {
		b.timer = nil
	}
	if !b.enabled {
		return
	}
	now := b.clock.Now()
	b.apply(b.state.advance(now), now)
}

func notify(w *waiter) {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

func intersects(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}
