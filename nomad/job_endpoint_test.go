package nomad

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/acl"
)

func TestJobDeregister_NeedsSubmitJob(t *testing.T) {
	srv := queryTestServer(t)
	job := teamJob(t, srv, "web", nil)
	refused, allowed := teamJobWriters(t, acl.NamespaceCapabilityDispatchJob, acl.NamespaceCapabilitySubmitJob)
	testWrites(t, srv, refused, allowed, []writeCase{
		{name: "purge", run: func(a *acl.ACL) error {
			return ignore2(srv.JobDeregister("team-a", job.ID, JobDeregisterOptions{Purge: true, ACL: a}))
		}, done: func(t *testing.T) {
			j, err := srv.State().JobByID(nil, "team-a", job.ID)
			require.NoError(t, err)
			require.Nil(t, j, "the job is purged")
		}},
	})
}
