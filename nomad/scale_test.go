package nomad

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/structs"
)

func TestJobScale_NeedsScaleOrSubmitJob(t *testing.T) {
	srv := queryTestServer(t)
	job := teamJob(t, srv, "web", nil)
	events := func() int {
		evs, err := srv.State().ScalingEventsByJob(nil, "team-a", job.ID)
		require.NoError(t, err)
		if evs == nil {
			return 0
		}
		return len(evs.ScalingEvents[job.TaskGroups[0].Name])
	}
	scale := func(a *acl.ACL, msg string) error {
		return ignore2(srv.JobScale(&JobScaleArgs{Namespace: "team-a", JobID: job.ID, Group: job.TaskGroups[0].Name, Message: msg, ACL: a}))
	}
	refused, allowed := teamJobWriters(t, acl.NamespaceCapabilityDispatchJob, acl.NamespaceCapabilityScaleJob)
	testWrites(t, srv, refused, allowed, []writeCase{
		{name: "scaling event", run: func(a *acl.ACL) error { return scale(a, "by scale-job") },
			done: func(t *testing.T) { require.Equal(t, 1, events()) }},
	})
	// submit-job also allows scaling, as in Nomad.
	require.NoError(t, scale(policyACL(t, `namespace "team-a" { capabilities = ["submit-job"] }`), "by submit-job"))
	require.Equal(t, 2, events())
	// A refused caller learns nothing about the job.
	err := ignore2(srv.JobScale(&JobScaleArgs{Namespace: "team-a", JobID: "nope", Group: "g", ACL: refused["read"]}))
	require.ErrorIs(t, err, structs.ErrForbidden)
}
