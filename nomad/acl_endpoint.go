package nomad

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// Token lifetimes Nomad enforces by default.
const (
	minTokenTTL        = time.Minute
	maxTokenTTL        = 24 * time.Hour
	oneTimeTokenTTL    = 10 * time.Minute
	aclBootstrapReset  = "acl-bootstrap-reset"
	maxDescriptionSize = 256
)

var (
	validPolicyName    = regexp.MustCompile(`^[a-zA-Z0-9-]{1,128}$`)
	validNamespaceName = regexp.MustCompile(`^[a-zA-Z0-9-_]{1,128}$`)
)

// ErrACLDisabled is returned by ACL endpoints when ACLs are off.
var ErrACLDisabled = structs.BadRequestf("ACL support disabled")

// ACLEnabled reports whether this server enforces ACLs.
func (s *Server) ACLEnabled() bool { return s.config.ACLEnabled }

// applyErr applies msg through raft and returns the FSM's error, mapping
// the state store's sentinels to request errors.
func (s *Server) applyErr(t structs.MessageType, msg any) (uint64, error) {
	resp, index, err := s.raftApply(t, msg)
	if err != nil {
		return 0, err
	}
	if ferr, ok := resp.(error); ok && ferr != nil {
		switch {
		case errors.Is(ferr, state.ErrNotFound):
			return 0, structs.NotFoundf("%s", strings.TrimSuffix(ferr.Error(), ": "+state.ErrNotFound.Error()))
		case errors.Is(ferr, state.ErrConflict):
			return 0, structs.BadRequestf("%s", strings.TrimSuffix(ferr.Error(), ": "+state.ErrConflict.Error()))
		}
		var done *state.ErrBootstrapDone
		if errors.As(ferr, &done) {
			return 0, structs.BadRequestf("%s", done.Error())
		}
		return 0, ferr
	}
	return index, nil
}

// BootstrapACL creates the initial management token, with secret as its
// SecretID when not empty (it must be a UUID). A second bootstrap is refused
// unless the operator wrote the reset index named in the refusal into
// <data_dir>/server/acl-bootstrap-reset. Call it on the leader.
func (s *Server) BootstrapACL(secret string) (*structs.ACLToken, uint64, error) {
	if !s.ACLEnabled() {
		return nil, 0, ErrACLDisabled
	}
	if secret != "" {
		if _, err := uuid.Parse(secret); err != nil {
			return nil, 0, structs.BadRequestf("invalid acl token")
		}
	}
	cur := s.State().ACLBootstrapIndex()
	var reset uint64
	if cur != 0 {
		path := filepath.Join(s.config.DataDir, "server", aclBootstrapReset)
		raw, err := os.ReadFile(path)
		if err == nil {
			if n, perr := strconv.ParseUint(strings.TrimSpace(string(raw)), 10, 64); perr == nil && n == cur {
				reset = n
				s.logger.Info("ACL bootstrap reset by the reset file", "reset_index", n)
			} else {
				s.logger.Warn("ACL bootstrap reset file does not name the reset index", "path", path, "reset_index", cur)
			}
		}
		if reset == 0 {
			return nil, 0, structs.BadRequestf("%s", (&state.ErrBootstrapDone{ResetIndex: cur}).Error())
		}
	}
	if secret == "" {
		secret = generateUUID()
	}
	tok := &structs.ACLToken{
		AccessorID: generateUUID(), SecretID: secret, Name: "Bootstrap Token",
		Type: structs.ACLTokenTypeManagement, Global: true, CreateTime: s.now().UTC(),
	}
	index, err := s.applyErr(structs.ACLTokenBootstrapRequestType, &structs.ACLTokenBootstrapRequest{Token: tok, ResetIndex: reset})
	if err != nil {
		return nil, 0, err
	}
	stored, err := s.State().ACLTokenByAccessorID(nil, tok.AccessorID)
	if err != nil {
		return nil, 0, err
	}
	return stored, index, nil
}

// ValidatePolicy checks p as an upsert would and returns the parsed rules.
func ValidatePolicy(p *structs.ACLPolicy) (*acl.Policy, error) {
	if !validPolicyName.MatchString(p.Name) {
		return nil, structs.BadRequestf("invalid name '%s'", p.Name)
	}
	if len(p.Description) > maxDescriptionSize {
		return nil, structs.BadRequestf("description longer than %d", maxDescriptionSize)
	}
	parsed, err := acl.Parse(p.Rules)
	if err != nil {
		return nil, structs.BadRequestf("failed to parse rules of ACL policy %q: %v", p.Name, err)
	}
	if j := p.JobACL; j != nil {
		if j.JobID == "" && (j.Group != "" || j.Task != "") {
			return nil, structs.BadRequestf("job_acl: a group or task needs a job ID")
		}
		if j.Group == "" && j.Task != "" {
			return nil, structs.BadRequestf("job_acl: a task needs a group")
		}
		if j.Namespace == "" {
			j.Namespace = structs.DefaultNamespace
		}
	}
	return parsed, nil
}

// UpsertACLPolicies validates and stores policies; one invalid policy
// refuses the request and nothing is written.
func (s *Server) UpsertACLPolicies(caller *acl.ACL, policies []*structs.ACLPolicy) (uint64, error) {
	if err := permit(caller.IsManagement()); err != nil {
		return 0, err
	}
	if !s.ACLEnabled() {
		return 0, ErrACLDisabled
	}
	if len(policies) == 0 {
		return 0, structs.BadRequestf("must specify as least one policy")
	}
	for _, p := range policies {
		if _, err := ValidatePolicy(p); err != nil {
			return 0, err
		}
	}
	return s.applyErr(structs.ACLPolicyUpsertRequestType, &structs.ACLPolicyUpsertRequest{Policies: policies})
}

// DeleteACLPolicies deletes policies by name.
func (s *Server) DeleteACLPolicies(caller *acl.ACL, names []string) (uint64, error) {
	if err := permit(caller.IsManagement()); err != nil {
		return 0, err
	}
	if !s.ACLEnabled() {
		return 0, ErrACLDisabled
	}
	return s.applyErr(structs.ACLPolicyDeleteRequestType, &structs.ACLPolicyDeleteRequest{Names: names})
}

// UpsertACLToken creates (in.AccessorID empty, or an upload of a new
// accessor with its secret) or updates a token, validating it as Nomad does:
// a management token has no policies or roles, a client token has at least
// one of them, role links must name existing roles, and the expiration of
// an existing token cannot change. It returns the token as stored.
func (s *Server) UpsertACLToken(caller *acl.ACL, in *structs.ACLToken) (*structs.ACLToken, uint64, error) {
	if err := permit(caller.IsManagement()); err != nil {
		return nil, 0, err
	}
	if !s.ACLEnabled() {
		return nil, 0, ErrACLDisabled
	}
	tok := in.Copy()
	switch tok.Type {
	case structs.ACLTokenTypeClient:
		if len(tok.Policies) == 0 && len(tok.Roles) == 0 {
			return nil, 0, structs.BadRequestf("client token missing policies or roles")
		}
	case structs.ACLTokenTypeManagement:
		if len(tok.Policies) != 0 || len(tok.Roles) != 0 {
			return nil, 0, structs.BadRequestf("management token cannot be associated with policies or roles")
		}
	default:
		return nil, 0, structs.BadRequestf("token type must be client or management")
	}
	if len(tok.Name) > maxDescriptionSize {
		return nil, 0, structs.BadRequestf("token name too long")
	}
	roles, err := s.resolveRoleLinks(tok.Roles)
	if err != nil {
		return nil, 0, err
	}
	tok.Roles = roles

	var existing *structs.ACLToken
	if tok.AccessorID != "" {
		if existing, err = s.State().ACLTokenByAccessorID(nil, tok.AccessorID); err != nil {
			return nil, 0, err
		}
	}
	now := s.now().UTC()
	switch {
	case existing != nil: // update
		if tok.ExpirationTTL != 0 || (tok.ExpirationTime != nil && (existing.ExpirationTime == nil || !tok.ExpirationTime.Equal(*existing.ExpirationTime))) {
			return nil, 0, structs.BadRequestf("cannot update expiration time")
		}
		if tok.SecretID != "" && tok.SecretID != existing.SecretID {
			return nil, 0, structs.BadRequestf("cannot update secret ID")
		}
		if tok.Global != existing.Global {
			return nil, 0, structs.BadRequestf("cannot toggle global mode")
		}
		tok.SecretID, tok.CreateTime = existing.SecretID, existing.CreateTime
		tok.ExpirationTime, tok.ExpirationTTL = existing.ExpirationTime, existing.ExpirationTTL
	default: // create, or upload with given IDs
		if tok.AccessorID != "" {
			if tok.Type == structs.ACLTokenTypeManagement {
				return nil, 0, structs.BadRequestf("cannot upload management tokens")
			}
			if tok.SecretID == "" {
				return nil, 0, structs.BadRequestf("missing secret ID")
			}
		} else {
			tok.AccessorID = generateUUID()
			if tok.SecretID == "" {
				tok.SecretID = generateUUID()
			}
		}
		if other, err := s.State().ACLTokenBySecretID(nil, tok.SecretID); err != nil {
			return nil, 0, err
		} else if other != nil {
			return nil, 0, structs.BadRequestf("secret ID already in use")
		}
		tok.CreateTime = now
		if err := s.setExpiration(tok, now); err != nil {
			return nil, 0, err
		}
	}
	index, err := s.applyErr(structs.ACLTokenUpsertRequestType, &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{tok}})
	if err != nil {
		return nil, 0, err
	}
	stored, err := s.State().ACLTokenByAccessorID(nil, tok.AccessorID)
	return stored, index, err
}

// setExpiration turns a TTL into an expiration time and checks its bounds.
func (s *Server) setExpiration(tok *structs.ACLToken, now time.Time) error {
	if tok.ExpirationTTL < 0 {
		return structs.BadRequestf("token expiration TTL must not be negative")
	}
	if tok.ExpirationTTL > 0 {
		if tok.ExpirationTime != nil {
			return structs.BadRequestf("token expiration time and TTL cannot both be set")
		}
		t := now.Add(tok.ExpirationTTL)
		tok.ExpirationTime = &t
	}
	if tok.ExpirationTime == nil {
		return nil
	}
	ttl := tok.ExpirationTime.Sub(now)
	lo, hi := s.tokenTTLBounds()
	if ttl < lo || ttl > hi {
		return structs.BadRequestf("expiration time cannot be less than %s or more than %s in the future", lo, hi)
	}
	return nil
}

// tokenTTLBounds are the least and most lifetime a token may be given:
// the agent's acl token_min/max_expiration_ttl, else Nomad's defaults.
func (s *Server) tokenTTLBounds() (lo, hi time.Duration) {
	lo, hi = minTokenTTL, maxTokenTTL
	if s.config.ACLTokenMinTTL > 0 {
		lo = s.config.ACLTokenMinTTL
	}
	if s.config.ACLTokenMaxTTL > 0 {
		hi = s.config.ACLTokenMaxTTL
	}
	return lo, hi
}

// resolveRoleLinks fills in each link's ID and name from the stored role;
// a link naming no role is refused.
func (s *Server) resolveRoleLinks(links []*structs.ACLTokenRoleLink) ([]*structs.ACLTokenRoleLink, error) {
	var out []*structs.ACLTokenRoleLink
	for _, l := range links {
		var role *structs.ACLRole
		var err error
		switch {
		case l.ID != "":
			role, err = s.State().ACLRoleByID(nil, l.ID)
		case l.Name != "":
			role, err = s.State().ACLRoleByName(nil, l.Name)
		default:
			return nil, structs.BadRequestf("role link requires an ID or name")
		}
		if err != nil {
			return nil, err
		}
		if role == nil {
			return nil, structs.BadRequestf("cannot find role %s%s", l.ID, l.Name)
		}
		if !slices.ContainsFunc(out, func(x *structs.ACLTokenRoleLink) bool { return x.ID == role.ID }) {
			out = append(out, &structs.ACLTokenRoleLink{ID: role.ID, Name: role.Name})
		}
	}
	return out, nil
}

// DeleteACLTokens deletes tokens by accessor ID.
func (s *Server) DeleteACLTokens(caller *acl.ACL, ids []string) (uint64, error) {
	if err := permit(caller.IsManagement()); err != nil {
		return 0, err
	}
	if !s.ACLEnabled() {
		return 0, ErrACLDisabled
	}
	return s.applyErr(structs.ACLTokenDeleteRequestType, &structs.ACLTokenDeleteRequest{AccessorIDs: ids})
}

// UpsertACLRole creates (empty ID) or updates a role; its policy links must
// name existing policies.
func (s *Server) UpsertACLRole(caller *acl.ACL, in *structs.ACLRole, create bool) (*structs.ACLRole, uint64, error) {
	if err := permit(caller.IsManagement()); err != nil {
		return nil, 0, err
	}
	if !s.ACLEnabled() {
		return nil, 0, ErrACLDisabled
	}
	role := *in
	if !validPolicyName.MatchString(role.Name) {
		return nil, 0, structs.BadRequestf("invalid name '%s'", role.Name)
	}
	if len(role.Description) > maxDescriptionSize {
		return nil, 0, structs.BadRequestf("description longer than %d", maxDescriptionSize)
	}
	if len(role.Policies) == 0 {
		return nil, 0, structs.BadRequestf("at least one policy should be specified")
	}
	for _, p := range role.Policies {
		pol, err := s.State().ACLPolicyByName(nil, p.Name)
		if err != nil {
			return nil, 0, err
		}
		if pol == nil {
			return nil, 0, structs.BadRequestf("cannot find policy %s", p.Name)
		}
	}
	if create {
		if role.ID != "" {
			return nil, 0, structs.BadRequestf("ACL role ID must not be set on create")
		}
		role.ID = generateUUID()
	} else {
		old, err := s.State().ACLRoleByID(nil, role.ID)
		if err != nil {
			return nil, 0, err
		}
		if old == nil {
			return nil, 0, structs.NotFoundf("cannot find ACL role %s", role.ID)
		}
	}
	index, err := s.applyErr(structs.ACLRoleUpsertRequestType, &structs.ACLRoleUpsertRequest{Roles: []*structs.ACLRole{&role}})
	if err != nil {
		return nil, 0, err
	}
	stored, err := s.State().ACLRoleByID(nil, role.ID)
	return stored, index, err
}

// DeleteACLRoles deletes roles by ID.
func (s *Server) DeleteACLRoles(caller *acl.ACL, ids []string) (uint64, error) {
	if err := permit(caller.IsManagement()); err != nil {
		return 0, err
	}
	if !s.ACLEnabled() {
		return 0, ErrACLDisabled
	}
	return s.applyErr(structs.ACLRoleDeleteRequestType, &structs.ACLRoleDeleteRequest{IDs: ids})
}

// CreateOneTimeToken creates a one-time token for the caller's own ACL
// token (a caller without one, anonymous or a workload identity, is
// refused): a one-time token never stands for another token.
func (s *Server) CreateOneTimeToken(caller *Identity) (*structs.OneTimeToken, uint64, error) {
	if !s.ACLEnabled() {
		return nil, 0, ErrACLDisabled
	}
	if caller == nil || caller.Token == nil {
		return nil, 0, structs.ErrPermissionDenied
	}
	accessor := caller.Token.AccessorID
	ott := &structs.OneTimeToken{OneTimeSecretID: generateUUID(), AccessorID: accessor, ExpiresAt: s.now().UTC().Add(oneTimeTokenTTL)}
	index, err := s.applyErr(structs.OneTimeTokenUpsertRequestType, &structs.OneTimeTokenUpsertRequest{Token: ott})
	if err != nil {
		return nil, 0, err
	}
	stored, err := s.State().OneTimeTokenBySecret(nil, ott.OneTimeSecretID)
	return stored, index, err
}

// ExchangeOneTimeToken consumes a one-time token and returns the token it
// stands for.
func (s *Server) ExchangeOneTimeToken(secret string) (*structs.ACLToken, uint64, error) {
	if !s.ACLEnabled() {
		return nil, 0, ErrACLDisabled
	}
	ott, err := s.State().OneTimeTokenBySecret(nil, secret)
	if err != nil {
		return nil, 0, err
	}
	if ott == nil || !s.now().Before(ott.ExpiresAt) {
		return nil, 0, structs.ErrPermissionDenied
	}
	tok, err := s.State().ACLTokenByAccessorID(nil, ott.AccessorID)
	if err != nil {
		return nil, 0, err
	}
	if tok == nil {
		return nil, 0, structs.ErrPermissionDenied
	}
	index, err := s.applyErr(structs.OneTimeTokenUpsertRequestType, &structs.OneTimeTokenUpsertRequest{Delete: secret})
	return tok, index, err
}

// ValidateNamespace checks a namespace as an upsert would.
func ValidateNamespace(ns *structs.Namespace) error {
	if !validNamespaceName.MatchString(ns.Name) {
		return structs.BadRequestf("invalid name %q. Must match regex %s", ns.Name, validNamespaceName)
	}
	if len(ns.Description) > maxDescriptionSize {
		return structs.BadRequestf("description longer than %d", maxDescriptionSize)
	}
	return nil
}

// UpsertNamespaces validates and stores namespaces.
func (s *Server) UpsertNamespaces(caller *acl.ACL, nss []*structs.Namespace) (uint64, error) {
	if err := permit(caller.IsManagement()); err != nil {
		return 0, err
	}
	if len(nss) == 0 {
		return 0, structs.BadRequestf("must specify at least one namespace")
	}
	for _, ns := range nss {
		if err := ValidateNamespace(ns); err != nil {
			return 0, err
		}
	}
	return s.applyErr(structs.NamespaceUpsertRequestType, &structs.NamespaceUpsertRequest{Namespaces: nss})
}

// DeleteNamespaces deletes namespaces by name (never "default", never one
// with non-terminal jobs).
func (s *Server) DeleteNamespaces(caller *acl.ACL, names []string) (uint64, error) {
	if err := permit(caller.IsManagement()); err != nil {
		return 0, err
	}
	for _, n := range names {
		if n == structs.DefaultNamespace {
			return 0, structs.BadRequestf("default namespace can not be deleted")
		}
	}
	return s.applyErr(structs.NamespaceDeleteRequestType, &structs.NamespaceDeleteRequest{Names: names})
}

// CheckNamespaceExists refuses a job in a namespace that does not exist,
// with Nomad's wording.
func (s *Server) CheckNamespaceExists(job *structs.Job) error {
	ns, err := s.State().NamespaceByName(nil, job.Namespace)
	if err != nil {
		return err
	}
	if ns == nil {
		return structs.BadRequestf("job %q is in nonexistent namespace %q", job.ID, job.Namespace)
	}
	return nil
}
