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

func authMethod(name, typ string, def bool) *structs.ACLAuthMethod {
	return &structs.ACLAuthMethod{Name: name, Type: typ, TokenLocality: "local", MaxTokenTTL: time.Hour, Default: def,
		CreateTime: time.Unix(10, 0).UTC(), ModifyTime: time.Unix(10, 0).UTC(),
		Config: &structs.ACLAuthMethodConfig{OIDCDiscoveryURL: "https://idp", OIDCClientID: "id",
			ClaimMappings: map[string]string{"a": "b"}, ExpirationLeeway: time.Second,
			OIDCClientAssertion: &structs.OIDCClientAssertion{KeySource: "private_key",
				PrivateKey: &structs.OIDCClientAssertionKey{KeyID: "k1"}}}}
}

func TestFSM_ACLAuthMethodsOneDefaultPerType(t *testing.T) {
	f := newFSM()
	mustApply(t, f, 2, structs.ACLAuthMethodUpsertRequestType, &structs.ACLAuthMethodUpsertRequest{
		AuthMethods: []*structs.ACLAuthMethod{authMethod("a", "OIDC", true), authMethod("j", "JWT", true)}})
	resp := apply(t, f, 3, structs.ACLAuthMethodUpsertRequestType, &structs.ACLAuthMethodUpsertRequest{
		AuthMethods: []*structs.ACLAuthMethod{authMethod("b", "OIDC", false), authMethod("c", "OIDC", true)}})
	err, _ := resp.(error)
	require.ErrorIs(t, err, state.ErrConflict)
	got, _ := f.State().ACLAuthMethods(nil)
	require.Len(t, got, 2, "nothing of the refused entry written")

	// Re-upserting the default itself is fine and keeps its creation.
	upd := authMethod("a", "OIDC", true)
	upd.CreateTime = time.Unix(99, 0).UTC()
	mustApply(t, f, 4, structs.ACLAuthMethodUpsertRequestType, &structs.ACLAuthMethodUpsertRequest{AuthMethods: []*structs.ACLAuthMethod{upd}})
	m, _ := f.State().ACLAuthMethodByName(nil, "a")
	require.Equal(t, uint64(2), m.CreateIndex)
	require.Equal(t, uint64(4), m.ModifyIndex)
	require.Equal(t, time.Unix(10, 0).UTC(), m.CreateTime)
}

func TestFSM_ACLBindingRulesFollowTheirAuthMethod(t *testing.T) {
	f := newFSM()
	resp := apply(t, f, 2, structs.ACLBindingRuleUpsertRequestType, &structs.ACLBindingRuleUpsertRequest{
		Rules: []*structs.ACLBindingRule{{ID: "r1", AuthMethod: "a", BindType: "management"}}})
	err, _ := resp.(error)
	require.ErrorIs(t, err, state.ErrConflict, "a rule needs its auth method")

	mustApply(t, f, 3, structs.ACLAuthMethodUpsertRequestType, &structs.ACLAuthMethodUpsertRequest{
		AuthMethods: []*structs.ACLAuthMethod{authMethod("a", "OIDC", false), authMethod("b", "OIDC", false)}})
	mustApply(t, f, 4, structs.ACLBindingRuleUpsertRequestType, &structs.ACLBindingRuleUpsertRequest{
		Rules: []*structs.ACLBindingRule{{ID: "r1", AuthMethod: "a", BindType: "management"},
			{ID: "r2", AuthMethod: "b", BindType: "role", BindName: "ops"}}})
	mustApply(t, f, 5, structs.ACLAuthMethodDeleteRequestType, &structs.ACLAuthMethodDeleteRequest{Names: []string{"a"}})
	rules, _ := f.State().ACLBindingRules(nil)
	require.Len(t, rules, 1)
	require.Equal(t, "r2", rules[0].ID)
	require.Equal(t, uint64(5), f.State().Index(state.TableACLBindingRules))

	resp = apply(t, f, 6, structs.ACLBindingRuleDeleteRequestType, &structs.ACLBindingRuleDeleteRequest{IDs: []string{"r2", "r1"}})
	err, _ = resp.(error)
	require.ErrorIs(t, err, state.ErrNotFound)
	rules, _ = f.State().ACLBindingRules(nil)
	require.Len(t, rules, 1, "a delete naming a missing rule removes nothing")
}

func TestSnapshotRoundTrip_ACLAuth(t *testing.T) {
	src := newFSM()
	mustApply(t, src, 2, structs.ACLAuthMethodUpsertRequestType, &structs.ACLAuthMethodUpsertRequest{
		AuthMethods: []*structs.ACLAuthMethod{authMethod("a", "OIDC", true)}})
	mustApply(t, src, 3, structs.ACLBindingRuleUpsertRequestType, &structs.ACLBindingRuleUpsertRequest{
		Rules: []*structs.ACLBindingRule{{ID: "r1", AuthMethod: "a", Selector: "x in list.groups", BindType: "role", BindName: "ops",
			CreateTime: time.Unix(20, 0).UTC(), ModifyTime: time.Unix(20, 0).UTC()}}})

	snap, err := src.Snapshot()
	require.NoError(t, err)
	sink := &memSink{}
	require.NoError(t, snap.Persist(sink))
	dst := newFSM()
	require.NoError(t, dst.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))))

	wantM, _ := src.State().ACLAuthMethods(nil)
	gotM, _ := dst.State().ACLAuthMethods(nil)
	require.Len(t, gotM, 1)
	require.Equal(t, wantM, gotM)
	wantR, _ := src.State().ACLBindingRules(nil)
	gotR, _ := dst.State().ACLBindingRules(nil)
	require.Len(t, gotR, 1)
	require.Equal(t, wantR, gotR)
	require.Equal(t, src.State().Index(state.TableACLBindingRules), dst.State().Index(state.TableACLBindingRules))
}
