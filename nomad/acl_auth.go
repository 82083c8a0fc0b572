package nomad

import (
	"fmt"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/hashicorp/go-bexpr"
	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/structs"
)

// DefaultTokenNameFormat is the token name format of an auth method that
// sets none.
const DefaultTokenNameFormat = "${auth_method_type}-${auth_method_name}"

// Client introduction token lifetimes by default (client_introduction
// default_identity_ttl and max_request_identity_ttl): the TTL when a
// request sets none, and the longest one a request may ask for.
const (
	ClientIntroductionDefaultTTL = 5 * time.Minute
	ClientIntroductionMaxTTL     = 30 * time.Minute
	// signingKeyWait bounds how long a request waits for the first
	// signing key of a new cluster (the leader creates it on election).
	signingKeyWait = 10 * time.Second
)

// ValidateAuthMethod checks m as an upsert would and fills in defaults
// (the token name format). It is pure: it reads nothing but m.
func ValidateAuthMethod(m *structs.ACLAuthMethod) error {
	if !validPolicyName.MatchString(m.Name) {
		return structs.BadRequestf("invalid name '%s'", m.Name)
	}
	switch m.Type {
	case structs.ACLAuthMethodTypeOIDC, structs.ACLAuthMethodTypeJWT:
	default:
		return structs.BadRequestf("invalid auth method type '%s': Type must be OIDC or JWT", m.Type)
	}
	switch m.TokenLocality {
	case structs.ACLAuthMethodTokenLocalityLocal, structs.ACLAuthMethodTokenLocalityGlobal:
	default:
		return structs.BadRequestf("invalid token locality '%s': TokenLocality must be local or global", m.TokenLocality)
	}
	if m.MaxTokenTTL < minTokenTTL || m.MaxTokenTTL > maxTokenTTL {
		return structs.BadRequestf("invalid MaxTokenTTL value '%s' (should be between %s and %s)", m.MaxTokenTTL, minTokenTTL, maxTokenTTL)
	}
	if m.TokenNameFormat == "" {
		m.TokenNameFormat = DefaultTokenNameFormat
	}
	c := m.Config
	if c == nil {
		return structs.BadRequestf("missing Config for auth method '%s'", m.Name)
	}
	if c.ExpirationLeeway < 0 || c.NotBeforeLeeway < 0 || c.ClockSkewLeeway < 0 {
		return structs.BadRequestf("Config leeways (ExpirationLeeway, NotBeforeLeeway, ClockSkewLeeway) must not be negative")
	}
	switch m.Type {
	case structs.ACLAuthMethodTypeOIDC:
		if c.OIDCDiscoveryURL == "" {
			return structs.BadRequestf("Config.OIDCDiscoveryURL is required for OIDC auth methods")
		}
		if c.OIDCClientID == "" {
			return structs.BadRequestf("Config.OIDCClientID is required for OIDC auth methods")
		}
	case structs.ACLAuthMethodTypeJWT:
		n := 0
		for _, set := range []bool{len(c.JWTValidationPubKeys) > 0, c.JWKSURL != "", c.OIDCDiscoveryURL != ""} {
			if set {
				n++
			}
		}
		if n != 1 {
			return structs.BadRequestf("exactly one of Config.JWTValidationPubKeys, Config.JWKSURL or Config.OIDCDiscoveryURL is required for JWT auth methods")
		}
	}
	return nil
}

// UpsertACLAuthMethod creates (create true: the name must be free) or
// updates (the method must exist) an auth method and returns it as
// stored. A second default method of the same type is refused.
func (s *Server) UpsertACLAuthMethod(caller *acl.ACL, in *structs.ACLAuthMethod, create bool) (*structs.ACLAuthMethod, uint64, error) {
	if err := permit(caller.IsManagement()); err != nil {
		return nil, 0, err
	}
	if !s.ACLEnabled() {
		return nil, 0, ErrACLDisabled
	}
	m := in.Copy()
	if err := ValidateAuthMethod(m); err != nil {
		return nil, 0, err
	}
	old, err := s.State().ACLAuthMethodByName(nil, m.Name)
	if err != nil {
		return nil, 0, err
	}
	switch {
	case create && old != nil:
		return nil, 0, structs.BadRequestf("ACL auth method with name %s already exists", m.Name)
	case !create && old == nil:
		return nil, 0, structs.NotFoundf("ACL auth method %s not found", m.Name)
	}
	now := s.now().UTC()
	m.CreateTime, m.ModifyTime = now, now
	index, err := s.applyErr(structs.ACLAuthMethodUpsertRequestType, &structs.ACLAuthMethodUpsertRequest{AuthMethods: []*structs.ACLAuthMethod{m}})
	if err != nil {
		return nil, 0, err
	}
	stored, err := s.State().ACLAuthMethodByName(nil, m.Name)
	return stored, index, err
}

// DeleteACLAuthMethods deletes auth methods by name, with their binding
// rules.
func (s *Server) DeleteACLAuthMethods(caller *acl.ACL, names []string) (uint64, error) {
	if err := permit(caller.IsManagement()); err != nil {
		return 0, err
	}
	if !s.ACLEnabled() {
		return 0, ErrACLDisabled
	}
	return s.applyErr(structs.ACLAuthMethodDeleteRequestType, &structs.ACLAuthMethodDeleteRequest{Names: names})
}

// ValidateBindingRule checks r's own fields as an upsert would (not that
// its auth method exists). It is pure.
func ValidateBindingRule(r *structs.ACLBindingRule) error {
	if r.AuthMethod == "" {
		return structs.BadRequestf("AuthMethod is required")
	}
	if len(r.Description) > maxDescriptionSize {
		return structs.BadRequestf("description longer than %d", maxDescriptionSize)
	}
	switch r.BindType {
	case structs.ACLBindingRuleBindTypeRole, structs.ACLBindingRuleBindTypePolicy:
		if r.BindName == "" {
			return structs.BadRequestf("BindName is required for bind type '%s'", r.BindType)
		}
	case structs.ACLBindingRuleBindTypeManagement:
	default:
		return structs.BadRequestf("invalid BindType '%s': must be role, policy or management", r.BindType)
	}
	if r.Selector != "" {
		if _, err := bexpr.CreateEvaluator(r.Selector); err != nil {
			return structs.BadRequestf("Selector is invalid: %v", err)
		}
	}
	return nil
}

// UpsertACLBindingRule creates (create true: the ID must be empty and one
// is generated) or updates (the rule must exist) a binding rule whose auth
// method must exist, and returns it as stored.
func (s *Server) UpsertACLBindingRule(caller *acl.ACL, in *structs.ACLBindingRule, create bool) (*structs.ACLBindingRule, uint64, error) {
	if err := permit(caller.IsManagement()); err != nil {
		return nil, 0, err
	}
	if !s.ACLEnabled() {
		return nil, 0, ErrACLDisabled
	}
	r := *in
	if err := ValidateBindingRule(&r); err != nil {
		return nil, 0, err
	}
	if m, err := s.State().ACLAuthMethodByName(nil, r.AuthMethod); err != nil {
		return nil, 0, err
	} else if m == nil {
		return nil, 0, structs.BadRequestf("ACL auth method %s not found", r.AuthMethod)
	}
	if create {
		if r.ID != "" {
			return nil, 0, structs.BadRequestf("ACL binding rule ID must not be set on create")
		}
		r.ID = generateUUID()
	} else {
		old, err := s.State().ACLBindingRuleByID(nil, r.ID)
		if err != nil {
			return nil, 0, err
		}
		if old == nil {
			return nil, 0, structs.NotFoundf("ACL binding rule %s not found", r.ID)
		}
	}
	now := s.now().UTC()
	r.CreateTime, r.ModifyTime = now, now
	index, err := s.applyErr(structs.ACLBindingRuleUpsertRequestType, &structs.ACLBindingRuleUpsertRequest{Rules: []*structs.ACLBindingRule{&r}})
	if err != nil {
		return nil, 0, err
	}
	stored, err := s.State().ACLBindingRuleByID(nil, r.ID)
	return stored, index, err
}

// DeleteACLBindingRules deletes binding rules by ID.
func (s *Server) DeleteACLBindingRules(caller *acl.ACL, ids []string) (uint64, error) {
	if err := permit(caller.IsManagement()); err != nil {
		return 0, err
	}
	if !s.ACLEnabled() {
		return 0, ErrACLDisabled
	}
	return s.applyErr(structs.ACLBindingRuleDeleteRequestType, &structs.ACLBindingRuleDeleteRequest{IDs: ids})
}

// ClientIntroductionClaims are the claims of a client introduction token.
type ClientIntroductionClaims struct {
	NodeName string `json:"nomad_node_name,omitempty"`
	NodePool string `json:"nomad_node_pool"`
	jwt.Claims
}

// CreateClientIntroductionToken signs, with the active root key, a JWT a
// new client node can present to introduce itself: scoped to nodePool
// (default "default") and, when set, nodeName; valid for ttl (0 means the
// server's client_introduction default_identity_ttl, at most its
// max_request_identity_ttl; 5m and 30m unless configured).
func (s *Server) CreateClientIntroductionToken(caller *acl.ACL, nodeName, nodePool string, ttl time.Duration) (string, error) {
	if err := permit(caller.AllowNodeWrite()); err != nil {
		return "", err
	}
	cfg := s.config.ClientIntroduction.withDefaults()
	switch {
	case ttl < 0:
		return "", structs.BadRequestf("TTL must not be negative")
	case ttl > cfg.MaxTTL:
		return "", structs.BadRequestf("TTL %s exceeds the maximum of %s", ttl, cfg.MaxTTL)
	case ttl == 0:
		ttl = cfg.DefaultTTL
	}
	if nodePool == "" {
		nodePool = "default"
	}
	if err := s.waitForSigningKey(signingKeyWait); err != nil {
		return "", err
	}
	sg, err := s.newIdentitySigner()
	if err != nil {
		return "", err
	}
	claims := ClientIntroductionClaims{
		NodeName: nodeName, NodePool: nodePool,
		Claims: jwt.Claims{
			Subject:   fmt.Sprintf("node-introduction:%s:%s:%s:default", sg.region, nodePool, nodeName),
			ID:        generateUUID(),
			Audience:  jwt.Audience{DefaultIdentityAudience},
			IssuedAt:  jwt.NewNumericDate(sg.now),
			NotBefore: jwt.NewNumericDate(sg.now),
			Expiry:    jwt.NewNumericDate(sg.now.Add(ttl)),
		},
	}
	return jwt.Signed(sg.signer).Claims(claims).Serialize()
}

// waitForSigningKey returns once the keyring has an active key, or fails
// after timeout: on a new cluster the leader creates the first key just
// after its election, and a request may arrive before it is committed.
func (s *Server) waitForSigningKey(timeout time.Duration) error {
	expired := time.After(timeout)
	for {
		ws := memdb.NewWatchSet()
		key, err := s.State().ActiveRootKey(ws)
		if err != nil || key != nil {
			return err
		}
		if ws.Watch(expired) {
			return fmt.Errorf("identity: no active signing key after %s", timeout)
		}
	}
}
