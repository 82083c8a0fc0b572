package nomad

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/structs"
)

// managementWriters are the callers of the management-only write tests:
// refused ones hold every other policy.
func managementWriters(t *testing.T) (map[string]*acl.ACL, *acl.ACL) {
	return map[string]*acl.ACL{
		"all but management": policyACL(t, `namespace "*" { policy = "write" }`, `node { policy = "write" }`,
			`operator { policy = "write" }`, `agent { policy = "write" }`, `node_pool "*" { policy = "write" }`),
		"read": policyACL(t, `namespace "default" { policy = "read" }`),
	}, acl.ManagementACL()
}

func TestACLObjectAndNamespaceWrites_NeedManagement(t *testing.T) {
	srv := aclTestServer(t)
	st := srv.State()
	var tokenID, roleID string
	refused, allowed := managementWriters(t)
	testWrites(t, srv, refused, allowed, []writeCase{
		{name: "policy upsert", run: func(a *acl.ACL) error {
			return ignore2(srv.UpsertACLPolicies(a, []*structs.ACLPolicy{{Name: "ops", Rules: `node { policy = "read" }`}}))
		}, done: func(t *testing.T) {
			p, err := st.ACLPolicyByName(nil, "ops")
			require.NoError(t, err)
			require.NotNil(t, p)
		}},
		{name: "token create", run: func(a *acl.ACL) error {
			tok, _, err := srv.UpsertACLToken(a, &structs.ACLToken{Name: "t", Type: structs.ACLTokenTypeClient, Policies: []string{"ops"}})
			if tok != nil {
				tokenID = tok.AccessorID
			}
			return err
		}},
		{name: "role create", run: func(a *acl.ACL) error {
			r, _, err := srv.UpsertACLRole(a, &structs.ACLRole{Name: "ops", Policies: []*structs.ACLRolePolicyLink{{Name: "ops"}}}, true)
			if r != nil {
				roleID = r.ID
			}
			return err
		}},
		{name: "role delete", run: func(a *acl.ACL) error { return ignore2(srv.DeleteACLRoles(a, []string{roleID})) },
			done: func(t *testing.T) { x, err := st.ACLRoleByID(nil, roleID); require.NoError(t, err); require.Nil(t, x) }},
		{name: "token delete", run: func(a *acl.ACL) error { return ignore2(srv.DeleteACLTokens(a, []string{tokenID})) },
			done: func(t *testing.T) {
				x, err := st.ACLTokenByAccessorID(nil, tokenID)
				require.NoError(t, err)
				require.Nil(t, x)
			}},
		{name: "policy delete", run: func(a *acl.ACL) error { return ignore2(srv.DeleteACLPolicies(a, []string{"ops"})) },
			done: func(t *testing.T) {
				x, err := st.ACLPolicyByName(nil, "ops")
				require.NoError(t, err)
				require.Nil(t, x)
			}},
		{name: "namespace upsert", run: func(a *acl.ACL) error {
			return ignore2(srv.UpsertNamespaces(a, []*structs.Namespace{{Name: "team-b"}}))
		}},
		{name: "namespace delete", run: func(a *acl.ACL) error { return ignore2(srv.DeleteNamespaces(a, []string{"team-b"})) },
			done: func(t *testing.T) {
				x, err := st.NamespaceByName(nil, "team-b")
				require.NoError(t, err)
				require.Nil(t, x)
			}},
	})
}

func TestCreateOneTimeToken_OnlyForTheCallersOwnToken(t *testing.T) {
	srv := aclTestServer(t)
	tok, _, err := srv.UpsertACLToken(nil, &structs.ACLToken{Name: "mgmt", Type: structs.ACLTokenTypeManagement})
	require.NoError(t, err)
	for _, id := range []*Identity{nil, {}, {Claims: &IdentityClaims{}}} {
		before := srv.State().LatestIndex()
		_, _, err := srv.CreateOneTimeToken(id)
		require.ErrorIs(t, err, structs.ErrForbidden, "a caller without an ACL token")
		require.Equal(t, before, srv.State().LatestIndex())
	}
	ott, _, err := srv.CreateOneTimeToken(&Identity{Token: tok})
	require.NoError(t, err)
	require.Equal(t, tok.AccessorID, ott.AccessorID)
}
