package agent

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad"
)

func oidcMethod(name string, def bool) *api.ACLAuthMethod {
	return &api.ACLAuthMethod{
		Name: name, Type: api.ACLAuthMethodTypeOIDC, TokenLocality: api.ACLAuthMethodTokenLocalityLocal,
		MaxTokenTTL: 15 * time.Minute, Default: def,
		Config: &api.ACLAuthMethodConfig{BoundAudiences: []string{"aud"}, OIDCDiscoveryURL: "https://idp.example.com",
			OIDCClientID: "client-id", ClaimMappings: map[string]string{"email": "email"}, ExpirationLeeway: 3 * time.Second},
	}
}

func TestContractACLAuthMethods_CRUD(t *testing.T) {
	ta := newACLTestAgent(t)
	c := ta.client

	created, wm, err := c.ACLAuthMethods().Create(oidcMethod("corp", true), nil)
	require.NoError(t, err)
	require.Positive(t, wm.LastIndex)
	require.Equal(t, nomad.DefaultTokenNameFormat, created.TokenNameFormat)
	require.False(t, created.CreateTime.IsZero())

	got, _, err := c.ACLAuthMethods().Get("corp", nil)
	require.NoError(t, err)
	require.Equal(t, 15*time.Minute, got.MaxTokenTTL)
	require.Equal(t, "https://idp.example.com", got.Config.OIDCDiscoveryURL)
	require.Equal(t, map[string]string{"email": "email"}, got.Config.ClaimMappings)
	require.Equal(t, 3*time.Second, got.Config.ExpirationLeeway)

	// A second default OIDC method is refused; a default JWT method is not.
	_, _, err = c.ACLAuthMethods().Create(oidcMethod("other", true), nil)
	requireStatus(t, err, http.StatusBadRequest, "default method for type OIDC already exists: corp")
	jwtm := &api.ACLAuthMethod{Name: "ci", Type: api.ACLAuthMethodTypeJWT, TokenLocality: "global",
		MaxTokenTTL: time.Hour, Default: true, Config: &api.ACLAuthMethodConfig{JWKSURL: "https://ci.example.com/jwks"}}
	_, _, err = c.ACLAuthMethods().Create(jwtm, nil)
	require.NoError(t, err)
	_, _, err = c.ACLAuthMethods().Create(oidcMethod("corp", false), nil)
	requireStatus(t, err, http.StatusBadRequest, "ACL auth method with name corp already exists")

	// Update keeps the creation time.
	upd := oidcMethod("corp", true)
	upd.TokenLocality = api.ACLAuthMethodTokenLocalityGlobal
	updated, _, err := c.ACLAuthMethods().Update(upd, nil)
	require.NoError(t, err)
	require.Equal(t, "global", updated.TokenLocality)
	require.Equal(t, created.CreateIndex, updated.CreateIndex)
	require.True(t, created.CreateTime.Equal(updated.CreateTime))
	_, _, err = c.ACLAuthMethods().Update(oidcMethod("nope", false), nil)
	requireStatus(t, err, http.StatusNotFound, "ACL auth method nope not found")

	list, qm, err := c.ACLAuthMethods().List(nil)
	require.NoError(t, err)
	require.Positive(t, qm.LastIndex)
	require.Len(t, list, 2)
	require.Equal(t, "ci", list[0].Name)
	require.Equal(t, "corp", list[1].Name)

	// Deleting a method deletes its binding rules.
	rule, _, err := c.ACLBindingRules().Create(&api.ACLBindingRule{AuthMethod: "corp", BindType: "management"}, nil)
	require.NoError(t, err)
	_, err = c.ACLAuthMethods().Delete("corp", nil)
	require.NoError(t, err)
	_, _, err = c.ACLAuthMethods().Get("corp", nil)
	requireStatus(t, err, http.StatusNotFound, "ACL auth-method not found")
	_, _, err = c.ACLBindingRules().Get(rule.ID, nil)
	requireStatus(t, err, http.StatusNotFound, "ACL binding rule not found")
	_, err = c.ACLAuthMethods().Delete("corp", nil)
	requireStatus(t, err, http.StatusNotFound, "corp")
}

func TestContractACLAuthMethods_BadInput(t *testing.T) {
	ta := newACLTestAgent(t)
	c := ta.client
	cases := []struct {
		name string
		edit func(m *api.ACLAuthMethod)
		want string
	}{
		{"bad name", func(m *api.ACLAuthMethod) { m.Name = "no spaces" }, "invalid name 'no spaces'"},
		{"bad type", func(m *api.ACLAuthMethod) { m.Type = "LDAP" }, "Type must be OIDC or JWT"},
		{"bad locality", func(m *api.ACLAuthMethod) { m.TokenLocality = "region" }, "TokenLocality must be local or global"},
		{"no ttl", func(m *api.ACLAuthMethod) { m.MaxTokenTTL = 0 }, "invalid MaxTokenTTL value"},
		{"ttl too long", func(m *api.ACLAuthMethod) { m.MaxTokenTTL = 48 * time.Hour }, "invalid MaxTokenTTL value '48h0m0s'"},
		{"no config", func(m *api.ACLAuthMethod) { m.Config = nil }, "missing Config"},
		{"no discovery url", func(m *api.ACLAuthMethod) { m.Config.OIDCDiscoveryURL = "" }, "Config.OIDCDiscoveryURL is required"},
		{"no client id", func(m *api.ACLAuthMethod) { m.Config.OIDCClientID = "" }, "Config.OIDCClientID is required"},
		{"jwt without keys", func(m *api.ACLAuthMethod) {
			m.Type = "JWT"
			m.Config = &api.ACLAuthMethodConfig{}
		}, "exactly one of Config.JWTValidationPubKeys"},
		{"jwt with two key sources", func(m *api.ACLAuthMethod) {
			m.Type = "JWT"
			m.Config = &api.ACLAuthMethodConfig{JWKSURL: "https://x", JWTValidationPubKeys: []string{"pem"}}
		}, "exactly one of Config.JWTValidationPubKeys"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := oidcMethod("m", false)
			tc.edit(m)
			_, _, err := c.ACLAuthMethods().Create(m, nil)
			requireStatus(t, err, http.StatusBadRequest, tc.want)
		})
	}
	list, _, err := c.ACLAuthMethods().List(nil)
	require.NoError(t, err)
	require.Empty(t, list, "nothing written")
}

func TestContractACLBindingRules_CRUDAndBadInput(t *testing.T) {
	ta := newACLTestAgent(t)
	c := ta.client
	_, _, err := c.ACLAuthMethods().Create(oidcMethod("corp", false), nil)
	require.NoError(t, err)

	in := &api.ACLBindingRule{Description: "eng", AuthMethod: "corp", Selector: "engineering in list.groups",
		BindType: "role", BindName: "eng-admin"}
	created, _, err := c.ACLBindingRules().Create(in, nil)
	require.NoError(t, err)
	require.NotEmpty(t, created.ID)
	require.Equal(t, in.Selector, created.Selector)

	upd := *created
	upd.BindType, upd.BindName = "policy", "readonly"
	updated, _, err := c.ACLBindingRules().Update(&upd, nil)
	require.NoError(t, err)
	require.Equal(t, "policy", updated.BindType)
	require.Equal(t, created.CreateIndex, updated.CreateIndex)
	require.Greater(t, updated.ModifyIndex, created.ModifyIndex)

	cases := []struct {
		name string
		r    api.ACLBindingRule
		want string
	}{
		{"no auth method", api.ACLBindingRule{BindType: "management"}, "AuthMethod is required"},
		{"unknown auth method", api.ACLBindingRule{AuthMethod: "nope", BindType: "management"}, "ACL auth method nope not found"},
		{"bad bind type", api.ACLBindingRule{AuthMethod: "corp", BindType: "user", BindName: "x"}, "invalid BindType 'user'"},
		{"role without name", api.ACLBindingRule{AuthMethod: "corp", BindType: "role"}, "BindName is required for bind type 'role'"},
		{"policy without name", api.ACLBindingRule{AuthMethod: "corp", BindType: "policy"}, "BindName is required for bind type 'policy'"},
		{"bad selector", api.ACLBindingRule{AuthMethod: "corp", BindType: "management", Selector: "groups ==="}, "Selector is invalid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := c.ACLBindingRules().Create(&tc.r, nil)
			requireStatus(t, err, http.StatusBadRequest, tc.want)
		})
	}
	_, _, err = c.ACLBindingRules().Update(&api.ACLBindingRule{ID: "00000000-0000-0000-0000-000000000000",
		AuthMethod: "corp", BindType: "management"}, nil)
	requireStatus(t, err, http.StatusNotFound, "ACL binding rule 00000000-0000-0000-0000-000000000000 not found")

	list, _, err := c.ACLBindingRules().List(nil)
	require.NoError(t, err)
	require.Len(t, list, 1, "only the valid rule was written")
	_, err = c.ACLBindingRules().Delete(created.ID, nil)
	require.NoError(t, err)
	list, _, err = c.ACLBindingRules().List(nil)
	require.NoError(t, err)
	require.Empty(t, list)
}

func TestContractACLAuth_NeedsManagement(t *testing.T) {
	ta := newACLTestAgent(t)
	_, _, err := ta.client.ACLAuthMethods().Create(oidcMethod("corp", false), nil)
	require.NoError(t, err)
	rule, _, err := ta.client.ACLBindingRules().Create(&api.ACLBindingRule{AuthMethod: "corp", BindType: "management"}, nil)
	require.NoError(t, err)
	reader := ta.clientWith(t, ta.tokenFor(t, "reader", `namespace "default" { policy = "read" }
node { policy = "read" }`).SecretID)
	anon := ta.clientWith(t, "")
	for name, c := range map[string]*api.Client{"client token": reader, "anonymous": anon} {
		t.Run(name, func(t *testing.T) {
			_, _, err := c.ACLAuthMethods().Create(oidcMethod("x", false), nil)
			requireStatus(t, err, http.StatusForbidden, "Permission denied")
			_, _, err = c.ACLAuthMethods().Get("corp", nil)
			requireStatus(t, err, http.StatusForbidden, "Permission denied")
			_, err = c.ACLAuthMethods().Delete("corp", nil)
			requireStatus(t, err, http.StatusForbidden, "Permission denied")
			_, _, err = c.ACLBindingRules().List(nil)
			requireStatus(t, err, http.StatusForbidden, "Permission denied")
			_, _, err = c.ACLBindingRules().Get(rule.ID, nil)
			requireStatus(t, err, http.StatusForbidden, "Permission denied")
			_, err = c.ACLBindingRules().Delete(rule.ID, nil)
			requireStatus(t, err, http.StatusForbidden, "Permission denied")
			_, _, err = c.ACLIdentity().CreateClientIntroductionToken(&api.ACLIdentityClientIntroductionTokenRequest{}, nil)
			requireStatus(t, err, http.StatusForbidden, "Permission denied")
			// Listing auth methods is public, as a login page needs it.
			list, _, err := c.ACLAuthMethods().List(nil)
			require.NoError(t, err)
			require.Len(t, list, 1)
		})
	}
	// Nothing was written by the refused requests.
	_, _, err = ta.client.ACLAuthMethods().Get("x", nil)
	requireStatus(t, err, http.StatusNotFound, "not found")
	_, _, err = ta.client.ACLBindingRules().Get(rule.ID, nil)
	require.NoError(t, err)
}

func TestContractACLIdentity_ClientIntroductionToken(t *testing.T) {
	ta := newACLTestAgent(t)
	// node:write is enough.
	writer := ta.clientWith(t, ta.tokenFor(t, "node-writer", `node { policy = "write" }`).SecretID)
	resp, _, err := writer.ACLIdentity().CreateClientIntroductionToken(&api.ACLIdentityClientIntroductionTokenRequest{
		NodeName: "node-7", NodePool: "edge", TTL: 10 * time.Minute}, nil)
	require.NoError(t, err)

	// Verifiable against the public JWKS, with the request's claims.
	hresp, err := http.Get("http://" + ta.HTTPAddr() + "/.well-known/jwks.json")
	require.NoError(t, err)
	var set jose.JSONWebKeySet
	require.NoError(t, json.NewDecoder(hresp.Body).Decode(&set))
	hresp.Body.Close()
	parsed, err := jwt.ParseSigned(resp.JWT, []jose.SignatureAlgorithm{jose.RS256})
	require.NoError(t, err)
	keys := set.Key(parsed.Headers[0].KeyID)
	require.Len(t, keys, 1)
	var claims nomad.ClientIntroductionClaims
	require.NoError(t, parsed.Claims(keys[0].Key, &claims))
	require.Equal(t, "node-7", claims.NodeName)
	require.Equal(t, "edge", claims.NodePool)
	require.Equal(t, "node-introduction:global:edge:node-7:default", claims.Subject)
	require.Equal(t, jwt.Audience{nomad.DefaultIdentityAudience}, claims.Audience)
	require.Equal(t, 10*time.Minute, claims.Expiry.Time().Sub(claims.IssuedAt.Time()))

	// Defaults: pool "default", the default TTL.
	resp, _, err = ta.client.ACLIdentity().CreateClientIntroductionToken(&api.ACLIdentityClientIntroductionTokenRequest{}, nil)
	require.NoError(t, err)
	parsed, err = jwt.ParseSigned(resp.JWT, []jose.SignatureAlgorithm{jose.RS256})
	require.NoError(t, err)
	require.NoError(t, parsed.Claims(keys[0].Key, &claims))
	require.Equal(t, "default", claims.NodePool)
	require.Equal(t, nomad.ClientIntroductionDefaultTTL, claims.Expiry.Time().Sub(claims.IssuedAt.Time()))

	_, _, err = ta.client.ACLIdentity().CreateClientIntroductionToken(&api.ACLIdentityClientIntroductionTokenRequest{TTL: time.Hour}, nil)
	requireStatus(t, err, http.StatusBadRequest, "TTL 1h0m0s exceeds the maximum of 30m0s")
	_, _, err = ta.client.ACLIdentity().CreateClientIntroductionToken(&api.ACLIdentityClientIntroductionTokenRequest{TTL: -time.Second}, nil)
	requireStatus(t, err, http.StatusBadRequest, "TTL must not be negative")
}
