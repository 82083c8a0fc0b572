package nomad

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/structs"
)

// The image actions check submit-job before they look at the job: a
// refused caller writes nothing and learns nothing; a permitted one gets
// the action's own answer (this job has no auto-updated image).
func TestJobImageActions_NeedSubmitJob(t *testing.T) {
	srv := queryTestServer(t)
	job := teamJob(t, srv, "web", nil)
	refused, allowed := teamJobWriters(t, acl.NamespaceCapabilityDispatchJob, acl.NamespaceCapabilitySubmitJob)
	for who, a := range refused {
		before := srv.State().LatestIndex()
		_, _, err := srv.JobImageClearBad(a, "team-a", job.ID, "sha256:00")
		require.ErrorIs(t, err, structs.ErrForbidden, who)
		_, _, err = srv.JobImageCheck(t.Context(), a, "team-a", job.ID)
		require.ErrorIs(t, err, structs.ErrForbidden, who)
		_, _, err = srv.JobImageApprove(a, "team-a", job.ID, "")
		require.ErrorIs(t, err, structs.ErrForbidden, who)
		require.Equal(t, before, srv.State().LatestIndex(), who)
	}
	_, _, err := srv.JobImageClearBad(allowed, "team-a", job.ID, "sha256:00")
	require.ErrorIs(t, err, structs.ErrBadRequest)
	_, _, err = srv.JobImageCheck(t.Context(), allowed, "team-a", job.ID)
	require.ErrorIs(t, err, structs.ErrBadRequest)
	_, _, err = srv.JobImageApprove(allowed, "team-a", job.ID, "")
	require.ErrorIs(t, err, structs.ErrBadRequest)
	require.ErrorContains(t, err, "no new image digest pending approval")
}
