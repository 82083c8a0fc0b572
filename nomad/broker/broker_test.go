package broker

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

var testConfig = Config{
	NackTimeout:         10 * time.Second,
	DeliveryLimit:       3,
	InitialNackDelay:    1 * time.Second,
	SubsequentNackDelay: 5 * time.Second,
}

func newTestBroker(t *testing.T) (*Broker, *fakeClock) {
	t.Helper()
	fc := newFakeClock()
	cfg := testConfig
	cfg.Clock = fc
	b := New(cfg)
	b.SetEnabled(true)
	return b, fc
}

type result struct {
	eval  *structs.Evaluation
	token string
	err   error
}

// dequeueAsync starts a Dequeue and returns the channel its result lands on.
func dequeueAsync(ctx context.Context, b *Broker, types ...string) <-chan result {
	if len(types) == 0 {
		types = schedTypes
	}
	ch := make(chan result, 1)
	go func() {
		ev, tok, err := b.Dequeue(ctx, types)
		ch <- result{ev, tok, err}
	}()
	return ch
}

func requireBlocked(t *testing.T, ch <-chan result) {
	t.Helper()
	synctest.Wait()
	select {
	case r := <-ch:
		t.Fatalf("Dequeue returned %+v, want it blocked", r)
	default:
	}
}

func requireResult(t *testing.T, ch <-chan result) result {
	t.Helper()
	synctest.Wait()
	select {
	case r := <-ch:
		return r
	default:
		t.Fatal("Dequeue still blocked")
		return result{}
	}
}

func mustDequeue(t *testing.T, b *Broker, types ...string) (*structs.Evaluation, string) {
	t.Helper()
	if len(types) == 0 {
		types = schedTypes
	}
	b.mu.Lock()
	ev, tok, err := b.tryDequeueLocked(types)
	b.mu.Unlock()
	require.NoError(t, err)
	require.NotNil(t, ev, "nothing ready")
	return ev, tok
}

func TestNewDefaults(t *testing.T) {
	b := New(Config{})
	require.Equal(t, coreConfig{
		nackTimeout: DefaultNackTimeout, deliveryLimit: DefaultDeliveryLimit,
		initialNackDelay: DefaultInitialNackDelay, subsequentNackDelay: DefaultSubsequentNackDelay,
		registerSettle: DefaultRegisterSettle,
	}, b.core)
	require.False(t, b.Enabled())

	b = New(Config{InitialNackDelay: -1, SubsequentNackDelay: -1, DeliveryLimit: -2, NackTimeout: -1, RegisterSettle: -1})
	require.Equal(t, coreConfig{nackTimeout: DefaultNackTimeout, deliveryLimit: DefaultDeliveryLimit}, b.core)

	now := epoch.Add(time.Hour)
	b = New(Config{Now: func() time.Time { return now }})
	require.Equal(t, now, b.clock.Now())
}

func TestDequeueBlocksUntilEnqueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := newTestBroker(t)
		ch := dequeueAsync(t.Context(), b)
		requireBlocked(t, ch)

		b.Enqueue(mkEval("a", "x", 50, 1))
		r := requireResult(t, ch)
		require.NoError(t, r.err)
		require.Equal(t, "a", r.eval.ID)
		require.NotEmpty(t, r.token)
		tok, ok := b.Outstanding("a")
		require.True(t, ok)
		require.Equal(t, r.token, tok)
		require.Empty(t, b.waiters)
	})
}

func TestDequeueWakesOnlyMatchingTypes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := newTestBroker(t)
		sysbatch := dequeueAsync(t.Context(), b, "sysbatch")
		system := dequeueAsync(t.Context(), b, "system")
		requireBlocked(t, sysbatch)

		b.Enqueue(mkEval("a", "x", 50, 1))
		require.Equal(t, "a", requireResult(t, system).eval.ID)
		requireBlocked(t, sysbatch)

		b.Enqueue(mkEval("b", "y", 50, 2, typ("sysbatch")))
		require.Equal(t, "b", requireResult(t, sysbatch).eval.ID)
	})
}

func TestDequeueContextCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := newTestBroker(t)
		ctx, cancel := context.WithCancel(t.Context())
		ch := dequeueAsync(ctx, b)
		requireBlocked(t, ch)
		cancel()
		r := requireResult(t, ch)
		require.ErrorIs(t, r.err, context.Canceled)
		require.Nil(t, r.eval)
		require.Empty(t, b.waiters, "waiter unregistered")

		// A deadline runs on the bubble's fake time.
		ctx, cancel = context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		start := time.Now()
		r = <-dequeueAsync(ctx, b)
		require.ErrorIs(t, r.err, context.DeadlineExceeded)
		require.Equal(t, time.Minute, time.Since(start))

		// An already-cancelled context hands nothing out.
		b.Enqueue(mkEval("a", "x", 50, 1))
		_, _, err := b.Dequeue(ctx, schedTypes)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Equal(t, 1, b.Stats().TotalReady)

		_, _, err = b.Dequeue(t.Context(), nil)
		require.ErrorIs(t, err, ErrNoTypes)
	})
}

func TestNackTimeoutFiresOnClockAdvance(t *testing.T) {
	b, fc := newTestBroker(t)
	b.Enqueue(mkEval("a", "x", 50, 1))
	_, tok := mustDequeue(t, b)

	fc.Advance(testConfig.NackTimeout - time.Millisecond)
	require.Equal(t, totals{unacked: 1}, totalsOf(b.Stats()))
	fc.Advance(time.Millisecond)
	require.Equal(t, totals{waiting: 1}, totalsOf(b.Stats()), "nacked by timeout")
	require.ErrorIs(t, b.Ack("a", tok), ErrNotOutstanding)
	fc.Advance(testConfig.InitialNackDelay)
	require.Equal(t, totals{ready: 1}, totalsOf(b.Stats()))
	require.Zero(t, fc.active(), "no timer left when nothing waits")

	// Second delivery; OutstandingReset and Pause/Resume move the timeout.
	_, tok = mustDequeue(t, b)
	require.False(t, b.IsFailed("a"))
	fc.Advance(8 * time.Second)
	require.NoError(t, b.OutstandingReset("a", tok))
	fc.Advance(9 * time.Second)
	require.Equal(t, totals{unacked: 1}, totalsOf(b.Stats()))
	require.NoError(t, b.PauseNackTimeout("a", tok))
	require.Zero(t, fc.active())
	fc.Advance(time.Hour)
	require.Equal(t, totals{unacked: 1}, totalsOf(b.Stats()))
	require.NoError(t, b.ResumeNackTimeout("a", tok))
	fc.Advance(testConfig.NackTimeout)
	require.Equal(t, totals{waiting: 1}, totalsOf(b.Stats()))

	// Third delivery times out too: failed queue.
	fc.Advance(testConfig.SubsequentNackDelay)
	_, _ = mustDequeue(t, b)
	fc.Advance(testConfig.NackTimeout)
	require.Equal(t, totals{failed: 1}, totalsOf(b.Stats()))
	require.True(t, b.IsFailed("a"))
	ev, tok := mustDequeue(t, b, FailedQueue)
	require.Equal(t, "a", ev.ID)
	require.Equal(t, "system", ev.Type, "delivered with its own type")
	require.True(t, b.IsFailed("a"), "outstanding from the failed queue")
	require.NoError(t, b.Ack("a", tok))
	require.False(t, b.IsFailed("a"))
	require.Equal(t, totals{}, totalsOf(b.Stats()))
	require.Zero(t, fc.active())
}

func TestTimerWakesBlockedDequeue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, fc := newTestBroker(t)
		b.Enqueue(mkEval("a", "x", 50, 1, wait(30*time.Second)))
		ch := dequeueAsync(t.Context(), b)
		requireBlocked(t, ch)
		fc.Advance(29 * time.Second)
		requireBlocked(t, ch)
		fc.Advance(time.Second)
		require.Equal(t, "a", requireResult(t, ch).eval.ID)

		// A nack timeout re-delivers to another blocked worker.
		ch = dequeueAsync(t.Context(), b)
		requireBlocked(t, ch)
		fc.Advance(testConfig.NackTimeout + testConfig.InitialNackDelay)
		r := requireResult(t, ch)
		require.Equal(t, "a", r.eval.ID)
		require.NoError(t, b.Ack("a", r.token))
	})
}

func TestAckReleasesNextEvalOfSameJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := newTestBroker(t)
		b.Enqueue(mkEval("x1", "x", 50, 1))
		b.Enqueue(mkEval("x2", "x", 90, 2))
		ev, tok := mustDequeue(t, b)
		require.Equal(t, "x1", ev.ID)
		require.Equal(t, totals{unacked: 1, pending: 1}, totalsOf(b.Stats()))

		ch := dequeueAsync(t.Context(), b)
		requireBlocked(t, ch)
		require.ErrorIs(t, b.Ack("x1", "wrong"), ErrTokenMismatch)
		requireBlocked(t, ch)
		require.NoError(t, b.Ack("x1", tok))
		r := requireResult(t, ch)
		require.Equal(t, "x2", r.eval.ID)
		require.ErrorIs(t, b.Ack("x1", tok), ErrNotOutstanding)
	})
}

func TestDisabledBroker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fc := newFakeClock()
		cfg := testConfig
		cfg.Clock = fc
		b := New(cfg)

		_, _, err := b.Dequeue(t.Context(), schedTypes)
		require.ErrorIs(t, err, ErrNotEnabled)
		b.Enqueue(mkEval("a", "x", 50, 1))
		require.Equal(t, totals{}, totalsOf(b.Stats()))
		require.ErrorIs(t, b.Ack("a", "t"), ErrNotEnabled)
		require.ErrorIs(t, b.Nack("a", "t"), ErrNotEnabled)
		require.ErrorIs(t, b.OutstandingReset("a", "t"), ErrNotEnabled)

		b.SetEnabled(true)
		b.Enqueue(mkEval("a", "x", 50, 1))
		b.Enqueue(mkEval("b", "x", 50, 2))
		b.Enqueue(mkEval("c", "y", 50, 3, wait(time.Minute)))
		b.Enqueue(mkEval("d", "z", 50, 4))
		_, tok := mustDequeue(t, b)
		ch := dequeueAsync(t.Context(), b, "sysbatch")
		requireBlocked(t, ch)
		require.NotZero(t, fc.active())

		b.SetEnabled(false)
		require.ErrorIs(t, requireResult(t, ch).err, ErrNotEnabled)
		require.Equal(t, totals{}, totalsOf(b.Stats()))
		require.Zero(t, fc.active(), "timer stopped")
		require.ErrorIs(t, b.Ack("a", tok), ErrNotEnabled)
		fc.Advance(time.Hour) // nothing fires into the dropped state

		b.SetEnabled(true)
		require.Equal(t, totals{}, totalsOf(b.Stats()), "starts empty")
		require.ErrorIs(t, b.Ack("a", tok), ErrNotOutstanding)
	})
}

// TestRealClockInBubble runs the default clock on synctest's fake time.
func TestRealClockInBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(Config{NackTimeout: time.Minute})
		b.SetEnabled(true)
		start := time.Now()
		b.Enqueue(&structs.Evaluation{
			ID: "a", JobID: "x", Type: "system", Status: structs.EvalStatusPending,
			WaitUntil: start.Add(time.Hour),
		})
		r := <-dequeueAsync(t.Context(), b)
		require.NoError(t, r.err)
		require.Equal(t, time.Hour, time.Since(start))

		// Not acked: nacked after NackTimeout, re-delivered InitialNackDelay later.
		r = <-dequeueAsync(t.Context(), b)
		require.Equal(t, "a", r.eval.ID)
		require.Equal(t, time.Hour+time.Minute+DefaultInitialNackDelay, time.Since(start))
		require.NoError(t, b.Ack("a", r.token))
		b.SetEnabled(false)
	})
}

// TestConcurrentWorkers runs real goroutines against the broker under -race:
// every eval is either processed exactly once (acked) or cancelled exactly
// once in favour of a newer one of its job, the newest eval of every job is
// processed, and no two evals of one job are ever held by workers at the
// same time.
func TestConcurrentWorkers(t *testing.T) {
	b := New(Config{InitialNackDelay: -1, SubsequentNackDelay: -1, DeliveryLimit: 100})
	b.SetEnabled(true)
	const jobs, perJob, workers = 5, 40, 8
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	var mu sync.Mutex
	holding := map[string]string{} // job -> eval held by a worker
	acked := map[string]int{}
	cancelled := map[string]int{}
	var violations, nacks atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := 0; ; i++ {
				ev, tok, err := b.Dequeue(ctx, schedTypes)
				if err != nil {
					return
				}
				mu.Lock()
				if _, busy := holding[ev.JobID]; busy {
					violations.Add(1)
				}
				holding[ev.JobID] = ev.ID
				mu.Unlock()
				runtime.Gosched() // "work" while holding the eval
				nack := (i+w)%5 == 0
				mu.Lock()
				delete(holding, ev.JobID)
				if !nack {
					acked[ev.ID]++
				}
				mu.Unlock()
				if nack {
					nacks.Add(1)
					require.NoError(t, b.Nack(ev.ID, tok))
				} else {
					require.NoError(t, b.Ack(ev.ID, tok))
				}
				mu.Lock()
				for _, c := range b.TakeCancelled() {
					cancelled[c.ID]++
				}
				total := len(acked) + len(cancelled)
				mu.Unlock()
				if total == jobs*perJob {
					cancel()
				}
			}
		})
	}
	for i := range perJob {
		for j := range jobs {
			b.Enqueue(mkEval(string(rune('a'+j))+"-"+strconv.Itoa(i), string(rune('a'+j)), 50, uint64(i*jobs+j)))
		}
	}
	wg.Wait()
	require.Zero(t, violations.Load())
	require.Equal(t, jobs*perJob, len(acked)+len(cancelled))
	for id, n := range acked {
		require.Equal(t, 1, n, id)
		require.NotContains(t, cancelled, id)
	}
	for id, n := range cancelled {
		require.Equal(t, 1, n, id)
	}
	for j := range jobs {
		newest := string(rune('a'+j)) + "-" + strconv.Itoa(perJob-1)
		require.Contains(t, acked, newest, "the newest eval of every job is processed")
	}
	require.Equal(t, totals{}, totalsOf(b.Stats()))
	t.Logf("nacks: %d, acked: %d, cancelled: %d", nacks.Load(), len(acked), len(cancelled))
}
