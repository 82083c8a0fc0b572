package nomad

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/structs"
)

func TestJoinAndForceLeave_NeedAgentWrite(t *testing.T) {
	srv := queryTestServer(t)
	refused := map[string]*acl.ACL{
		"agent read": policyACL(t, `agent { policy = "read" }`, `operator { policy = "write" }`, `node { policy = "write" }`),
	}
	allowed := policyACL(t, `agent { policy = "write" }`)
	testWrites(t, srv, refused, allowed, []writeCase{
		// A name that is not a member is no error; nothing is written.
		{name: "force leave", keepsIndex: true, run: func(a *acl.ACL) error { return srv.ForceLeave(a, "no-such-server") }},
		{name: "join nothing", keepsIndex: true, run: func(a *acl.ACL) error { return ignore2(srv.Join(a, nil)) }},
	})
	// A permitted join reaches the cluster: an address that answers
	// nothing is its error, not a refusal.
	_, err := srv.Join(allowed, []string{"127.0.0.1:1"})
	require.Error(t, err)
	require.NotErrorIs(t, err, structs.ErrForbidden)
}
