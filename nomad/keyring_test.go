package nomad

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/structs"
)

func TestKeyringWrites_NeedManagement(t *testing.T) {
	srv := queryTestServer(t)
	keys := func() []*structs.RootKey {
		ks, err := srv.State().RootKeys(nil)
		require.NoError(t, err)
		return ks
	}
	require.Len(t, keys(), 1)
	old := keys()[0].KeyID
	refused, allowed := managementWriters(t)
	testWrites(t, srv, refused, allowed, []writeCase{
		{name: "rotate", run: func(a *acl.ACL) error { return ignore3(srv.RotateRootKey(a)) },
			done: func(t *testing.T) { require.Len(t, keys(), 2) }},
		{name: "delete", run: func(a *acl.ACL) error { return ignore2(srv.DeleteRootKey(a, old)) },
			done: func(t *testing.T) {
				require.Len(t, keys(), 1)
				require.NotEqual(t, old, keys()[0].KeyID)
			}},
	})
}
