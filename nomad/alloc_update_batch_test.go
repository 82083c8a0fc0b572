package nomad

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// recordingApply records each batch it is given and answers with index
// 100+batch number, or err.
type recordingApply struct {
	mu      sync.Mutex
	batches [][]string
	hold    chan struct{} // when set, each apply waits for a receive from it
	err     error
}

func (r *recordingApply) apply(allocs []*structs.Allocation) (uint64, error) {
	if r.hold != nil {
		<-r.hold
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []string
	for _, a := range allocs {
		ids = append(ids, a.ID)
	}
	r.batches = append(r.batches, ids)
	return uint64(100 + len(r.batches)), r.err
}

// got returns the batches applied so far.
func (r *recordingApply) got() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]string(nil), r.batches...)
}

func submitAsync(b *allocUpdateBatcher, id string, out map[string]uint64, errs map[string]error, mu *sync.Mutex, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		idx, err := b.submit([]*structs.Allocation{{ID: id}}, false)
		mu.Lock()
		out[id], errs[id] = idx, err
		mu.Unlock()
	}()
}

func TestAllocUpdateBatcher_CoalescesWithinWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recordingApply{}
		b := newAllocUpdateBatcher(50*time.Millisecond, rec.apply)
		start := time.Now()

		// The first update after a quiet spell is applied at once.
		got, err := b.submit([]*structs.Allocation{{ID: "lone"}}, false)
		require.NoError(t, err)
		require.Equal(t, uint64(101), got)
		require.Zero(t, time.Since(start), "a lone update waits for nothing")

		// The next ones, within a window of that apply, gather into one.
		var mu sync.Mutex
		var wg sync.WaitGroup
		idx, errs := map[string]uint64{}, map[string]error{}
		time.Sleep(10 * time.Millisecond)
		for i := range 5 {
			submitAsync(b, fmt.Sprint("a", i), idx, errs, &mu, &wg)
		}
		synctest.Wait()
		require.Len(t, rec.got(), 1, "nothing more is applied before the window ends")
		time.Sleep(40 * time.Millisecond) // a window after the first apply started
		wg.Wait()
		require.Equal(t, 50*time.Millisecond, time.Since(start))
		require.Len(t, rec.got(), 2)
		require.ElementsMatch(t, []string{"a0", "a1", "a2", "a3", "a4"}, rec.got()[1])
		for i := range 5 {
			require.Equal(t, uint64(102), idx[fmt.Sprint("a", i)], "every submitter gets its batch's index")
			require.NoError(t, errs[fmt.Sprint("a", i)])
		}

		// After a quiet window, an update goes at once again.
		time.Sleep(time.Second)
		at := time.Now()
		got, err = b.submit([]*structs.Allocation{{ID: "b0"}}, false)
		require.NoError(t, err)
		require.Equal(t, uint64(103), got)
		require.Zero(t, time.Since(at))
		require.Equal(t, []string{"b0"}, rec.got()[2])
	})
}

func TestFlushDelay(t *testing.T) {
	t0 := time.Unix(100, 0)
	w := 50 * time.Millisecond
	for name, tc := range map[string]struct {
		last, now time.Time
		want      time.Duration
	}{
		"never applied":          {now: t0, want: 0},
		"within the window":      {last: t0, now: t0.Add(10 * time.Millisecond), want: 40 * time.Millisecond},
		"at the window's end":    {last: t0, now: t0.Add(w), want: 0},
		"long after":             {last: t0, now: t0.Add(time.Hour), want: 0},
		"right after it started": {last: t0, now: t0, want: w},
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, flushDelay(tc.last, tc.now, w))
		})
	}
}

func TestAllocUpdateBatcher_GathersDuringApplyAndPropagatesErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recordingApply{hold: make(chan struct{}), err: errors.New("not leader")}
		b := newAllocUpdateBatcher(50*time.Millisecond, rec.apply)
		var mu sync.Mutex
		var wg sync.WaitGroup
		idx, errs := map[string]uint64{}, map[string]error{}
		submitAsync(b, "first", idx, errs, &mu, &wg)
		time.Sleep(60 * time.Millisecond) // the first batch is now applying (held)
		submitAsync(b, "x", idx, errs, &mu, &wg)
		time.Sleep(200 * time.Millisecond) // window long past, but the first apply still runs
		submitAsync(b, "y", idx, errs, &mu, &wg)
		synctest.Wait()
		require.Empty(t, rec.got())
		rec.hold <- struct{}{} // finish the first apply
		rec.hold <- struct{}{} // and the second
		wg.Wait()
		require.Equal(t, [][]string{{"first"}, {"x", "y"}}, rec.got(),
			"updates arriving during an apply go into one next batch")
		for _, id := range []string{"first", "x", "y"} {
			require.EqualError(t, errs[id], "not leader", id)
		}
	})
}

func TestAllocUpdateBatcher_UrgentUpdatesAreNotHeldBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recordingApply{}
		b := newAllocUpdateBatcher(50*time.Millisecond, rec.apply)
		start := time.Now()
		_, err := b.submit([]*structs.Allocation{{ID: "first"}}, false)
		require.NoError(t, err)

		// Within the window: a plain update waits for it, and an urgent
		// one that joins its batch takes the batch along at once.
		var mu sync.Mutex
		var wg sync.WaitGroup
		idx, errs := map[string]uint64{}, map[string]error{}
		time.Sleep(10 * time.Millisecond)
		submitAsync(b, "plain", idx, errs, &mu, &wg)
		synctest.Wait()
		require.Len(t, rec.got(), 1, "a plain update keeps the window")
		got, err := b.submit([]*structs.Allocation{{ID: "healthy"}}, true)
		require.NoError(t, err)
		wg.Wait()
		require.Equal(t, 10*time.Millisecond, time.Since(start), "the urgent update waited for no window")
		require.Equal(t, [][]string{{"first"}, {"plain", "healthy"}}, rec.got())
		require.Equal(t, uint64(102), got)
		require.Equal(t, uint64(102), idx["plain"])

		// Right after that apply, an urgent update opens its own batch at
		// once; nothing is applied twice and no stray flush comes later.
		got, err = b.submit([]*structs.Allocation{{ID: "failed"}}, true)
		require.NoError(t, err)
		require.Equal(t, uint64(103), got)
		require.Equal(t, 10*time.Millisecond, time.Since(start))
		time.Sleep(time.Second)
		require.Len(t, rec.got(), 3)
	})
}

func TestAllocUpdateBatcher_UrgentUpdateDuringAnApplyGoesRightAfterIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recordingApply{hold: make(chan struct{})}
		b := newAllocUpdateBatcher(50*time.Millisecond, rec.apply)
		var mu sync.Mutex
		var wg sync.WaitGroup
		idx, errs := map[string]uint64{}, map[string]error{}
		submitAsync(b, "first", idx, errs, &mu, &wg)
		synctest.Wait() // the first batch is applying (held)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := b.submit([]*structs.Allocation{{ID: "healthy"}}, true)
			require.NoError(t, err)
		}()
		synctest.Wait()
		start := time.Now()
		rec.hold <- struct{}{} // finish the first apply
		rec.hold <- struct{}{} // the next follows at once, inside the window
		wg.Wait()
		require.Zero(t, time.Since(start))
		require.Equal(t, [][]string{{"first"}, {"healthy"}}, rec.got())
	})
}

func TestDecisiveUpdate(t *testing.T) {
	yes, no := true, false
	health := func(h *bool) *structs.AllocDeploymentStatus { return &structs.AllocDeploymentStatus{Healthy: h} }
	alloc := func(status string, ds *structs.AllocDeploymentStatus) *structs.Allocation {
		return &structs.Allocation{ID: "a", ClientStatus: status, DeploymentStatus: ds}
	}
	run, done, failed := structs.AllocClientStatusRunning, structs.AllocClientStatusComplete, structs.AllocClientStatusFailed
	for name, tc := range map[string]struct {
		update, stored *structs.Allocation
		want           bool
	}{
		"running, no verdict":                    {alloc(run, nil), alloc(structs.AllocClientStatusPending, nil), false},
		"running, verdict still undecided":       {alloc(run, health(nil)), alloc(run, nil), false},
		"first healthy verdict":                  {alloc(run, health(&yes)), alloc(run, nil), true},
		"first unhealthy verdict":                {alloc(run, health(&no)), alloc(run, health(nil)), true},
		"the same verdict again":                 {alloc(run, health(&yes)), alloc(run, health(&yes)), false},
		"a changed verdict":                      {alloc(run, health(&no)), alloc(run, health(&yes)), true},
		"failed":                                 {alloc(failed, health(&yes)), alloc(run, health(&yes)), true},
		"complete again":                         {alloc(done, nil), alloc(done, nil), false},
		"an allocation the server does not know": {alloc(run, health(&yes)), nil, true},
		"unknown, running":                       {alloc(run, nil), nil, false},
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, decisiveUpdate(tc.update, tc.stored))
		})
	}
}
