package broker

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/drover-project/drover/nomad/structs"
)

// outstandingModel is what the test expects of one handed-out evaluation.
type outstandingModel struct {
	token    string
	job      string
	deadline time.Time // nack timeout, unless paused
	paused   bool
}

// brokerMachine drives a Broker on a fake clock with random operations and
// checks it against a small model.
type brokerMachine struct {
	b   *Broker
	fc  *fakeClock
	cfg Config

	nextID      int
	nextIndex   uint64
	ids         []string                     // every ID ever used, for re-enqueue
	live        map[string]string            // accepted, not yet acked: ID -> job
	deliveries  map[string]int               // dequeues of live evals
	outstanding map[string]*outstandingModel // handed out, not acked/nacked/timed out
	createIndex map[string]uint64            // CreateIndex of live evals
	acked       int
	cancelled   int
	failedSeen  int
}

var jobs = []string{"j1", "j2", "j3"}

func newBrokerMachine() *brokerMachine {
	fc := newFakeClock()
	cfg := testConfig
	cfg.Clock = fc
	b := New(cfg)
	b.SetEnabled(true)
	return &brokerMachine{
		b: b, fc: fc, cfg: cfg,
		live:        map[string]string{},
		deliveries:  map[string]int{},
		outstanding: map[string]*outstandingModel{},
		createIndex: map[string]uint64{},
	}
}

func (m *brokerMachine) enqueue(t *rapid.T) {
	var id string
	if len(m.ids) > 0 && rapid.IntRange(0, 4).Draw(t, "reuseID") == 0 {
		id = rapid.SampledFrom(m.ids).Draw(t, "id")
	} else {
		m.nextID++
		id = fmt.Sprintf("e%d", m.nextID)
		m.ids = append(m.ids, id)
	}
	job := rapid.SampledFrom(jobs).Draw(t, "job")
	m.nextIndex++
	ev := mkEval(id, job, rapid.IntRange(1, 3).Draw(t, "priority"), m.nextIndex,
		typ(rapid.SampledFrom(schedTypes).Draw(t, "type")))
	if rapid.IntRange(0, 3).Draw(t, "delayed") == 0 {
		ev.Wait = time.Duration(rapid.IntRange(1, 30).Draw(t, "waitSeconds")) * time.Second
	}
	if rapid.Bool().Draw(t, "register") {
		ev.TriggeredBy = structs.EvalTriggerJobRegister
	}
	if rapid.IntRange(0, 9).Draw(t, "notPending") == 0 {
		ev.Status = structs.EvalStatusComplete
	}
	m.b.Enqueue(ev)
	if _, known := m.live[id]; !known && ev.Status == structs.EvalStatusPending {
		m.live[id] = job
		m.deliveries[id] = 0
		m.createIndex[id] = m.nextIndex
	}
}

func (m *brokerMachine) dequeue(t *rapid.T) {
	types := rapid.SampledFrom([][]string{schedTypes, {FailedQueue}, append(slices.Clone(schedTypes), FailedQueue)}).
		Draw(t, "types")
	m.b.mu.Lock()
	ev, tok, err := m.b.tryDequeueLocked(types)
	m.b.mu.Unlock()
	if err != nil {
		t.Fatalf("dequeue: %v", err)
	}
	if ev == nil {
		return
	}
	job, ok := m.live[ev.ID]
	if !ok {
		t.Fatalf("dequeued %s, which is not live", ev.ID)
	}
	if _, dup := m.outstanding[ev.ID]; dup {
		t.Fatalf("dequeued %s while it is outstanding", ev.ID)
	}
	for id, o := range m.outstanding {
		if o.job == job {
			t.Fatalf("dequeued %s while %s of job %s is outstanding", ev.ID, id, job)
		}
	}
	m.deliveries[ev.ID]++
	m.outstanding[ev.ID] = &outstandingModel{token: tok, job: job, deadline: m.fc.Now().Add(m.cfg.NackTimeout)}
}

// pick draws an outstanding evaluation, or skips the action.
func (m *brokerMachine) pick(t *rapid.T) (string, *outstandingModel) {
	if len(m.outstanding) == 0 {
		t.Skip("nothing outstanding")
	}
	ids := make([]string, 0, len(m.outstanding))
	for id := range m.outstanding {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	id := rapid.SampledFrom(ids).Draw(t, "outstanding")
	return id, m.outstanding[id]
}

func (m *brokerMachine) ack(t *rapid.T) {
	id, o := m.pick(t)
	if rapid.IntRange(0, 5).Draw(t, "badToken") == 0 {
		if err := m.b.Ack(id, "bogus"); err == nil {
			t.Fatalf("ack %s with a bad token succeeded", id)
		}
		return
	}
	if err := m.b.Ack(id, o.token); err != nil {
		t.Fatalf("ack %s: %v", id, err)
	}
	delete(m.outstanding, id)
	delete(m.live, id)
	delete(m.deliveries, id)
	m.acked++
	m.absorbCancelled(t)
}

// absorbCancelled: the broker cancels only pending (or settling)
// evaluations, each in favour of a newer one of the same job that now holds
// the job's slot, and forgets them.
func (m *brokerMachine) absorbCancelled(t *rapid.T) {
	cancelled := m.b.TakeCancelled()
	if len(cancelled) == 0 {
		return
	}
	m.b.mu.Lock()
	defer m.b.mu.Unlock()
	for _, ev := range cancelled {
		job, live := m.live[ev.ID]
		if !live || job != ev.JobID {
			t.Fatalf("cancelled %s is not a live eval of job %s", ev.ID, ev.JobID)
		}
		if _, out := m.outstanding[ev.ID]; out {
			t.Fatalf("cancelled %s while it was outstanding", ev.ID)
		}
		holder, ok := m.b.state.inflight[jobKey{namespace: structs.DefaultNamespace, jobID: job}]
		if !ok {
			t.Fatalf("eval %s of job %s cancelled but none took the slot", ev.ID, job)
		}
		if m.createIndex[ev.ID] > m.createIndex[holder] {
			t.Fatalf("cancelled %s (index %d) in favour of older %s (index %d)", ev.ID, m.createIndex[ev.ID], holder, m.createIndex[holder])
		}
		delete(m.live, ev.ID)
		delete(m.deliveries, ev.ID)
		delete(m.createIndex, ev.ID)
		m.cancelled++
	}
}

func (m *brokerMachine) nack(t *rapid.T) {
	id, o := m.pick(t)
	if err := m.b.Nack(id, o.token); err != nil {
		t.Fatalf("nack %s: %v", id, err)
	}
	delete(m.outstanding, id)
	m.checkNacked(t, id)
}

// checkNacked: a nacked eval is in the failed queue iff it reached the limit.
func (m *brokerMachine) checkNacked(t *rapid.T, id string) {
	m.b.mu.Lock()
	it := m.b.state.items[id]
	m.b.mu.Unlock()
	failed := it.phase == phaseReady && it.queue == FailedQueue
	if failed != m.b.IsFailed(id) {
		t.Fatalf("IsFailed(%s) disagrees with the queue", id)
	}
	if want := m.deliveries[id] >= m.cfg.DeliveryLimit; failed != want {
		t.Fatalf("eval %s after %d deliveries: failed=%v, want %v", id, m.deliveries[id], failed, want)
	}
	if failed {
		m.failedSeen++
	}
}

func (m *brokerMachine) timerOp(t *rapid.T) {
	id, o := m.pick(t)
	now := m.fc.Now()
	switch op := rapid.SampledFrom([]string{"reset", "pause", "resume"}).Draw(t, "timerOp"); op {
	case "reset":
		if err := m.b.OutstandingReset(id, o.token); err != nil {
			t.Fatalf("reset %s: %v", id, err)
		}
		if !o.paused {
			o.deadline = now.Add(m.cfg.NackTimeout)
		}
	case "pause":
		if err := m.b.PauseNackTimeout(id, o.token); err != nil {
			t.Fatalf("pause %s: %v", id, err)
		}
		o.paused = true
	case "resume":
		if err := m.b.ResumeNackTimeout(id, o.token); err != nil {
			t.Fatalf("resume %s: %v", id, err)
		}
		o.paused = false
		o.deadline = now.Add(m.cfg.NackTimeout)
	}
}

func (m *brokerMachine) advance(t *rapid.T) {
	d := time.Duration(rapid.IntRange(0, 15_000).Draw(t, "advanceMillis")) * time.Millisecond
	m.fc.Advance(d)
	now := m.fc.Now()
	for id, o := range m.outstanding {
		if !o.paused && !o.deadline.After(now) {
			delete(m.outstanding, id) // nacked by timeout
			m.checkNacked(t, id)
		}
	}
	// The shell's timer must have fired everything due: no deadline is past.
	m.b.mu.Lock()
	next, ok := m.b.state.nextDeadline()
	m.b.mu.Unlock()
	if ok && !next.After(now) {
		t.Fatalf("deadline %v not fired at %v", next, now)
	}
}

// check runs after every action.
func (m *brokerMachine) check(t *rapid.T) {
	m.absorbCancelled(t)
	m.b.mu.Lock()
	defer m.b.mu.Unlock()
	checkCoreInvariants(t, m.b.state)
	st := m.b.state.stats()
	if got := st.TotalReady + st.TotalUnacked + st.TotalPending + st.TotalWaiting + st.TotalFailed; got != len(m.live) {
		t.Fatalf("broker holds %d evals, want %d (stats %+v)", got, len(m.live), st)
	}
	for id := range m.live {
		if _, ok := m.b.state.items[id]; !ok {
			t.Fatalf("live eval %s lost", id)
		}
		tok, ok := m.b.state.token(id)
		o, want := m.outstanding[id]
		if ok != want || (ok && tok != o.token) {
			t.Fatalf("eval %s: outstanding=%v token=%q, model %v %+v", id, ok, tok, want, o)
		}
	}
	perJob := map[string]int{}
	for _, o := range m.outstanding {
		if perJob[o.job]++; perJob[o.job] > 1 {
			t.Fatalf("two evals of job %s outstanding", o.job)
		}
	}
}

// drain proves nothing is lost: with time passing, workers that dequeue
// everything (failed queue included) and ack it empty the broker.
func (m *brokerMachine) drain(t *rapid.T) {
	for id, o := range m.outstanding {
		if err := m.b.Ack(id, o.token); err != nil {
			t.Fatalf("drain ack %s: %v", id, err)
		}
		delete(m.live, id)
		delete(m.outstanding, id)
		m.absorbCancelled(t)
	}
	all := append(slices.Clone(schedTypes), FailedQueue)
	for round := 0; len(m.live) > 0; round++ {
		if round > 10+len(m.live) {
			t.Fatalf("%d evals never delivered: %v (stats %+v)", len(m.live), m.live, m.b.Stats())
		}
		m.fc.Advance(time.Minute)
		m.absorbCancelled(t)
		for {
			m.b.mu.Lock()
			ev, tok, err := m.b.tryDequeueLocked(all)
			m.b.mu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			if ev == nil {
				break
			}
			if err := m.b.Ack(ev.ID, tok); err != nil {
				t.Fatalf("drain ack %s: %v", ev.ID, err)
			}
			if _, ok := m.live[ev.ID]; !ok {
				t.Fatalf("drained unknown eval %s", ev.ID)
			}
			delete(m.live, ev.ID)
			m.absorbCancelled(t)
		}
	}
	if st := m.b.Stats(); totalsOf(st) != (totals{}) {
		t.Fatalf("broker not empty after drain: %+v", st)
	}
	if n := m.fc.active(); n != 0 {
		t.Fatalf("%d timers armed on an empty broker", n)
	}
}

func TestBrokerProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newBrokerMachine()
		t.Repeat(map[string]func(*rapid.T){
			"":        m.check,
			"enqueue": m.enqueue,
			"dequeue": m.dequeue,
			"ack":     m.ack,
			"nack":    m.nack,
			"timer":   m.timerOp,
			"advance": m.advance,
		})
		m.drain(t)
	})
}
