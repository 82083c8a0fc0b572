package apiconv

import (
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// The auth method conversions were written out by hand in the agent
// before they went by name; the hand copies stay here to show the two
// agree on every field.

func authConfigFromAPIByHand(c *api.ACLAuthMethodConfig) *structs.ACLAuthMethodConfig {
	if c == nil {
		return nil
	}
	out := &structs.ACLAuthMethodConfig{
		JWTValidationPubKeys: c.JWTValidationPubKeys, JWKSURL: c.JWKSURL,
		OIDCDiscoveryURL: c.OIDCDiscoveryURL, OIDCClientID: c.OIDCClientID, OIDCClientSecret: c.OIDCClientSecret,
		OIDCEnablePKCE: c.OIDCEnablePKCE, OIDCDisableUserInfo: c.OIDCDisableUserInfo, OIDCScopes: c.OIDCScopes,
		BoundAudiences: c.BoundAudiences, BoundIssuer: c.BoundIssuer, AllowedRedirectURIs: c.AllowedRedirectURIs,
		DiscoveryCaPem: c.DiscoveryCaPem, JWKSCACert: c.JWKSCACert, SigningAlgs: c.SigningAlgs,
		ExpirationLeeway: c.ExpirationLeeway, NotBeforeLeeway: c.NotBeforeLeeway, ClockSkewLeeway: c.ClockSkewLeeway,
		ClaimMappings: c.ClaimMappings, ListClaimMappings: c.ListClaimMappings, VerboseLogging: c.VerboseLogging,
	}
	if a := c.OIDCClientAssertion; a != nil {
		ca := &structs.OIDCClientAssertion{Audience: a.Audience, KeySource: string(a.KeySource),
			KeyAlgorithm: a.KeyAlgorithm, ExtraHeaders: a.ExtraHeaders}
		if k := a.PrivateKey; k != nil {
			ca.PrivateKey = &structs.OIDCClientAssertionKey{PemKey: k.PemKey, PemKeyFile: k.PemKeyFile,
				KeyIDHeader: string(k.KeyIDHeader), KeyID: k.KeyID, PemCert: k.PemCert, PemCertFile: k.PemCertFile}
		}
		out.OIDCClientAssertion = ca
	}
	return out
}

func authConfigToAPIByHand(c *structs.ACLAuthMethodConfig) *api.ACLAuthMethodConfig {
	if c == nil {
		return nil
	}
	out := &api.ACLAuthMethodConfig{
		JWTValidationPubKeys: c.JWTValidationPubKeys, JWKSURL: c.JWKSURL,
		OIDCDiscoveryURL: c.OIDCDiscoveryURL, OIDCClientID: c.OIDCClientID, OIDCClientSecret: c.OIDCClientSecret,
		OIDCEnablePKCE: c.OIDCEnablePKCE, OIDCDisableUserInfo: c.OIDCDisableUserInfo, OIDCScopes: c.OIDCScopes,
		BoundAudiences: c.BoundAudiences, BoundIssuer: c.BoundIssuer, AllowedRedirectURIs: c.AllowedRedirectURIs,
		DiscoveryCaPem: c.DiscoveryCaPem, JWKSCACert: c.JWKSCACert, SigningAlgs: c.SigningAlgs,
		ExpirationLeeway: c.ExpirationLeeway, NotBeforeLeeway: c.NotBeforeLeeway, ClockSkewLeeway: c.ClockSkewLeeway,
		ClaimMappings: c.ClaimMappings, ListClaimMappings: c.ListClaimMappings, VerboseLogging: c.VerboseLogging,
	}
	if a := c.OIDCClientAssertion; a != nil {
		ca := &api.OIDCClientAssertion{Audience: a.Audience, KeySource: api.OIDCClientAssertionKeySource(a.KeySource),
			KeyAlgorithm: a.KeyAlgorithm, ExtraHeaders: a.ExtraHeaders}
		if k := a.PrivateKey; k != nil {
			ca.PrivateKey = &api.OIDCClientAssertionKey{PemKey: k.PemKey, PemKeyFile: k.PemKeyFile,
				KeyIDHeader: api.OIDCClientAssertionKeyIDHeader(k.KeyIDHeader), KeyID: k.KeyID, PemCert: k.PemCert, PemCertFile: k.PemCertFile}
		}
		out.OIDCClientAssertion = ca
	}
	return out
}

func TestAuthMethodConfig_EveryFieldAsByHand(t *testing.T) {
	in := filled[api.ACLAuthMethodConfig]()
	require.Equal(t, authConfigFromAPIByHand(in), AuthMethodConfigFromAPI(in))
	stored := filled[structs.ACLAuthMethodConfig]()
	require.Equal(t, authConfigToAPIByHand(stored), AuthMethodConfigToAPI(stored))
	require.Equal(t, stored, AuthMethodConfigFromAPI(AuthMethodConfigToAPI(stored)))

	bare := &api.ACLAuthMethodConfig{OIDCClientAssertion: &api.OIDCClientAssertion{Audience: []string{"a"}}}
	require.Equal(t, authConfigFromAPIByHand(bare), AuthMethodConfigFromAPI(bare))
	require.Nil(t, AuthMethodConfigFromAPI(nil))
	require.Nil(t, AuthMethodConfigToAPI(nil))
}
