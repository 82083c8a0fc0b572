package state

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/mock"
	"github.com/drover-project/drover/nomad/structs"
)

// Fixtures shared with the other server packages' tests.
var (
	testJob        = mock.Job
	testNode       = mock.Node
	testAlloc      = mock.Alloc
	testEval       = mock.Eval
	testDeployment = mock.Deployment
)

// mustJob upserts job at index and returns the stored copy.
func mustJob(t *testing.T, s *StateStore, index uint64, job *structs.Job) *structs.Job {
	t.Helper()
	require.NoError(t, s.UpsertJob(index, nil, job))
	got, err := s.JobByID(nil, job.Namespace, job.ID)
	require.NoError(t, err)
	require.NotNil(t, got)
	return got
}

// mustAlloc returns the stored allocation id.
func mustAlloc(t *testing.T, s *StateStore, id string) *structs.Allocation {
	t.Helper()
	a, err := s.AllocByID(nil, id)
	require.NoError(t, err)
	require.NotNil(t, a, "alloc %s", id)
	return a
}

// ids returns the IDs of allocs, in order.
func allocIDs(allocs []*structs.Allocation) []string {
	out := []string{}
	for _, a := range allocs {
		out = append(out, a.ID)
	}
	return out
}

// jobStatus returns the stored status of job (default namespace, id).
func jobStatus(t *testing.T, s *StateStore, id string) string {
	t.Helper()
	j, err := s.JobByID(nil, "", id)
	require.NoError(t, err)
	require.NotNil(t, j)
	return j.Status
}
