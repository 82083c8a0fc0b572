package nomad

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// fakeProposer stands in for the raft apply: it records each batch it is
// given and answers with index 100+proposal number, or err. With hold set,
// each proposal waits for a receive from hold before it ends.
type fakeProposer struct {
	mu       sync.Mutex
	batches  [][]string
	hold     chan struct{}
	err      error
	inFlight atomic.Int32
	maxSeen  atomic.Int32 // the most proposals ever in flight at once
}

func (f *fakeProposer) apply(allocs []*structs.Allocation) (uint64, error) {
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for {
		m := f.maxSeen.Load()
		if n <= m || f.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	f.mu.Lock()
	var ids []string
	for _, a := range allocs {
		ids = append(ids, a.ID)
	}
	f.batches = append(f.batches, ids)
	index := uint64(100 + len(f.batches))
	f.mu.Unlock()
	if f.hold != nil {
		<-f.hold
	}
	return index, f.err
}

// got returns the batches proposed so far.
func (f *fakeProposer) got() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.batches)
}

type result struct {
	index uint64
	err   error
}

// submitAsync submits one update of alloc id; its result lands in out[id].
func submitAsync(b *allocUpdateBatcher, id string, out *sync.Map, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		idx, err := b.submit([]*structs.Allocation{{ID: id}})
		out.Store(id, result{idx, err})
	}()
}

func resultOf(t *testing.T, out *sync.Map, id string) result {
	t.Helper()
	v, ok := out.Load(id)
	require.True(t, ok, "no result for %s", id)
	return v.(result)
}

// A lone update is proposed at once: no timer, no wait for others.
func TestAllocUpdateBatcher_QuietUpdateProposedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeProposer{}
		b := newAllocUpdateBatcher(f.apply)
		start := time.Now()
		for i := range 3 {
			idx, err := b.submit([]*structs.Allocation{{ID: fmt.Sprint("a", i)}})
			require.NoError(t, err)
			require.Equal(t, uint64(101+i), idx, "each quiet update is its own proposal")
		}
		require.Zero(t, time.Since(start), "no (fake) time passed: nothing waited on a timer")
		require.Equal(t, [][]string{{"a0"}, {"a1"}, {"a2"}}, f.got())
	})
}

// Updates arriving while a proposal is in flight coalesce into exactly one
// next proposal, started as soon as the one in flight ends; every
// submitter gets its own proposal's index and error.
func TestAllocUpdateBatcher_CoalescesWhileInFlightAndPropagatesResults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeProposer{hold: make(chan struct{}), err: errors.New("not leader")}
		b := newAllocUpdateBatcher(f.apply)
		var out sync.Map
		var wg sync.WaitGroup
		submitAsync(b, "first", &out, &wg)
		synctest.Wait()
		require.Equal(t, [][]string{{"first"}}, f.got(), "proposed at once")
		for i := range 5 {
			submitAsync(b, fmt.Sprint("x", i), &out, &wg)
			synctest.Wait()
		}
		time.Sleep(time.Second) // however long the proposal in flight takes
		require.Len(t, f.got(), 1, "nothing more is proposed while one is in flight")
		f.hold <- struct{}{} // the first proposal ends
		synctest.Wait()
		got := f.got()
		require.Len(t, got, 2, "the gathered updates are proposed as soon as the first ends")
		require.Equal(t, []string{"x0", "x1", "x2", "x3", "x4"}, got[1], "one proposal, in arrival order")
		require.Equal(t, result{101, f.err}, resultOf(t, &out, "first"))
		f.hold <- struct{}{}
		wg.Wait()
		for i := range 5 {
			require.Equal(t, result{102, f.err}, resultOf(t, &out, fmt.Sprint("x", i)))
		}
		require.Equal(t, int32(1), f.maxSeen.Load(), "at most one proposal in flight")

		// Quiet again: the next update is proposed at once.
		f.hold, f.err = nil, nil
		idx, err := b.submit([]*structs.Allocation{{ID: "later"}})
		require.NoError(t, err)
		require.Equal(t, uint64(103), idx)
	})
}

// Shutdown fails the gathered updates' waiters explicitly, lets the
// proposal in flight end with its own result, waits for it, and refuses
// later updates.
func TestAllocUpdateBatcher_ShutdownFailsWaitersExplicitly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeProposer{hold: make(chan struct{})}
		b := newAllocUpdateBatcher(f.apply)
		var out sync.Map
		var wg sync.WaitGroup
		submitAsync(b, "flying", &out, &wg)
		synctest.Wait()
		submitAsync(b, "gathered", &out, &wg)
		synctest.Wait()

		closed := make(chan struct{})
		go func() { b.close(); close(closed) }()
		synctest.Wait()
		require.ErrorIs(t, resultOf(t, &out, "gathered").err, errAllocUpdatesClosed, "failed at once, not left waiting")
		select {
		case <-closed:
			t.Fatal("close returned while a proposal was in flight")
		default:
		}
		_, err := b.submit([]*structs.Allocation{{ID: "late"}})
		require.ErrorIs(t, err, errAllocUpdatesClosed)

		f.hold <- struct{}{}
		<-closed
		wg.Wait()
		require.Equal(t, result{101, nil}, resultOf(t, &out, "flying"))
		require.Equal(t, [][]string{{"flying"}}, f.got(), "nothing is proposed after close")
		b.close() // idempotent
	})
}

// groupCommit's decisions, step by step.
func TestGroupCommit_Table(t *testing.T) {
	type step struct {
		op          string // "add ID", "finished", "close"
		wantPropose bool   // add: must the caller propose now
		wantErr     bool   // add: refused
		wantBatch   []string
	}
	ids := func(b *allocBatch) []string {
		if b == nil {
			return nil
		}
		var out []string
		for _, a := range b.allocs {
			out = append(out, a.ID)
		}
		return out
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"idle: proposed at once, alone", []step{
			{op: "add a", wantPropose: true, wantBatch: []string{"a"}},
			{op: "finished"},
			{op: "add b", wantPropose: true, wantBatch: []string{"b"}},
		}},
		{"in flight: gathered into one next batch", []step{
			{op: "add a", wantPropose: true, wantBatch: []string{"a"}},
			{op: "add b", wantBatch: []string{"b"}},
			{op: "add c", wantBatch: []string{"b", "c"}},
			{op: "add b", wantBatch: []string{"b", "c", "b"}},
			{op: "finished", wantBatch: []string{"b", "c", "b"}},
			{op: "add d", wantBatch: []string{"d"}},
			{op: "finished", wantBatch: []string{"d"}},
			{op: "finished"},
			{op: "add e", wantPropose: true, wantBatch: []string{"e"}},
		}},
		{"close drops only the gathered batch", []step{
			{op: "add a", wantPropose: true, wantBatch: []string{"a"}},
			{op: "add b", wantBatch: []string{"b"}},
			{op: "close", wantBatch: []string{"b"}},
			{op: "add c", wantErr: true},
			{op: "finished"},
			{op: "close"},
		}},
		{"close when idle drops nothing", []step{
			{op: "close"},
			{op: "add a", wantErr: true},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var g groupCommit
			for i, s := range tc.steps {
				switch {
				case s.op == "finished":
					require.Equal(t, s.wantBatch, ids(g.finished()), "step %d", i)
				case s.op == "close":
					require.Equal(t, s.wantBatch, ids(g.close()), "step %d", i)
				default:
					b, propose, err := g.add([]*structs.Allocation{{ID: s.op[len("add "):]}})
					if s.wantErr {
						require.ErrorIs(t, err, errAllocUpdatesClosed, "step %d", i)
						continue
					}
					require.NoError(t, err)
					require.Equal(t, s.wantPropose, propose, "step %d", i)
					require.Equal(t, s.wantBatch, ids(b), "step %d", i)
				}
			}
		})
	}
}

// Property: over random interleavings of updates, ends of proposals and a
// shutdown, an update with nothing in flight is proposed at once, alone;
// updates arriving during one proposal all go in exactly the next one;
// at most one proposal is in flight; and the proposed batches, in order,
// followed by what shutdown dropped, are exactly the submitted updates in
// submission order (nothing lost, nothing twice, each allocation's
// updates in order).
func TestGroupCommit_Property(t *testing.T) {
	for seed := range uint64(500) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var g groupCommit
		var submitted, proposedInOrder []string
		var inFlight *allocBatch
		var gathered []string // the model: what arrived during the proposal in flight
		seq := map[string]int{}
		closed := false
		for range 200 {
			switch r := rng.IntN(10); {
			case r < 6: // one client's update (1-3 allocations, of 5)
				var allocs []*structs.Allocation
				var names []string
				for range 1 + rng.IntN(3) {
					id := fmt.Sprint("alloc", rng.IntN(5))
					seq[id]++
					name := fmt.Sprintf("%s#%d", id, seq[id])
					allocs = append(allocs, &structs.Allocation{ID: name})
					names = append(names, name)
				}
				b, propose, err := g.add(allocs)
				if closed {
					require.ErrorIs(t, err, errAllocUpdatesClosed, "seed %d", seed)
					continue
				}
				require.NoError(t, err)
				submitted = append(submitted, names...)
				if inFlight == nil {
					require.True(t, propose, "seed %d: nothing in flight, so proposed at once", seed)
					require.Equal(t, names, batchIDs(b), "seed %d: proposed alone", seed)
					inFlight = b
					proposedInOrder = append(proposedInOrder, names...)
				} else {
					require.False(t, propose, "seed %d: one in flight, so gathered", seed)
					gathered = append(gathered, names...)
					require.Equal(t, gathered, batchIDs(b), "seed %d: all gathered updates share one batch", seed)
				}
			case r < 9: // the proposal in flight ends
				if inFlight == nil {
					continue
				}
				next := g.finished()
				if len(gathered) == 0 {
					require.Nil(t, next, "seed %d: nothing gathered, so idle", seed)
					inFlight = nil
					continue
				}
				require.Equal(t, gathered, batchIDs(next), "seed %d: exactly one next proposal with everything gathered", seed)
				proposedInOrder = append(proposedInOrder, gathered...)
				inFlight, gathered = next, nil
			default:
				if closed || rng.IntN(5) > 0 {
					continue
				}
				dropped := g.close()
				closed = true
				require.Equal(t, gathered, batchIDs(dropped), "seed %d: shutdown drops exactly the gathered batch", seed)
				proposedInOrder = append(proposedInOrder, gathered...)
				gathered = nil
			}
		}
		require.Equal(t, submitted, append(proposedInOrder, gathered...), "seed %d: nothing lost, order kept", seed)
	}
}

func batchIDs(b *allocBatch) []string {
	if b == nil {
		return nil
	}
	var out []string
	for _, a := range b.allocs {
		out = append(out, a.ID)
	}
	return out
}

// Real goroutines (run with -race): many clients, each sending the updates
// of its own allocation one after another as a node does; every update is
// proposed exactly once, each allocation's updates in order, one proposal
// at a time, and every submitter's index is that of the proposal that
// carried its update.
func TestAllocUpdateBatcher_ConcurrentClientsNothingLostOrderKept(t *testing.T) {
	f := &fakeProposer{}
	slow := func(allocs []*structs.Allocation) (uint64, error) {
		time.Sleep(200 * time.Microsecond) // a proposal takes a while, so updates gather
		return f.apply(allocs)
	}
	b := newAllocUpdateBatcher(slow)
	const clients, updates = 40, 50
	answered := make([][]uint64, clients)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for u := range updates {
				idx, err := b.submit([]*structs.Allocation{{ID: fmt.Sprintf("c%d#%d", c, u)}})
				if err != nil {
					t.Error(err)
					return
				}
				answered[c] = append(answered[c], idx)
			}
		})
	}
	wg.Wait()
	b.close()
	got := f.got()
	where := map[string]uint64{}
	for i, batch := range got {
		for _, id := range batch {
			_, twice := where[id]
			require.False(t, twice, "%s proposed twice", id)
			where[id] = uint64(101 + i)
		}
	}
	require.Len(t, where, clients*updates, "every update proposed")
	for c := range clients {
		for u := range updates {
			id := fmt.Sprintf("c%d#%d", c, u)
			require.Equal(t, where[id], answered[c][u], "%s answered with its proposal's index", id)
			if u > 0 {
				require.Greater(t, where[id], where[fmt.Sprintf("c%d#%d", c, u-1)], "%s after its predecessor", id)
			}
		}
	}
	require.Equal(t, int32(1), f.maxSeen.Load(), "one proposal at a time")
	require.Less(t, len(got), clients*updates, "updates were coalesced")
}
