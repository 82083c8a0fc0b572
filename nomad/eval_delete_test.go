package nomad

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/mock"
	"github.com/drover-project/drover/nomad/structs"
)

func TestDeleteEvals_NeedsManagement(t *testing.T) {
	srv := queryTestServer(t)
	cfg := structs.DefaultSchedulerConfiguration()
	cfg.PauseEvalBroker = true
	_, _, err := srv.SetSchedulerConfig(nil, cfg, false)
	require.NoError(t, err)
	require.Eventually(t, srv.broker.Paused, 10*time.Second, 10*time.Millisecond, "the leader pauses its broker")
	// An evaluation of a job that is gone: safe to delete.
	e := mock.Eval(mock.Job("gone"))
	applyOK(t, srv, structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{e}})
	refused, allowed := managementWriters(t)
	testWrites(t, srv, refused, allowed, []writeCase{
		{name: "delete", run: func(a *acl.ACL) error { return ignore2(srv.DeleteEvals(a, []string{e.ID})) },
			done: func(t *testing.T) {
				got, err := srv.State().EvalByID(nil, e.ID)
				require.NoError(t, err)
				require.Nil(t, got)
			}},
	})
}
