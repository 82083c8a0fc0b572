package nomad

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/structs"
)

// aclTestServer is queryTestServer with ACLs enabled.
func aclTestServer(t *testing.T) *Server {
	t.Helper()
	srv, err := NewServer(Config{NodeName: "acl-query", DataDir: t.TempDir(), RPCAddr: "127.0.0.1:0", BootstrapExpect: 1,
		NumSchedulers: 1, ACLEnabled: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Shutdown() })
	require.NoError(t, srv.waitForSigningKey(30*time.Second))
	return srv
}

func TestACLReads_AnswerTheCallerAboutItself(t *testing.T) {
	srv := aclTestServer(t)
	st := srv.State()
	require.NoError(t, st.UpsertACLPolicies(400, []*structs.ACLPolicy{
		{Name: "direct", Rules: `namespace "default" { policy = "read" }`},
		{Name: "via-role", Rules: `namespace "team-a" { policy = "read" }`},
		{Name: "other", Rules: `node { policy = "read" }`},
	}))
	require.NoError(t, st.UpsertACLRoles(401, []*structs.ACLRole{{ID: "role-1", Name: "readers", Policies: []*structs.ACLRolePolicyLink{{Name: "via-role"}}}}))
	mine := &structs.ACLToken{AccessorID: "acc-1", SecretID: "sec-1", Type: "client", Policies: []string{"direct"},
		Roles: []*structs.ACLTokenRoleLink{{ID: "role-1"}}}
	theirs := &structs.ACLToken{AccessorID: "acc-2", SecretID: "sec-2", Type: "client", Policies: []string{"other"}}
	require.NoError(t, st.UpsertACLTokens(402, []*structs.ACLToken{mine, theirs}))
	callerACL := policyACL(t, `namespace "default" { policy = "read" }`, `namespace "team-a" { policy = "read" }`)
	me := QueryOptions{ACL: callerACL, Identity: &Identity{Token: mine}}

	policies, _, err := srv.ACLPolicyList(t.Context(), me, false)
	require.NoError(t, err)
	var names []string
	for _, p := range policies {
		names = append(names, p.Name)
	}
	require.ElementsMatch(t, []string{"direct", "via-role"}, names, "its own policies, directly and through its role")
	_, _, err = srv.ACLPolicyGet(t.Context(), me, "other")
	require.ErrorIs(t, err, structs.ErrForbidden)
	all, _, err := srv.ACLPolicyList(t.Context(), QueryOptions{ACL: acl.ManagementACL()}, false)
	require.NoError(t, err)
	require.Len(t, all, 3)

	tok, meta, err := srv.ACLTokenGet(t.Context(), me, "acc-1")
	require.NoError(t, err)
	require.Equal(t, "acc-1", tok.AccessorID)
	require.Equal(t, uint64(402), meta.Index)
	_, _, err = srv.ACLTokenGet(t.Context(), me, "acc-2")
	require.ErrorIs(t, err, structs.ErrForbidden, "another token")
	_, _, err = srv.ACLTokenList(t.Context(), me)
	require.ErrorIs(t, err, structs.ErrForbidden, "listing tokens is management's")
	_, _, err = srv.ACLTokenSelf(t.Context(), QueryOptions{ACL: callerACL})
	require.ErrorIs(t, err, structs.ErrTokenNotFound, "anonymous has no token")

	roles, _, err := srv.ACLRoleList(t.Context(), QueryOptions{ACL: policyACL(t, `node { policy = "read" }`), Identity: &Identity{Token: theirs}})
	require.NoError(t, err)
	require.Empty(t, roles, "a token without roles sees none")
	_, _, err = srv.ACLRoleGet(t.Context(), me, "readers", true)
	require.NoError(t, err)
	_, _, err = srv.ACLRoleGet(t.Context(), me, "nope", false)
	require.ErrorIs(t, err, structs.ErrForbidden, "a missing role is a 403 but for management")
	_, _, err = srv.ACLRoleGet(t.Context(), QueryOptions{ACL: acl.ManagementACL()}, "nope", false)
	require.ErrorIs(t, err, structs.ErrNotFound)
}

func TestNamespaceList_OnlyNamespacesWithACapability(t *testing.T) {
	srv := queryTestServer(t)
	require.NoError(t, srv.State().UpsertNamespaces(500, []*structs.Namespace{{Name: "team-a"}, {Name: "team-b"}, {Name: "ops"}}))
	teams := policyACL(t, `namespace "team-*" { policy = "read" }`)
	nss, meta, err := srv.NamespaceList(t.Context(), QueryOptions{ACL: teams, Prefix: "team"})
	require.NoError(t, err)
	require.Len(t, nss, 2)
	require.Equal(t, uint64(500), meta.Index)
	_, _, err = srv.NamespaceGet(t.Context(), QueryOptions{ACL: teams}, "ops")
	require.ErrorIs(t, err, structs.ErrForbidden)
	ns, _, err := srv.NamespaceGet(t.Context(), QueryOptions{ACL: teams}, "team-b")
	require.NoError(t, err)
	require.Equal(t, "team-b", ns.Name)

	// With ACLs disabled the ACL objects' reads are refused.
	_, _, err = srv.ACLTokenList(t.Context(), QueryOptions{})
	require.ErrorIs(t, err, ErrACLDisabled)
}
