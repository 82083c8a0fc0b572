package nomad

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/mock"
	"github.com/drover-project/drover/nomad/state"
)

// jobIndexQuery reads job "web" and answers the jobs table's index.
func jobIndexQuery(calls *int) queryFn {
	return func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		*calls++
		_, err := snap.JobByID(ws, "default", "web")
		return snap.Index(state.TableJobs), err
	}
}

// The loop runs in a synctest bubble: its timeout is on the fake clock, and
// the store (created in the bubble) wakes it when a write lands.
func TestRunBlockingQuery(t *testing.T) {
	newStore := func(t *testing.T) *state.StateStore {
		st := state.NewStateStore()
		require.NoError(t, st.UpsertJob(5, nil, mock.Job("web")))
		return st
	}

	t.Run("a write that raises the index answers the query", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			st, calls := newStore(t), 0
			start := time.Now()
			go func() {
				time.Sleep(time.Second)
				_ = st.UpsertJob(6, nil, mock.Job("web"))
			}()
			index, err := runBlockingQuery(t.Context(), st, &QueryOptions{MinIndex: 5, MaxWait: 10 * time.Second}, jobIndexQuery(&calls))
			require.NoError(t, err)
			require.Equal(t, uint64(6), index)
			require.Equal(t, time.Second, time.Since(start), "answered when the write landed")
			require.Equal(t, 2, calls)
		})
	})

	t.Run("without a write it answers after the wait plus at most wait/16", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			st, calls := newStore(t), 0
			start := time.Now()
			index, err := runBlockingQuery(t.Context(), st, &QueryOptions{MinIndex: 5, MaxWait: 16 * time.Second}, jobIndexQuery(&calls))
			require.NoError(t, err, "a timeout answers with the current data")
			require.Equal(t, uint64(5), index)
			waited := time.Since(start)
			require.GreaterOrEqual(t, waited, 16*time.Second)
			require.LessOrEqual(t, waited, 17*time.Second)
			require.Equal(t, 1, calls)
		})
	})

	t.Run("the wait is capped at MaxQueryWait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			st, calls := newStore(t), 0
			start := time.Now()
			_, err := runBlockingQuery(t.Context(), st, &QueryOptions{MinIndex: 5, MaxWait: time.Hour}, jobIndexQuery(&calls))
			require.NoError(t, err)
			require.LessOrEqual(t, time.Since(start), MaxQueryWait+MaxQueryWait/16)
			require.GreaterOrEqual(t, time.Since(start), MaxQueryWait)
		})
	})

	t.Run("index 0, or above the store's latest, answers at once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			st := newStore(t)
			for _, minIndex := range []uint64{0, 1_000} {
				calls, start := 0, time.Now()
				index, err := runBlockingQuery(t.Context(), st, &QueryOptions{MinIndex: minIndex, MaxWait: time.Minute}, jobIndexQuery(&calls))
				require.NoError(t, err)
				require.Equal(t, uint64(5), index)
				require.Zero(t, time.Since(start), "min index %d", minIndex)
			}
		})
	})

	t.Run("an index of 0 from the query is reported as 1", func(t *testing.T) {
		st := state.NewStateStore()
		index, err := runBlockingQuery(t.Context(), st, &QueryOptions{}, func(memdb.WatchSet, *state.Snapshot) (uint64, error) { return 0, nil })
		require.NoError(t, err)
		require.Equal(t, uint64(1), index)
	})

	t.Run("a caller that goes away ends the wait at once", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			st, calls := newStore(t), 0
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(time.Second, cancel)
			start := time.Now()
			index, err := runBlockingQuery(ctx, st, &QueryOptions{MinIndex: 5, MaxWait: time.Minute}, jobIndexQuery(&calls))
			require.NoError(t, err, "the store answers what it has; nobody reads it")
			require.Equal(t, uint64(5), index)
			require.Equal(t, time.Second, time.Since(start), "not after the minute")
		})
	})
}
