package nomad

import (
	"strings"
	"sync"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// Identity is who a request acts as: a stored token, or a workload identity
// (Token nil, Claims set), or anonymous (both nil).
type Identity struct {
	Token  *structs.ACLToken
	Claims *IdentityClaims
}

// policyCache keeps parsed policies by name and modify index, so that a
// request does not re-parse the HCL of every policy its token names.
type policyCache struct {
	mu sync.Mutex
	m  map[string]cachedPolicy
}

type cachedPolicy struct {
	modifyIndex uint64
	policy      *acl.Policy
}

func (c *policyCache) get(p *structs.ACLPolicy) (*acl.Policy, error) {
	c.mu.Lock()
	if e, ok := c.m[p.Name]; ok && e.modifyIndex == p.ModifyIndex {
		c.mu.Unlock()
		return e.policy, nil
	}
	c.mu.Unlock()
	parsed, err := acl.Parse(p.Rules)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]cachedPolicy{}
	}
	c.m[p.Name] = cachedPolicy{modifyIndex: p.ModifyIndex, policy: parsed}
	c.mu.Unlock()
	return parsed, nil
}

// ResolveToken returns the ACL a request with secret acts under, and who it
// is. With ACLs disabled it returns a nil ACL (which allows everything). An
// empty secret is anonymous: the "anonymous" policy, or nothing. An unknown
// secret is ErrTokenNotFound unless it is a valid workload identity; an
// expired token is ErrTokenExpired.
func (s *Server) ResolveToken(secret string) (*acl.ACL, *Identity, error) {
	if !s.ACLEnabled() {
		return nil, &Identity{}, nil
	}
	snap := s.State().Snapshot()
	if secret == "" {
		a, err := s.compilePolicies(snap, []string{structs.AnonymousPolicyName}, nil)
		return a, &Identity{}, err
	}
	tok, err := snap.ACLTokenBySecretID(nil, secret)
	if err != nil {
		return nil, nil, err
	}
	if tok == nil {
		if strings.Count(secret, ".") == 2 {
			return s.resolveWorkloadIdentity(snap, secret)
		}
		return nil, nil, structs.ErrTokenNotFound
	}
	if tok.IsExpired(s.now()) {
		return nil, nil, structs.ErrTokenExpired
	}
	if tok.Type == structs.ACLTokenTypeManagement {
		return acl.ManagementACL(), &Identity{Token: tok}, nil
	}
	names := append([]string(nil), tok.Policies...)
	for _, link := range tok.Roles {
		role, err := snap.ACLRoleByID(nil, link.ID)
		if err != nil {
			return nil, nil, err
		}
		if role == nil {
			continue // a deleted role grants nothing
		}
		for _, p := range role.Policies {
			names = append(names, p.Name)
		}
	}
	a, err := s.compilePolicies(snap, names, nil)
	return a, &Identity{Token: tok}, err
}

// compilePolicies compiles the stored policies named (missing ones grant
// nothing, as in Nomad) plus extra.
func (s *Server) compilePolicies(snap *state.Snapshot, names []string, extra []*acl.Policy) (*acl.ACL, error) {
	policies := extra
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		p, err := snap.ACLPolicyByName(nil, n)
		if err != nil {
			return nil, err
		}
		if p == nil {
			continue
		}
		parsed, err := s.policies.get(p)
		if err != nil {
			s.logger.Error("stored ACL policy does not parse", "policy", n, "error", err)
			continue
		}
		policies = append(policies, parsed)
	}
	return acl.Compile(policies)
}

// ResolveTokenForNode resolves secret for a client agent that checks a
// request it serves itself (alloc exec, logs, fs): the agent is
// authenticated first; enabled is false when ACLs are disabled.
func (s *Server) ResolveTokenForNode(caller NodeCaller, secret string) (a *acl.ACL, enabled bool, err error) {
	if _, err := s.authenticateNode(caller); err != nil {
		return nil, false, err
	}
	if !s.ACLEnabled() {
		return nil, false, nil
	}
	a, _, err = s.ResolveToken(secret)
	return a, true, err
}
