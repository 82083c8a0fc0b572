package broker

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

var testCore = coreConfig{
	nackTimeout:         10 * time.Second,
	deliveryLimit:       3,
	initialNackDelay:    1 * time.Second,
	subsequentNackDelay: 5 * time.Second,
}

var schedTypes = []string{structs.JobTypeSystem, structs.JobTypeSysBatch, "_core"}

type evalOpt func(*structs.Evaluation)

func typ(t string) evalOpt         { return func(e *structs.Evaluation) { e.Type = t } }
func ns(n string) evalOpt          { return func(e *structs.Evaluation) { e.Namespace = n } }
func status(s string) evalOpt      { return func(e *structs.Evaluation) { e.Status = s } }
func wait(d time.Duration) evalOpt { return func(e *structs.Evaluation) { e.Wait = d } }
func waitUntil(d time.Duration) evalOpt {
	return func(e *structs.Evaluation) { e.WaitUntil = epoch.Add(d) }
}
func mkEval(id, job string, prio int, ci uint64, opts ...evalOpt) *structs.Evaluation {
	e := &structs.Evaluation{
		ID: id, Namespace: structs.DefaultNamespace, JobID: job, Priority: prio,
		Type: structs.JobTypeSystem, Status: structs.EvalStatusPending, CreateIndex: ci,
	}
	for _, o := range opts {
		o(e)
	}
	return e
}

// totals is Stats without ByType, for compact expectations.
type totals struct{ ready, unacked, pending, waiting, failed int }

func totalsOf(s Stats) totals {
	return totals{s.TotalReady, s.TotalUnacked, s.TotalPending, s.TotalWaiting, s.TotalFailed}
}

// step is one operation on the core at time epoch+at. For "deq", id is the
// expected evaluation ("" = none). For ack/nack/reset/pause/resume, id is the
// target and err the expected error. stats, when set, is checked afterwards.
type step struct {
	at       time.Duration
	op       string
	eval     *structs.Evaluation
	types    []string
	id       string
	badToken bool
	err      error
	wake     []string
	// cancelled, when non-nil, is the exact set of eval IDs the step cancels.
	cancelled []string
	stats     *totals
}

func enq(at time.Duration, e *structs.Evaluation) step { return step{at: at, op: "enq", eval: e} }
func deq(at time.Duration, id string, types ...string) step {
	return step{at: at, op: "deq", id: id, types: types}
}
func opOn(at time.Duration, op, id string, err error) step {
	return step{at: at, op: op, id: id, err: err}
}
func tick(at time.Duration, st totals) step { return step{at: at, op: "tick", stats: &st} }
func check(st totals) step                  { return step{op: "stats", stats: &st} }

const s = time.Second

func TestQueueStateTable(t *testing.T) {
	cases := []struct {
		name  string
		steps []step
	}{
		{"priority order across jobs", []step{
			enq(0, mkEval("a", "ja", 50, 1)), enq(0, mkEval("b", "jb", 70, 2)), enq(0, mkEval("c", "jc", 30, 3)),
			check(totals{ready: 3}),
			deq(0, "b"), deq(0, "a"), deq(0, "c"), deq(0, ""),
			check(totals{unacked: 3}),
		}},
		{"FIFO among equal priority: CreateIndex then arrival", []step{
			enq(0, mkEval("a", "ja", 50, 3)), enq(0, mkEval("b", "jb", 50, 1)),
			enq(0, mkEval("c", "jc", 50, 2)), enq(0, mkEval("d", "jd", 50, 2)),
			deq(0, "b"), deq(0, "c"), deq(0, "d"), deq(0, "a"),
		}},
		{"dequeue only from requested types", []step{
			enq(0, mkEval("a", "ja", 50, 1)), enq(0, mkEval("b", "jb", 90, 2, typ("sysbatch"))),
			deq(0, "a", "system"), deq(0, "", "system"), deq(0, "", "_core"), deq(0, "b", "sysbatch", "system"),
		}},
		{"best priority across requested types", []step{
			enq(0, mkEval("s", "j1", 50, 1)), enq(0, mkEval("sb", "j2", 60, 2, typ("sysbatch"))),
			enq(0, mkEval("core", "j3", 40, 3, typ("_core"))),
			deq(0, "sb"), deq(0, "s"), deq(0, "core"),
		}},
		{"one eval per job in flight; ack releases the next", []step{
			enq(0, mkEval("x1", "x", 50, 1)), enq(0, mkEval("x2", "x", 50, 2)), enq(0, mkEval("y1", "y", 50, 3)),
			check(totals{ready: 2, pending: 1}),
			deq(0, "x1"), deq(0, "y1"), deq(0, ""),
			{op: "ack", id: "x1", wake: []string{"system"}, stats: &totals{ready: 1, unacked: 1}},
			deq(0, "x2"),
		}},
		{"ack readies the newest pending eval of the job and cancels the others", []step{
			enq(0, mkEval("e1", "x", 50, 1)), enq(0, mkEval("e2", "x", 50, 5)),
			enq(0, mkEval("e3", "x", 70, 6)), enq(0, mkEval("e4", "x", 50, 4)),
			enq(0, mkEval("y1", "y", 50, 2)), enq(0, mkEval("y2", "y", 50, 3)),
			check(totals{ready: 2, pending: 4}),
			deq(0, "e1"),
			{op: "ack", id: "e1", cancelled: []string{"e2", "e4"}, stats: &totals{ready: 2, pending: 1}},
			deq(0, "e3"), {op: "ack", id: "e3", cancelled: []string{}},
			deq(0, "y1"), {op: "ack", id: "y1", cancelled: []string{}},
			deq(0, "y2"), deq(0, ""),
		}},
		{"equal CreateIndex: the later arrival is the newest", []step{
			enq(0, mkEval("a", "x", 50, 1)), enq(0, mkEval("b", "x", 50, 7)), enq(0, mkEval("c", "x", 50, 7)),
			deq(0, "a"), {op: "ack", id: "a", cancelled: []string{"b"}}, deq(0, "c"),
		}},
		{"a burst of versions costs two scheduling passes", []step{
			enq(0, mkEval("v00", "x", 50, 10)), enq(0, mkEval("v01", "x", 50, 11)), enq(0, mkEval("v02", "x", 50, 12)),
			enq(0, mkEval("v03", "x", 50, 13)), enq(0, mkEval("v04", "x", 50, 14)), enq(0, mkEval("v05", "x", 50, 15)),
			deq(0, "v00"),
			enq(0, mkEval("v06", "x", 50, 16)), enq(0, mkEval("v07", "x", 50, 17)),
			check(totals{unacked: 1, pending: 7}),
			{op: "ack", id: "v00", cancelled: []string{"v01", "v02", "v03", "v04", "v05", "v06"}, stats: &totals{ready: 1}},
			deq(0, "v07"), {op: "ack", id: "v07", cancelled: []string{}, stats: &totals{}},
		}},
		{"a nacked eval keeps its job's slot; the newer ones coalesce on its ack", []step{
			enq(0, mkEval("a", "x", 50, 1)), deq(0, "a"), opOn(0, "nack", "a", nil),
			enq(0, mkEval("b", "x", 50, 2)), enq(0, mkEval("c", "x", 50, 3)),
			check(totals{waiting: 1, pending: 2}),
			deq(1*s, "a"), {at: 1 * s, op: "ack", id: "a", cancelled: []string{"b"}}, deq(1*s, "c"),
		}},
		{"a delayed eval joins the pending list when due and may be superseded", []step{
			enq(0, mkEval("d", "x", 50, 1, waitUntil(5*s))), enq(0, mkEval("e", "x", 50, 2)),
			deq(0, "e"),
			tick(4*s, totals{unacked: 1, waiting: 1}),
			tick(5*s, totals{unacked: 1, pending: 1}),
			enq(5*s, mkEval("f", "x", 50, 3)),
			{at: 5 * s, op: "ack", id: "e", cancelled: []string{"d"}}, deq(5*s, "f"),
		}},
		{"same job ID in two namespaces are two jobs", []step{
			enq(0, mkEval("a", "web", 50, 1, ns("a"))), enq(0, mkEval("b", "web", 50, 2, ns("b"))),
			enq(0, mkEval("c", "web", 50, 3, ns(""))), enq(0, mkEval("d", "web", 50, 4)),
			check(totals{ready: 3, pending: 1}),
		}},
		{"dedupe by ID in every phase", []step{
			enq(0, mkEval("a", "x", 50, 1)), enq(0, mkEval("a", "x", 50, 1)),
			check(totals{ready: 1}),
			deq(0, "a"), enq(0, mkEval("a", "x", 50, 1)),
			check(totals{unacked: 1}),
			enq(0, mkEval("b", "x", 50, 2)), enq(0, mkEval("b", "x", 50, 2)),
			check(totals{unacked: 1, pending: 1}),
			enq(0, mkEval("w", "y", 50, 3, wait(s))), enq(0, mkEval("w", "y", 50, 3)),
			check(totals{unacked: 1, pending: 1, waiting: 1}),
			opOn(0, "ack", "a", nil), enq(0, mkEval("a", "x", 50, 1)),
			check(totals{ready: 1, pending: 1, waiting: 1}),
		}},
		{"non-pending evals are ignored", []step{
			enq(0, mkEval("a", "x", 50, 1, status(structs.EvalStatusBlocked))),
			enq(0, mkEval("b", "x", 50, 2, status(structs.EvalStatusComplete))),
			enq(0, nil),
			check(totals{}), deq(0, ""),
		}},
		{"WaitUntil in the future delays", []step{
			enq(0, mkEval("a", "x", 50, 1, waitUntil(30*s))),
			check(totals{waiting: 1}),
			deq(29*s, ""), deq(30*s, "a"),
		}},
		{"Wait delays from enqueue time", []step{
			enq(10*s, mkEval("a", "x", 50, 1, wait(5*s))),
			deq(14*s, ""), deq(15*s, "a"),
		}},
		{"WaitUntil in the past is ready now (and wins over Wait)", []step{
			enq(10*s, mkEval("a", "x", 50, 1, waitUntil(5*s), wait(time.Hour))),
			deq(10*s, "a"),
		}},
		{"delayed eval does not hold its job's slot", []step{
			enq(0, mkEval("d", "x", 50, 1, waitUntil(30*s))), enq(0, mkEval("e", "x", 50, 2)),
			deq(25*s, "e"),
			tick(30*s, totals{unacked: 1, pending: 1}),
			opOn(30*s, "ack", "e", nil), deq(30*s, "d"),
		}},
		{"nack delays, then delivery limit sends to failed", []step{
			enq(0, mkEval("a", "x", 50, 1)), enq(0, mkEval("b", "x", 50, 2)),
			deq(0, "a"), opOn(0, "nack", "a", nil),
			check(totals{waiting: 1, pending: 1}),
			deq(999*time.Millisecond, ""), deq(1*s, "a"), opOn(1*s, "nack", "a", nil),
			deq(5999*time.Millisecond, ""), deq(6*s, "a"),
			{at: 6 * s, op: "nack", id: "a", wake: []string{FailedQueue}, stats: &totals{failed: 1, pending: 1}},
			deq(100*s, ""), deq(100*s, "a", FailedQueue),
			opOn(100*s, "ack", "a", nil), deq(100*s, "b"),
		}},
		{"nacking a failed eval puts it straight back", []step{
			enq(0, mkEval("a", "x", 50, 1)),
			deq(0, "a"), opOn(0, "nack", "a", nil), deq(1*s, "a"), opOn(1*s, "nack", "a", nil),
			deq(6*s, "a"), opOn(6*s, "nack", "a", nil),
			deq(6*s, "a", FailedQueue), opOn(6*s, "nack", "a", nil),
			check(totals{failed: 1}),
		}},
		{"nack timeout nacks; delay counts from the deadline", []step{
			enq(0, mkEval("a", "x", 50, 1)), deq(0, "a"),
			tick(9999*time.Millisecond, totals{unacked: 1}),
			tick(10500*time.Millisecond, totals{waiting: 1}),
			opOn(10500*time.Millisecond, "ack", "a", ErrNotOutstanding),
			deq(11*s, "a"),
		}},
		{"nack timeouts up to the delivery limit without a tick in between", []step{
			enq(0, mkEval("a", "x", 50, 1)), deq(0, "a"),
			tick(time.Hour, totals{ready: 1}), // timeout at 10s, ready at 11s
			deq(time.Hour, "a"), deq(time.Hour, ""),
		}},
		{"OutstandingReset restarts the timer", []step{
			enq(0, mkEval("a", "x", 50, 1)), deq(0, "a"),
			opOn(8*s, "reset", "a", nil),
			tick(17*s, totals{unacked: 1}), tick(18*s, totals{waiting: 1}),
			opOn(18*s, "reset", "a", ErrNotOutstanding),
		}},
		{"pause and resume the nack timer", []step{
			enq(0, mkEval("a", "x", 50, 1)), deq(0, "a"),
			opOn(5*s, "pause", "a", nil),
			tick(100*s, totals{unacked: 1}),
			opOn(100*s, "reset", "a", nil), // stays paused
			tick(200*s, totals{unacked: 1}),
			opOn(200*s, "resume", "a", nil),
			tick(209*s, totals{unacked: 1}), tick(210*s, totals{waiting: 1}),
		}},
		{"tokens and outstanding checks", []step{
			enq(0, mkEval("a", "x", 50, 1)), enq(0, mkEval("b", "y", 40, 2)),
			opOn(0, "ack", "b", ErrNotOutstanding), // ready, not handed out
			opOn(0, "nack", "nope", ErrNotOutstanding),
			deq(0, "a"),
			{op: "ack", id: "a", badToken: true, err: ErrTokenMismatch},
			{op: "nack", id: "a", badToken: true, err: ErrTokenMismatch},
			{op: "pause", id: "a", badToken: true, err: ErrTokenMismatch},
			{op: "resume", id: "a", badToken: true, err: ErrTokenMismatch},
			{op: "reset", id: "a", badToken: true, err: ErrTokenMismatch},
			opOn(0, "ack", "a", nil),
			opOn(0, "ack", "a", ErrNotOutstanding),
			check(totals{ready: 1}),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runSteps(t, tc.steps) })
	}
}

// reg marks an evaluation as triggered by a job registration.
func reg(e *structs.Evaluation) { e.TriggeredBy = structs.EvalTriggerJobRegister }

func TestQueueStateRegisterSettle(t *testing.T) {
	const ms = time.Millisecond
	cfg := testCore
	cfg.registerSettle = 200 * ms
	cases := []struct {
		name  string
		steps []step
	}{
		{"a single registration never waits", []step{
			enq(0, mkEval("a", "x", 50, 1, reg)), deq(0, "a"),
		}},
		{"the next registration waits out the window after the last one's ack", []step{
			enq(0, mkEval("a", "x", 50, 1, reg)), deq(0, "a"), opOn(10*ms, "ack", "a", nil),
			enq(50*ms, mkEval("b", "x", 50, 2, reg)),
			check(totals{waiting: 1}),
			deq(209*ms, ""), deq(210*ms, "b"),
		}},
		{"a burst piles up behind the settling eval and only the newest runs", []step{
			enq(0, mkEval("a", "x", 50, 1, reg)), deq(0, "a"),
			enq(5*ms, mkEval("b", "x", 50, 2, reg)),
			{at: 10 * ms, op: "ack", id: "a", cancelled: []string{}, stats: &totals{waiting: 1}},
			enq(20*ms, mkEval("c", "x", 50, 3, reg)), enq(30*ms, mkEval("d", "x", 50, 4, reg)),
			check(totals{waiting: 1, pending: 2}),
			{at: 210 * ms, op: "tick", cancelled: []string{"b", "c"}, stats: &totals{ready: 1}},
			deq(210*ms, "d"),
		}},
		{"other triggers never wait", []step{
			enq(0, mkEval("a", "x", 50, 1, reg)), deq(0, "a"), opOn(10*ms, "ack", "a", nil),
			enq(20*ms, mkEval("w", "x", 50, 2)), deq(20*ms, "w"),
		}},
		{"the window opens only on a job-register eval's ack and per job", []step{
			enq(0, mkEval("w", "x", 50, 1)), deq(0, "w"), opOn(10*ms, "ack", "w", nil),
			enq(20*ms, mkEval("a", "x", 50, 2, reg)), deq(20*ms, "a"), opOn(30*ms, "ack", "a", nil),
			enq(40*ms, mkEval("y", "y", 50, 3, reg)), deq(40*ms, "y"),
		}},
		{"a newer non-register eval supersedes the settling one", []step{
			enq(0, mkEval("a", "x", 50, 1, reg)), deq(0, "a"), opOn(10*ms, "ack", "a", nil),
			enq(20*ms, mkEval("b", "x", 50, 2, reg)), enq(30*ms, mkEval("w", "x", 50, 3)),
			{at: 210 * ms, op: "tick", cancelled: []string{"b"}}, deq(210*ms, "w"),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runStepsWith(t, cfg, tc.steps) })
	}
}

func runSteps(t *testing.T, steps []step) {
	t.Helper()
	runStepsWith(t, testCore, steps)
}

func runStepsWith(t *testing.T, cfg coreConfig, steps []step) {
	t.Helper()
	q := newQueueState(cfg)
	tokens := map[string]string{}
	var last time.Duration
	for i, st := range steps {
		if st.op != "stats" && st.at < last {
			st.at = last // steps without a time run at the previous step's time
		}
		if st.op != "stats" {
			last = st.at
		}
		now := epoch.Add(last)
		where := fmt.Sprintf("step %d (%s %s at %v)", i, st.op, st.id, last)
		var fx effects
		var err error
		token := tokens[st.id]
		if st.badToken {
			token = "bogus"
		}
		switch st.op {
		case "enq":
			fx = q.enqueue(now, st.eval)
		case "deq":
			types := st.types
			if len(types) == 0 {
				types = schedTypes
			}
			tok := fmt.Sprintf("tok-%d", i)
			var ev *structs.Evaluation
			ev, fx = q.dequeue(now, types, tok)
			if st.id == "" {
				require.Nil(t, ev, where)
			} else {
				require.NotNil(t, ev, where)
				require.Equal(t, st.id, ev.ID, where)
				tokens[ev.ID] = tok
			}
		case "ack":
			fx, err = q.ack(now, st.id, token)
		case "nack":
			fx, err = q.nack(now, st.id, token)
		case "reset":
			fx, err = q.outstandingReset(now, st.id, token)
		case "pause":
			fx, err = q.pauseNack(now, st.id, token)
		case "resume":
			fx, err = q.resumeNack(now, st.id, token)
		case "tick":
			fx = q.advance(now)
		case "stats":
		default:
			t.Fatalf("%s: unknown op", where)
		}
		if st.err != nil {
			require.ErrorIs(t, err, st.err, where)
		} else {
			require.NoError(t, err, where)
		}
		if st.wake != nil {
			require.Equal(t, st.wake, fx.wake, where)
		}
		if st.cancelled != nil {
			got := []string{}
			for _, e := range fx.cancelled {
				got = append(got, e.ID)
				require.NotContains(t, q.items, e.ID, "%s: a cancelled eval is forgotten", where)
				require.Equal(t, structs.EvalStatusPending, e.Status, "%s: the broker hands back the eval as it was", where)
			}
			sort.Strings(got)
			require.Equal(t, st.cancelled, got, where)
		} else {
			require.Empty(t, fx.cancelled, where)
		}
		if st.stats != nil {
			require.Equal(t, *st.stats, totalsOf(q.stats()), where)
		}
		checkCoreInvariants(t, q)
	}
}

// testingT is what checkCoreInvariants needs (*testing.T and *rapid.T).
type testingT interface {
	require.TestingT
	Helper()
}

// checkCoreInvariants verifies the core's internal bookkeeping.
func checkCoreInvariants(t testingT, q *queueState) {
	t.Helper()
	holders := map[jobKey]int{}
	for id, it := range q.items {
		require.Equal(t, id, it.eval.ID)
		switch it.phase {
		case phaseReady, phaseUnacked, phaseNackWait, phaseSettling:
			holders[it.key]++
			require.Equal(t, id, q.inflight[it.key], "slot holder of %v", it.key)
		case phasePending:
			require.NotEmpty(t, q.inflight[it.key], "pending eval %s with a free slot", id)
		}
		hasTimer := it.phase == phaseDelayed || it.phase == phaseNackWait || it.phase == phaseSettling ||
			(it.phase == phaseUnacked && !it.paused)
		require.Equal(t, hasTimer, it.timerIdx >= 0, "timer of %s (phase %d)", id, it.phase)
	}
	for k, n := range holders {
		require.Equal(t, 1, n, "job %v has %d evals in flight", k, n)
	}
	for k, id := range q.inflight {
		require.Contains(t, q.items, id, "slot of %v held by unknown eval", k)
	}
	n := 0
	for _, h := range q.ready {
		require.NotZero(t, h.Len(), "empty ready heap kept")
		n += h.Len()
	}
	for _, waiting := range q.pending {
		require.NotEmpty(t, waiting, "empty pending list kept")
		n += len(waiting)
	}
	for _, it := range q.items {
		if it.phase == phaseUnacked || it.phase == phaseDelayed || it.phase == phaseNackWait || it.phase == phaseSettling {
			n++
		}
	}
	require.Equal(t, len(q.items), n, "every item is in exactly one place")
}

func TestQueueStateStatsByTypeAndNextDeadline(t *testing.T) {
	q := newQueueState(testCore)
	_, ok := q.nextDeadline()
	require.False(t, ok)

	q.enqueue(epoch, mkEval("a", "j1", 50, 1))
	q.enqueue(epoch, mkEval("b", "j2", 50, 2, typ("sysbatch")))
	q.enqueue(epoch, mkEval("c", "j3", 50, 3, typ("sysbatch")))
	q.enqueue(epoch, mkEval("d", "j4", 50, 4, waitUntil(time.Minute)))
	st := q.stats()
	require.Equal(t, map[string]int{"system": 1, "sysbatch": 2}, st.ByType)
	at, ok := q.nextDeadline()
	require.True(t, ok)
	require.Equal(t, epoch.Add(time.Minute), at)

	ev, _ := q.dequeue(epoch.Add(s), schedTypes, "t")
	require.Equal(t, "a", ev.ID)
	at, _ = q.nextDeadline()
	require.Equal(t, epoch.Add(11*s), at, "nack timeout comes first")

	ev.Priority = 1 // the caller's copy is its own
	ev2, _ := q.dequeue(epoch.Add(s), []string{"sysbatch"}, "t2")
	require.Equal(t, "b", ev2.ID)
	require.Equal(t, 50, q.items["a"].eval.Priority)
}

func TestQueueStateEnqueueCopiesEval(t *testing.T) {
	q := newQueueState(testCore)
	e := mkEval("a", "j", 50, 1)
	q.enqueue(epoch, e)
	e.Priority = 99
	e.Type = "sysbatch"
	ev, _ := q.dequeue(epoch, []string{"system"}, "t")
	require.NotNil(t, ev)
	require.Equal(t, 50, ev.Priority)
}
