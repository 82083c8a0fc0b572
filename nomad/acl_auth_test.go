package nomad

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/structs"
)

func TestValidateAuthMethod(t *testing.T) {
	valid := func() *structs.ACLAuthMethod {
		return &structs.ACLAuthMethod{Name: "corp-sso", Type: "OIDC", TokenLocality: "global", MaxTokenTTL: time.Hour,
			Config: &structs.ACLAuthMethodConfig{OIDCDiscoveryURL: "https://idp", OIDCClientID: "cid"}}
	}
	cases := []struct {
		name string
		edit func(*structs.ACLAuthMethod)
		want string // "" for valid
	}{
		{"valid oidc", func(*structs.ACLAuthMethod) {}, ""},
		{"valid jwt with keys", func(m *structs.ACLAuthMethod) {
			m.Type, m.Config = "JWT", &structs.ACLAuthMethodConfig{JWTValidationPubKeys: []string{"pem"}}
		}, ""},
		{"valid jwt with discovery", func(m *structs.ACLAuthMethod) {
			m.Type, m.Config = "JWT", &structs.ACLAuthMethodConfig{OIDCDiscoveryURL: "https://idp"}
		}, ""},
		{"ttl at the lower bound", func(m *structs.ACLAuthMethod) { m.MaxTokenTTL = time.Minute }, ""},
		{"ttl at the upper bound", func(m *structs.ACLAuthMethod) { m.MaxTokenTTL = 24 * time.Hour }, ""},
		{"empty name", func(m *structs.ACLAuthMethod) { m.Name = "" }, "invalid name ''"},
		{"long name", func(m *structs.ACLAuthMethod) { m.Name = string(make([]byte, 129)) }, "invalid name"},
		{"lower-case type", func(m *structs.ACLAuthMethod) { m.Type = "oidc" }, "Type must be OIDC or JWT"},
		{"no locality", func(m *structs.ACLAuthMethod) { m.TokenLocality = "" }, "TokenLocality must be local or global"},
		{"ttl under a minute", func(m *structs.ACLAuthMethod) { m.MaxTokenTTL = 59 * time.Second }, "invalid MaxTokenTTL value '59s'"},
		{"ttl over a day", func(m *structs.ACLAuthMethod) { m.MaxTokenTTL = 25 * time.Hour }, "invalid MaxTokenTTL value '25h0m0s'"},
		{"no config", func(m *structs.ACLAuthMethod) { m.Config = nil }, "missing Config"},
		{"negative leeway", func(m *structs.ACLAuthMethod) { m.Config.ClockSkewLeeway = -time.Second }, "must not be negative"},
		{"oidc without client id", func(m *structs.ACLAuthMethod) { m.Config.OIDCClientID = "" }, "Config.OIDCClientID is required"},
		{"jwt with jwks and keys", func(m *structs.ACLAuthMethod) {
			m.Type, m.Config = "JWT", &structs.ACLAuthMethodConfig{JWKSURL: "https://x", OIDCDiscoveryURL: "https://idp"}
		}, "exactly one of"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := valid()
			tc.edit(m)
			err := ValidateAuthMethod(m)
			if tc.want == "" {
				require.NoError(t, err)
				require.Equal(t, DefaultTokenNameFormat, m.TokenNameFormat)
				return
			}
			require.ErrorContains(t, err, tc.want)
			require.ErrorIs(t, err, structs.ErrBadRequest)
		})
	}
}

func TestValidateBindingRule(t *testing.T) {
	cases := []struct {
		name string
		r    structs.ACLBindingRule
		want string
	}{
		{"role", structs.ACLBindingRule{AuthMethod: "a", BindType: "role", BindName: "ops"}, ""},
		{"policy with selector", structs.ACLBindingRule{AuthMethod: "a", BindType: "policy", BindName: "ro",
			Selector: `value.email == "a@b.c" and "eng" in list.groups`}, ""},
		{"management without name", structs.ACLBindingRule{AuthMethod: "a", BindType: "management"}, ""},
		{"no auth method", structs.ACLBindingRule{BindType: "management"}, "AuthMethod is required"},
		{"unknown bind type", structs.ACLBindingRule{AuthMethod: "a", BindType: "token"}, "invalid BindType 'token'"},
		{"role without name", structs.ACLBindingRule{AuthMethod: "a", BindType: "role"}, "BindName is required"},
		{"unbalanced selector", structs.ACLBindingRule{AuthMethod: "a", BindType: "management", Selector: "(a == b"}, "Selector is invalid"},
		{"long description", structs.ACLBindingRule{AuthMethod: "a", BindType: "management", Description: string(make([]byte, 257))}, "description longer than 256"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateBindingRule(&tc.r)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
			require.ErrorIs(t, err, structs.ErrBadRequest)
		})
	}
}

func TestAuthMethodAndBindingRuleWrites_NeedManagement(t *testing.T) {
	srv := aclTestServer(t)
	st := srv.State()
	method := &structs.ACLAuthMethod{Name: "corp-sso", Type: "OIDC", TokenLocality: "global", MaxTokenTTL: time.Hour,
		Config: &structs.ACLAuthMethodConfig{OIDCDiscoveryURL: "https://idp", OIDCClientID: "cid"}}
	var ruleID string
	refused, allowed := managementWriters(t)
	testWrites(t, srv, refused, allowed, []writeCase{
		{name: "auth method create", run: func(a *acl.ACL) error { return ignore3(srv.UpsertACLAuthMethod(a, method, true)) }},
		{name: "auth method update", run: func(a *acl.ACL) error {
			m := *method
			m.MaxTokenTTL = 2 * time.Hour
			return ignore3(srv.UpsertACLAuthMethod(a, &m, false))
		}, done: func(t *testing.T) {
			m, err := st.ACLAuthMethodByName(nil, method.Name)
			require.NoError(t, err)
			require.Equal(t, 2*time.Hour, m.MaxTokenTTL)
		}},
		{name: "binding rule create", run: func(a *acl.ACL) error {
			r, _, err := srv.UpsertACLBindingRule(a, &structs.ACLBindingRule{AuthMethod: method.Name, BindType: "management"}, true)
			if r != nil {
				ruleID = r.ID
			}
			return err
		}},
		{name: "binding rule delete", run: func(a *acl.ACL) error { return ignore2(srv.DeleteACLBindingRules(a, []string{ruleID})) },
			done: func(t *testing.T) {
				r, err := st.ACLBindingRuleByID(nil, ruleID)
				require.NoError(t, err)
				require.Nil(t, r)
			}},
		{name: "auth method delete", run: func(a *acl.ACL) error { return ignore2(srv.DeleteACLAuthMethods(a, []string{method.Name})) },
			done: func(t *testing.T) {
				m, err := st.ACLAuthMethodByName(nil, method.Name)
				require.NoError(t, err)
				require.Nil(t, m)
			}},
	})
}

func TestCreateClientIntroductionToken_NeedsNodeWrite(t *testing.T) {
	srv := queryTestServer(t)
	refused, allowed := nodeWriters(t)
	var tok string
	testWrites(t, srv, refused, allowed, []writeCase{
		{name: "introduction token", keepsIndex: true, run: func(a *acl.ACL) error {
			var err error
			tok, err = srv.CreateClientIntroductionToken(a, "node-1", "default", 0)
			return err
		}, done: func(t *testing.T) { require.NotEmpty(t, tok) }},
	})
}
