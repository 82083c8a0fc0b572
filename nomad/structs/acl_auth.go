package structs

import (
	"maps"
	"slices"
	"time"
)

// Auth method and binding rule raft messages (range 50-55).
const (
	ACLAuthMethodUpsertRequestType  MessageType = 50
	ACLAuthMethodDeleteRequestType  MessageType = 51
	ACLBindingRuleUpsertRequestType MessageType = 52
	ACLBindingRuleDeleteRequestType MessageType = 53
)

// Auth method types and token localities, Nomad's values.
const (
	ACLAuthMethodTypeOIDC            = "OIDC"
	ACLAuthMethodTypeJWT             = "JWT"
	ACLAuthMethodTokenLocalityLocal  = "local"
	ACLAuthMethodTokenLocalityGlobal = "global"
)

// Binding rule bind types, Nomad's values.
const (
	ACLBindingRuleBindTypeRole       = "role"
	ACLBindingRuleBindTypePolicy     = "policy"
	ACLBindingRuleBindTypeManagement = "management"
)

// ACLAuthMethod configures an external identity provider (OIDC or JWT)
// whose users may log in. Drover stores and validates auth methods; it
// does not perform the login flow itself.
type ACLAuthMethod struct {
	Name            string
	Type            string
	TokenLocality   string
	TokenNameFormat string
	MaxTokenTTL     time.Duration
	// Default marks the method used when a login names none; at most one
	// method of each type is the default.
	Default     bool
	Config      *ACLAuthMethodConfig
	CreateTime  time.Time
	ModifyTime  time.Time
	CreateIndex uint64
	ModifyIndex uint64
}

// ACLAuthMethodConfig is the provider-specific part of an auth method
// (the wire format's fields, stored as given).
type ACLAuthMethodConfig struct {
	JWTValidationPubKeys []string
	JWKSURL              string
	OIDCDiscoveryURL     string
	OIDCClientID         string
	OIDCClientSecret     string
	OIDCClientAssertion  *OIDCClientAssertion
	OIDCEnablePKCE       bool
	OIDCDisableUserInfo  bool
	OIDCScopes           []string
	BoundAudiences       []string
	BoundIssuer          []string
	AllowedRedirectURIs  []string
	DiscoveryCaPem       []string
	JWKSCACert           string
	SigningAlgs          []string
	ExpirationLeeway     time.Duration
	NotBeforeLeeway      time.Duration
	ClockSkewLeeway      time.Duration
	ClaimMappings        map[string]string
	ListClaimMappings    map[string]string
	VerboseLogging       bool
}

// OIDCClientAssertion configures a signed client assertion sent to the
// OIDC provider.
type OIDCClientAssertion struct {
	Audience     []string
	KeySource    string
	KeyAlgorithm string
	PrivateKey   *OIDCClientAssertionKey
	ExtraHeaders map[string]string
}

// OIDCClientAssertionKey is operator-supplied key material for a client
// assertion.
type OIDCClientAssertionKey struct {
	PemKey      string
	PemKeyFile  string
	KeyIDHeader string
	KeyID       string
	PemCert     string
	PemCertFile string
}

// Copy returns a deep copy of m.
func (m *ACLAuthMethod) Copy() *ACLAuthMethod {
	if m == nil {
		return nil
	}
	out := *m
	out.Config = m.Config.Copy()
	return &out
}

// Copy returns a deep copy of c.
func (c *ACLAuthMethodConfig) Copy() *ACLAuthMethodConfig {
	if c == nil {
		return nil
	}
	out := *c
	out.JWTValidationPubKeys = slices.Clone(c.JWTValidationPubKeys)
	out.OIDCScopes = slices.Clone(c.OIDCScopes)
	out.BoundAudiences = slices.Clone(c.BoundAudiences)
	out.BoundIssuer = slices.Clone(c.BoundIssuer)
	out.AllowedRedirectURIs = slices.Clone(c.AllowedRedirectURIs)
	out.DiscoveryCaPem = slices.Clone(c.DiscoveryCaPem)
	out.SigningAlgs = slices.Clone(c.SigningAlgs)
	out.ClaimMappings = maps.Clone(c.ClaimMappings)
	out.ListClaimMappings = maps.Clone(c.ListClaimMappings)
	if a := c.OIDCClientAssertion; a != nil {
		ca := *a
		ca.Audience = slices.Clone(a.Audience)
		ca.ExtraHeaders = maps.Clone(a.ExtraHeaders)
		if a.PrivateKey != nil {
			k := *a.PrivateKey
			ca.PrivateKey = &k
		}
		out.OIDCClientAssertion = &ca
	}
	return &out
}

// ACLBindingRule maps the claims of a login through an auth method to a
// role, a policy or a management token.
type ACLBindingRule struct {
	ID          string
	Description string
	AuthMethod  string
	// Selector is a go-bexpr expression over the login's claims; empty
	// matches every login.
	Selector    string
	BindType    string
	BindName    string
	CreateTime  time.Time
	ModifyTime  time.Time
	CreateIndex uint64
	ModifyIndex uint64
}

// ACLAuthMethodUpsertRequest stores auth methods (replacing same-named
// ones).
type ACLAuthMethodUpsertRequest struct {
	AuthMethods []*ACLAuthMethod
}

// ACLAuthMethodDeleteRequest deletes auth methods by name, with the
// binding rules that name them.
type ACLAuthMethodDeleteRequest struct {
	Names []string
}

// ACLBindingRuleUpsertRequest stores binding rules (replacing ones with
// the same ID).
type ACLBindingRuleUpsertRequest struct {
	Rules []*ACLBindingRule
}

// ACLBindingRuleDeleteRequest deletes binding rules by ID.
type ACLBindingRuleDeleteRequest struct {
	IDs []string
}
