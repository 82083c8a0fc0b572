package nomad

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/mock"
)

func TestNodePurgeAndEvaluate_NeedNodeWrite(t *testing.T) {
	srv := queryTestServer(t)
	purged, evaluated := seedNode(t, srv), seedNode(t, srv)
	seedJob(t, srv, mock.Job("web")) // what NodeEvaluate evaluates

	refused, allowed := nodeWriters(t)
	var evalIDs []string
	testWrites(t, srv, refused, allowed, []writeCase{
		{name: "purge", run: func(a *acl.ACL) error {
			return ignore3(srv.NodePurge(a, purged.ID))
		}, done: func(t *testing.T) {
			n, err := srv.State().NodeByID(nil, purged.ID)
			require.NoError(t, err)
			require.Nil(t, n, "the node is gone")
		}},
		{name: "evaluate", run: func(a *acl.ACL) error {
			ids, _, err := srv.NodeEvaluate(a, evaluated.ID)
			evalIDs = ids
			return err
		}, done: func(t *testing.T) {
			require.Len(t, evalIDs, 1)
			e, err := srv.State().EvalByID(nil, evalIDs[0])
			require.NoError(t, err)
			require.Equal(t, evaluated.ID, e.NodeID)
		}},
	})
}
