package nomad

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/structs"
)

func TestPeriodicForce_NeedsSubmitJob(t *testing.T) {
	srv := queryTestServer(t)
	job := teamJob(t, srv, "nightly", func(j *structs.Job) {
		j.Periodic = &structs.PeriodicConfig{Enabled: true, Spec: "0 0 1 1 *", SpecType: structs.PeriodicSpecCron}
	})
	var evalID string
	refused, allowed := teamJobWriters(t, acl.NamespaceCapabilityDispatchJob, acl.NamespaceCapabilitySubmitJob)
	testWrites(t, srv, refused, allowed, []writeCase{
		{name: "force", run: func(a *acl.ACL) error {
			reply, err := srv.PeriodicForce(a, "team-a", job.ID)
			if reply != nil {
				evalID = reply.EvalID
			}
			return err
		}, done: func(t *testing.T) {
			e, err := srv.State().EvalByID(nil, evalID)
			require.NoError(t, err)
			require.NotNil(t, e, "the launch's evaluation is stored")
		}},
	})
}
