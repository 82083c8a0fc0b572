package nomad

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/structs"
)

func TestJobDispatch_NeedsDispatchJob(t *testing.T) {
	srv := queryTestServer(t)
	parent := teamJob(t, srv, "work", func(j *structs.Job) {
		j.ParameterizedJob = &structs.ParameterizedJobConfig{Payload: "optional"}
	})
	var child string
	refused, allowed := teamJobWriters(t, acl.NamespaceCapabilitySubmitJob, acl.NamespaceCapabilityDispatchJob)
	testWrites(t, srv, refused, allowed, []writeCase{
		{name: "dispatch", run: func(a *acl.ACL) error {
			reply, err := srv.JobDispatch(&JobDispatchArgs{Namespace: "team-a", JobID: parent.ID, ACL: a})
			if reply != nil {
				child = reply.DispatchedJobID
			}
			return err
		}, done: func(t *testing.T) {
			j, err := srv.State().JobByID(nil, "team-a", child)
			require.NoError(t, err)
			require.NotNil(t, j, "the child is registered")
			require.Equal(t, parent.ID, j.ParentID)
		}},
	})
}
