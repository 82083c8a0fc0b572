package nomad

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/mock"
	"github.com/drover-project/drover/nomad/structs"
)

func TestSystemGC_NeedsManagement(t *testing.T) {
	srv := queryTestServer(t)
	// A stopped, dead batch job: collectable now.
	job := mock.Job("done")
	job.Type, job.Stop, job.Status = structs.JobTypeBatch, true, structs.JobStatusDead
	seedJob(t, srv, job)
	collected := 0
	refused, allowed := managementWriters(t)
	testWrites(t, srv, refused, allowed, []writeCase{
		{name: "collect", run: func(a *acl.ACL) error {
			var err error
			collected, err = srv.SystemGC(a)
			return err
		}},
	})
	require.Positive(t, collected, "the permitted collection collected the dead job")
}
