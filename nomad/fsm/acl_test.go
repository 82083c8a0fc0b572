package fsm

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

func TestFSM_ACLBootstrapOnceAndReset(t *testing.T) {
	f := newFSM()
	tok := func(id string) *structs.ACLToken {
		return &structs.ACLToken{AccessorID: id, SecretID: id + "-secret", Type: structs.ACLTokenTypeManagement}
	}
	mustApply(t, f, 5, structs.ACLTokenBootstrapRequestType, &structs.ACLTokenBootstrapRequest{Token: tok("a")})
	require.Equal(t, uint64(5), f.State().ACLBootstrapIndex())

	// A second bootstrap is refused with the index to reset with.
	resp := apply(t, f, 6, structs.ACLTokenBootstrapRequestType, &structs.ACLTokenBootstrapRequest{Token: tok("b")})
	var done *state.ErrBootstrapDone
	require.ErrorAs(t, resp.(error), &done)
	require.EqualError(t, done, "ACL bootstrap already done (reset index: 5)")
	got, err := f.State().ACLTokenByAccessorID(nil, "b")
	require.NoError(t, err)
	require.Nil(t, got, "nothing written")

	// With the reset index it succeeds and moves the bootstrap index.
	mustApply(t, f, 7, structs.ACLTokenBootstrapRequestType, &structs.ACLTokenBootstrapRequest{Token: tok("c"), ResetIndex: 5})
	require.Equal(t, uint64(7), f.State().ACLBootstrapIndex())
	got, err = f.State().ACLTokenBySecretID(nil, "c-secret")
	require.NoError(t, err)
	require.Equal(t, "c", got.AccessorID)
}

func TestFSM_NamespacesDefaultAndDelete(t *testing.T) {
	f := newFSM()
	nss, err := f.State().Namespaces(nil, "")
	require.NoError(t, err)
	require.Len(t, nss, 1)
	require.Equal(t, "default", nss[0].Name)

	resp := apply(t, f, 2, structs.NamespaceDeleteRequestType, &structs.NamespaceDeleteRequest{Names: []string{"default"}})
	require.ErrorIs(t, resp.(error), state.ErrDefaultNamespace)

	mustApply(t, f, 3, structs.NamespaceUpsertRequestType, &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{{Name: "a"}}})
	j := testJob("web")
	j.Namespace = "a"
	mustApply(t, f, 4, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: j})
	resp = apply(t, f, 5, structs.NamespaceDeleteRequestType, &structs.NamespaceDeleteRequest{Names: []string{"a"}})
	require.ErrorContains(t, resp.(error), `namespace "a" has non-terminal jobs`)
	mustApply(t, f, 6, structs.JobDeregisterRequestType, &structs.JobDeregisterRequest{Namespace: "a", JobID: "web", Purge: true})
	mustApply(t, f, 7, structs.NamespaceDeleteRequestType, &structs.NamespaceDeleteRequest{Names: []string{"a"}})
	ns, err := f.State().NamespaceByName(nil, "a")
	require.NoError(t, err)
	require.Nil(t, ns)
}

func TestFSM_ACLRolesUniqueNames(t *testing.T) {
	f := newFSM()
	mustApply(t, f, 2, structs.ACLRoleUpsertRequestType, &structs.ACLRoleUpsertRequest{Roles: []*structs.ACLRole{{ID: "r1", Name: "ops"}}})
	resp := apply(t, f, 3, structs.ACLRoleUpsertRequestType, &structs.ACLRoleUpsertRequest{Roles: []*structs.ACLRole{{ID: "r2", Name: "ops"}}})
	require.ErrorIs(t, resp.(error), state.ErrConflict)
	r, err := f.State().ACLRoleByName(nil, "ops")
	require.NoError(t, err)
	require.Equal(t, "r1", r.ID)
}

func TestSnapshotRoundTrip_ACL(t *testing.T) {
	src := newFSM()
	exp := time.Unix(1000, 0).UTC()
	mustApply(t, src, 2, structs.ACLPolicyUpsertRequestType, &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{
		{Name: "ro", Rules: `namespace "default" { policy = "read" }`, JobACL: &structs.JobACL{Namespace: "default", JobID: "web"}},
	}})
	mustApply(t, src, 3, structs.ACLTokenBootstrapRequestType, &structs.ACLTokenBootstrapRequest{Token: &structs.ACLToken{
		AccessorID: "acc", SecretID: "sec", Type: "management", CreateTime: time.Unix(5, 0).UTC()}})
	mustApply(t, src, 4, structs.ACLTokenUpsertRequestType, &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{{
		AccessorID: "acc2", SecretID: "sec2", Type: "client", Policies: []string{"ro"}, ExpirationTime: &exp,
		Roles: []*structs.ACLTokenRoleLink{{ID: "r1", Name: "ops"}}, CreateTime: time.Unix(6, 0).UTC()}}})
	mustApply(t, src, 5, structs.ACLRoleUpsertRequestType, &structs.ACLRoleUpsertRequest{Roles: []*structs.ACLRole{
		{ID: "r1", Name: "ops", Policies: []*structs.ACLRolePolicyLink{{Name: "ro"}}}}})
	mustApply(t, src, 6, structs.NamespaceUpsertRequestType, &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{
		{Name: "a", Description: "team a", Meta: map[string]string{"k": "v"}}}})
	mustApply(t, src, 7, structs.OneTimeTokenUpsertRequestType, &structs.OneTimeTokenUpsertRequest{Token: &structs.OneTimeToken{
		OneTimeSecretID: "ott", AccessorID: "acc2", ExpiresAt: time.Unix(2000, 0).UTC()}})

	snap, err := src.Snapshot()
	require.NoError(t, err)
	sink := &memSink{}
	require.NoError(t, snap.Persist(sink))
	dst := newFSM()
	require.NoError(t, dst.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))))

	for _, s := range []*state.StateStore{src.State(), dst.State()} {
		require.Equal(t, uint64(3), s.ACLBootstrapIndex())
	}
	wantP, _ := src.State().ACLPolicies(nil)
	gotP, _ := dst.State().ACLPolicies(nil)
	require.Equal(t, wantP, gotP)
	wantT, _ := src.State().ACLTokens(nil)
	gotT, _ := dst.State().ACLTokens(nil)
	require.Equal(t, wantT, gotT)
	require.Len(t, gotT, 2)
	wantR, _ := src.State().ACLRoles(nil)
	gotR, _ := dst.State().ACLRoles(nil)
	require.Equal(t, wantR, gotR)
	wantN, _ := src.State().Namespaces(nil, "")
	gotN, _ := dst.State().Namespaces(nil, "")
	require.Equal(t, wantN, gotN)
	require.Len(t, gotN, 2)
	ott, err := dst.State().OneTimeTokenBySecret(nil, "ott")
	require.NoError(t, err)
	require.Equal(t, "acc2", ott.AccessorID)
}
