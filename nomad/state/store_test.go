package state

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// jobQuery is a blocking query for job "web" whose index is the jobs
// table's. It counts its runs and closes started after the first.
func jobQuery(calls *int, started chan struct{}) QueryFn {
	return func(ws memdb.WatchSet, snap *Snapshot) (any, uint64, error) {
		*calls++
		if *calls == 1 && started != nil {
			close(started)
		}
		j, err := snap.JobByID(ws, "", "web")
		return j, snap.Index(TableJobs), err
	}
}

func TestBlockingQuery(t *testing.T) {
	t.Run("minIndex 0 answers at once", func(t *testing.T) {
		s := NewStateStore()
		mustJob(t, s, 5, testJob("web"))
		calls := 0
		res, idx, err := s.BlockingQuery(context.Background(), 0, jobQuery(&calls, nil))
		require.NoError(t, err)
		require.Equal(t, uint64(5), idx)
		require.NotNil(t, res)
		require.Equal(t, 1, calls)
	})
	t.Run("minIndex above latest answers at once", func(t *testing.T) {
		s := NewStateStore()
		mustJob(t, s, 5, testJob("web"))
		calls := 0
		_, idx, err := s.BlockingQuery(context.Background(), 100, jobQuery(&calls, nil))
		require.NoError(t, err)
		require.Equal(t, uint64(5), idx)
		require.Equal(t, 1, calls)
	})
	t.Run("empty store never answers index 0", func(t *testing.T) {
		s := NewStateStore()
		calls := 0
		_, idx, err := s.BlockingQuery(context.Background(), 0, jobQuery(&calls, nil))
		require.NoError(t, err)
		require.Equal(t, uint64(1), idx)
	})
	t.Run("wakes on a write", func(t *testing.T) {
		s := NewStateStore()
		mustJob(t, s, 5, testJob("web"))
		mustJob(t, s, 6, testJob("other"))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		started := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			<-started
			j := testJob("web")
			j.Priority = 99
			assert.NoError(t, s.UpsertJob(7, nil, j))
		}()
		calls := 0
		res, idx, err := s.BlockingQuery(ctx, 6, jobQuery(&calls, started))
		<-done
		require.NoError(t, err)
		require.Equal(t, uint64(7), idx)
		require.Equal(t, 99, res.(*structs.Job).Priority)
		require.NoError(t, ctx.Err(), "answered by the write, not the deadline")
	})
	t.Run("returns the last result when ctx ends", func(t *testing.T) {
		s := NewStateStore()
		mustJob(t, s, 5, testJob("web"))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		calls := 0
		res, idx, err := s.BlockingQuery(ctx, 5, jobQuery(&calls, nil))
		require.NoError(t, err)
		require.Equal(t, uint64(5), idx)
		require.NotNil(t, res)
		require.Equal(t, 1, calls)
	})
	t.Run("wakes on restore", func(t *testing.T) {
		s := NewStateStore()
		mustJob(t, s, 5, testJob("web"))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		started := make(chan struct{})
		go func() {
			<-started
			r := s.Restore()
			j := testJob("web")
			j.CreateIndex, j.ModifyIndex = 9, 9
			assert.NoError(t, r.JobRestore(j))
			assert.NoError(t, r.IndexRestore(TableJobs, 9))
			assert.NoError(t, r.Commit())
		}()
		calls := 0
		_, idx, err := s.BlockingQuery(ctx, 5, jobQuery(&calls, started))
		require.NoError(t, err)
		require.Equal(t, uint64(9), idx)
		require.NoError(t, ctx.Err())
	})
}

// fired reports whether any channel of ws is closed, without blocking.
func fired(ws memdb.WatchSet) bool {
	for ch := range ws {
		select {
		case <-ch:
			return true
		default:
		}
	}
	return false
}

func TestWatchSetGranularity(t *testing.T) {
	s := NewStateStore()
	job := mustJob(t, s, 1, testJob("web"))
	n := testNode()
	require.NoError(t, s.UpsertNode(2, n))

	jobWS := memdb.NewWatchSet()
	_, err := s.JobByID(jobWS, "", "web")
	require.NoError(t, err)
	nodeAllocsWS := memdb.NewWatchSet()
	_, err = s.AllocsByNode(nodeAllocsWS, n.ID)
	require.NoError(t, err)

	require.NoError(t, s.UpsertNode(3, n))
	require.False(t, fired(jobWS), "a node write must not wake job readers")
	require.False(t, fired(nodeAllocsWS))

	require.NoError(t, s.UpsertAllocs(4, []*structs.Allocation{testAlloc(job, n.ID)}))
	require.True(t, fired(nodeAllocsWS))
	require.True(t, fired(jobWS), "status went running")
}

func TestSnapshotIsolation(t *testing.T) {
	s := NewStateStore()
	mustJob(t, s, 1, testJob("web"))
	snap := s.Snapshot()
	require.NoError(t, s.DeleteJob(2, "", "web"))
	j, err := snap.JobByID(nil, "", "web")
	require.NoError(t, err)
	require.NotNil(t, j, "snapshot keeps its view")
	require.Equal(t, uint64(1), snap.LatestIndex())
	require.Equal(t, uint64(2), s.LatestIndex())
	j, _ = s.JobByID(nil, "", "web")
	require.Nil(t, j)
}

func TestIndexesMonotonic(t *testing.T) {
	s := NewStateStore()
	require.Zero(t, s.LatestIndex())
	mustJob(t, s, 10, testJob("web"))
	require.Equal(t, uint64(10), s.LatestIndex())
	n := testNode()
	require.NoError(t, s.UpsertNode(11, n))
	require.Equal(t, uint64(10), s.Index(TableJobs))
	require.Equal(t, uint64(11), s.Index(TableNodes))
	require.Equal(t, uint64(11), s.LatestIndex())
	entries, err := s.Indexes()
	require.NoError(t, err)
	require.Equal(t, []*IndexEntry{
		{TableJobVersions, 10}, {TableJobs, 10}, {TableNodes, 11},
	}, entries)
}

func TestRestore(t *testing.T) {
	s := NewStateStore()
	mustJob(t, s, 1, testJob("stale"))
	abandon := s.AbandonCh()

	job := testJob("web")
	job.CreateIndex, job.ModifyIndex, job.JobModifyIndex = 4, 4, 4
	a := testAlloc(job, "n1")
	r := s.Restore()
	defer r.Abort()
	require.NoError(t, r.AllocRestore(a)) // before its version
	require.NoError(t, r.JobRestore(job))
	require.NoError(t, r.JobVersionRestore(job))
	require.NoError(t, r.IndexRestore(TableJobs, 4))
	require.NoError(t, r.IndexRestore(TableAllocs, 5))

	got, _ := s.JobByID(nil, "", "stale")
	require.NotNil(t, got, "old contents until commit")
	require.NoError(t, r.Commit())

	select {
	case <-abandon:
	default:
		t.Fatal("AbandonCh not closed by Commit")
	}
	require.NotEqual(t, abandon, s.AbandonCh())
	got, _ = s.JobByID(nil, "", "stale")
	require.Nil(t, got)
	require.Same(t, job, mustAlloc(t, s, a.ID).Job)
	require.Equal(t, uint64(5), s.LatestIndex())
}
