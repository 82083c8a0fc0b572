package state

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/drover-project/drover/nomad/structs"
)

// checkJobCounts recounts every job's allocations from the allocs table
// and fails when the derived job_counts rows disagree (or a job without
// allocations keeps a row).
func checkJobCounts(rt require.TestingT, s *StateStore) {
	txn := s.txn()
	all, err := list[*structs.Allocation](txn, nil, TableAllocs, indexID)
	require.NoError(rt, err)
	want := map[structs.NamespacedID]*jobCounts{}
	for _, a := range all {
		key := structs.NamespacedID{Namespace: nsOrDefault(a.Namespace), ID: a.JobID}
		if want[key] == nil {
			want[key] = &jobCounts{Namespace: key.Namespace, JobID: a.JobID, Incarnations: map[uint64]*incarnationCounts{}}
		}
		want[key].add(a, +1, 0)
	}
	rows, err := list[*jobCounts](txn, nil, TableJobCounts, indexID)
	require.NoError(rt, err)
	require.Len(rt, rows, len(want), "one counts row per job with allocations")
	for _, got := range rows {
		w := want[structs.NamespacedID{Namespace: got.Namespace, ID: got.JobID}]
		require.NotNil(rt, w, "row for job %s without allocations", got.JobID)
		require.Equal(rt, w.Total, got.Total, "total of %s", got.JobID)
		require.Equal(rt, w.Live, got.Live, "live of %s", got.JobID)
		for k, inc := range w.Incarnations {
			g := got.Incarnations[k]
			require.NotNil(rt, g, "incarnation %d of %s", k, got.JobID)
			for name, tg := range inc.Groups {
				require.Equal(rt, tg, g.Groups[name], "group %s of %s", name, got.JobID)
			}
		}
	}
}

func TestJobCounts_FollowWritesDeletesAndRestore(t *testing.T) {
	s := NewStateStore()
	job := mustJob(t, s, 1, testJob("web"))
	a1, a2 := testAlloc(job, "n1"), testAlloc(job, "n2")
	require.NoError(t, s.UpsertAllocs(2, []*structs.Allocation{a1, a2}))
	checkJobCounts(t, s)
	require.Equal(t, structs.JobStatusRunning, jobStatus(t, s, "web"))

	require.NoError(t, s.UpdateAllocsFromClient(3, []*structs.Allocation{
		{ID: a1.ID, ClientStatus: structs.AllocClientStatusRunning},
		{ID: a2.ID, ClientStatus: structs.AllocClientStatusComplete},
	}, 3))
	checkJobCounts(t, s)
	sum, err := s.JobSummaryByID(nil, "default", "web")
	require.NoError(t, err)
	require.Equal(t, structs.TaskGroupSummary{Running: 1, Complete: 1}, sum.Summary["web"])
	require.Equal(t, uint64(3), sum.ModifyIndex)

	require.NoError(t, s.UpdateAllocsFromClient(4, []*structs.Allocation{
		{ID: a1.ID, ClientStatus: structs.AllocClientStatusFailed},
	}, 4))
	require.Equal(t, structs.JobStatusPending, jobStatus(t, s, "web"), "no live allocation left")

	_, err = s.DeleteGC(5, &structs.GCRequest{Allocs: []string{a1.ID, a2.ID}})
	require.NoError(t, err)
	checkJobCounts(t, s)
	c, err := jobCountsByID(s.txn(), nil, "default", "web")
	require.NoError(t, err)
	if all, _ := s.Allocs(nil); len(all) == 0 {
		require.Nil(t, c, "a job without allocations has no counts row")
	}

	// A restore rebuilds the rows from the restored allocations.
	a3 := testAlloc(job, "n3")
	require.NoError(t, s.UpsertAllocs(6, []*structs.Allocation{a3}))
	r := NewStateStore()
	rs := r.Restore()
	require.NoError(t, rs.JobRestore(mustJobR(t, s, "web")))
	for _, a := range mustAllocs(t, s) {
		c := a.Copy()
		c.Job = nil
		require.NoError(t, rs.AllocRestore(c))
	}
	require.NoError(t, rs.Commit())
	checkJobCounts(t, r)
	sum, err = r.JobSummaryByID(nil, "default", "web")
	require.NoError(t, err)
	require.Equal(t, 1, sum.Summary["web"].Starting+sum.Summary["web"].Running)
}

func mustJobR(t *testing.T, s *StateStore, id string) *structs.Job {
	j, err := s.JobByID(nil, "default", id)
	require.NoError(t, err)
	require.NotNil(t, j)
	return j
}

func mustAllocs(t *testing.T, s *StateStore) []*structs.Allocation {
	all, err := s.Allocs(nil)
	require.NoError(t, err)
	return all
}

// rapidT adapts *rapid.T to require.TestingT.
type rapidT struct{ *rapid.T }

func (r rapidT) Errorf(format string, args ...any) { r.T.Fatalf(format, args...) }
