package nomad

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/structs"
)

// nodeWriters are the callers of the node-write tests: refused ones hold
// everything but node:write.
func nodeWriters(t *testing.T) (map[string]*acl.ACL, *acl.ACL) {
	return map[string]*acl.ACL{
		"node read":       policyACL(t, `node { policy = "read" }`, `namespace "*" { policy = "write" }`),
		"operator, agent": policyACL(t, `operator { policy = "write" }`, `agent { policy = "write" }`),
	}, policyACL(t, `node { policy = "write" }`)
}

func TestNodeWrites_NeedNodeWrite(t *testing.T) {
	srv := queryTestServer(t)
	elig, drain, drainReq := seedNode(t, srv), seedNode(t, srv), seedNode(t, srv)
	node := func(id string) *structs.Node {
		n, err := srv.State().NodeByID(nil, id)
		require.NoError(t, err)
		return n
	}
	refused, allowed := nodeWriters(t)
	testWrites(t, srv, refused, allowed, []writeCase{
		{name: "eligibility", run: func(a *acl.ACL) error {
			return ignore3(srv.NodeUpdateEligibility(a, elig.ID, structs.NodeSchedulingIneligible))
		}, done: func(t *testing.T) {
			require.Equal(t, structs.NodeSchedulingIneligible, node(elig.ID).SchedulingEligibility)
		}},
		{name: "drain", run: func(a *acl.ACL) error {
			return ignore3(srv.NodeUpdateDrain(a, drain.ID, true, false))
		}, done: func(t *testing.T) { require.True(t, node(drain.ID).Drain) }},
		{name: "drain request", run: func(a *acl.ACL) error {
			return ignore3(srv.NodeDrain(a, &structs.NodeUpdateDrainRequest{NodeID: drainReq.ID, Drain: true}))
		}, done: func(t *testing.T) { require.True(t, node(drainReq.ID).Drain) }},
	})
	// A refused write learns nothing about the node either.
	_, _, err := srv.NodeUpdateEligibility(refused["node read"], "no-such-node", structs.NodeSchedulingEligible)
	require.ErrorIs(t, err, structs.ErrForbidden)
}
