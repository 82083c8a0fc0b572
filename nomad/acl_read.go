package nomad

import (
	"context"
	"slices"
	"strings"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// The reads of the ACL objects (policies, tokens, roles, namespaces, auth
// methods, binding rules). Management (opts.ACL) reads everything; other
// callers read what concerns them (opts.Identity). Those of policies,
// tokens, roles, auth methods and binding rules are refused while ACLs are
// disabled.

// requireManagement refuses a caller that is not management.
func requireManagement(o *QueryOptions) error {
	if !o.ACL.IsManagement() {
		return structs.ErrPermissionDenied
	}
	return nil
}

func (o *QueryOptions) identity() *Identity {
	if o.Identity == nil {
		return &Identity{}
	}
	return o.Identity
}

// callerPolicies returns the names of the policies the caller holds
// directly or through its roles; all is true for management.
func callerPolicies(o *QueryOptions, snap *state.Snapshot) (names []string, all bool, err error) {
	if o.ACL.IsManagement() {
		return nil, true, nil
	}
	id := o.identity()
	if id.Token == nil {
		if id.Claims != nil {
			return nil, false, nil
		}
		return []string{structs.AnonymousPolicyName}, false, nil
	}
	names = append(names, id.Token.Policies...)
	for _, l := range id.Token.Roles {
		role, err := snap.ACLRoleByID(nil, l.ID)
		if err != nil {
			return nil, false, err
		}
		if role != nil {
			for _, p := range role.Policies {
				names = append(names, p.Name)
			}
		}
	}
	return names, false, nil
}

// ACLPolicyList lists the policies whose name starts with opts.Prefix that
// the caller may see: every one for management, else its own; with self,
// only its own (none for a management token).
func (s *Server) ACLPolicyList(ctx context.Context, opts QueryOptions, self bool) ([]*structs.ACLPolicy, QueryMeta, error) {
	if !s.ACLEnabled() {
		return nil, s.refusedMeta(), ErrACLDisabled
	}
	var out []*structs.ACLPolicy
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		out = nil
		mine, all, err := callerPolicies(&opts, snap)
		if err != nil {
			return 0, err
		}
		if self && all && opts.identity().Token != nil {
			all = false // a management token holds no policies
		}
		ps, err := snap.ACLPolicies(ws)
		if err != nil {
			return 0, err
		}
		for _, p := range ps {
			if (all || slices.Contains(mine, p.Name)) && strings.HasPrefix(p.Name, opts.Prefix) {
				out = append(out, p)
			}
		}
		return tableIndex(snap, state.TableACLPolicies), nil
	})
	return out, meta, err
}

// ACLPolicyGet returns policy name, to management or a caller holding it.
func (s *Server) ACLPolicyGet(ctx context.Context, opts QueryOptions, name string) (*structs.ACLPolicy, QueryMeta, error) {
	if !s.ACLEnabled() {
		return nil, s.refusedMeta(), ErrACLDisabled
	}
	var out *structs.ACLPolicy
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		out = nil
		mine, all, err := callerPolicies(&opts, snap)
		if err != nil {
			return 0, err
		}
		if !all && !slices.Contains(mine, name) {
			return 0, structs.ErrPermissionDenied
		}
		p, err := snap.ACLPolicyByName(ws, name)
		if err != nil {
			return 0, err
		}
		if p == nil {
			return tableIndex(snap, state.TableACLPolicies), structs.NotFoundf("ACL policy not found")
		}
		out = p
		return p.ModifyIndex, nil
	})
	return out, meta, err
}

// ACLTokenList lists the tokens whose accessor ID starts with opts.Prefix
// (management only).
func (s *Server) ACLTokenList(ctx context.Context, opts QueryOptions) ([]*structs.ACLToken, QueryMeta, error) {
	if !s.ACLEnabled() {
		return nil, s.refusedMeta(), ErrACLDisabled
	}
	if err := requireManagement(&opts); err != nil {
		return nil, s.refusedMeta(), err
	}
	var out []*structs.ACLToken
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		out = nil
		ts, err := snap.ACLTokens(ws)
		if err != nil {
			return 0, err
		}
		for _, t := range ts {
			if strings.HasPrefix(t.AccessorID, opts.Prefix) {
				out = append(out, t)
			}
		}
		return tableIndex(snap, state.TableACLTokens), nil
	})
	return out, meta, err
}

// ACLTokenGet returns the token of accessor id: management reads any, a
// token itself.
func (s *Server) ACLTokenGet(ctx context.Context, opts QueryOptions, id string) (*structs.ACLToken, QueryMeta, error) {
	if !s.ACLEnabled() {
		return nil, s.refusedMeta(), ErrACLDisabled
	}
	self := opts.identity().Token
	if !opts.ACL.IsManagement() && (self == nil || self.AccessorID != id) {
		return nil, s.refusedMeta(), structs.ErrPermissionDenied
	}
	var out *structs.ACLToken
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		t, err := snap.ACLTokenByAccessorID(ws, id)
		if err != nil {
			return 0, err
		}
		out = t
		if t == nil {
			return tableIndex(snap, state.TableACLTokens), structs.NotFoundf("ACL token not found")
		}
		return t.ModifyIndex, nil
	})
	return out, meta, err
}

// ACLTokenSelf returns the caller's own token (structs.ErrTokenNotFound
// without one).
func (s *Server) ACLTokenSelf(ctx context.Context, opts QueryOptions) (*structs.ACLToken, QueryMeta, error) {
	if !s.ACLEnabled() {
		return nil, s.refusedMeta(), ErrACLDisabled
	}
	self := opts.identity().Token
	if self == nil {
		return nil, s.refusedMeta(), structs.ErrTokenNotFound
	}
	var out *structs.ACLToken
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		t, err := snap.ACLTokenByAccessorID(ws, self.AccessorID)
		if err != nil {
			return 0, err
		}
		out = t
		if t == nil {
			return 0, structs.ErrTokenNotFound
		}
		return t.ModifyIndex, nil
	})
	return out, meta, err
}

// callerRoles returns the IDs of the roles the caller's token links to;
// all is true for management.
func callerRoles(o *QueryOptions) (ids []string, all bool) {
	if o.ACL.IsManagement() {
		return nil, true
	}
	if t := o.identity().Token; t != nil {
		for _, l := range t.Roles {
			ids = append(ids, l.ID)
		}
	}
	return ids, false
}

// ACLRoleList lists the roles whose ID starts with opts.Prefix: every one
// for management, else those the caller's token links to.
func (s *Server) ACLRoleList(ctx context.Context, opts QueryOptions) ([]*structs.ACLRole, QueryMeta, error) {
	if !s.ACLEnabled() {
		return nil, s.refusedMeta(), ErrACLDisabled
	}
	mine, all := callerRoles(&opts)
	var out []*structs.ACLRole
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		out = nil
		roles, err := snap.ACLRoles(ws)
		if err != nil {
			return 0, err
		}
		for _, x := range roles {
			if (all || slices.Contains(mine, x.ID)) && strings.HasPrefix(x.ID, opts.Prefix) {
				out = append(out, x)
			}
		}
		return tableIndex(snap, state.TableACLRoles), nil
	})
	return out, meta, err
}

// ACLRoleGet returns the role of ID id, or with byName the role named id:
// management reads any, a token the roles it links to (a missing role is
// a 404 for management, a 403 for others).
func (s *Server) ACLRoleGet(ctx context.Context, opts QueryOptions, id string, byName bool) (*structs.ACLRole, QueryMeta, error) {
	if !s.ACLEnabled() {
		return nil, s.refusedMeta(), ErrACLDisabled
	}
	mine, all := callerRoles(&opts)
	var out *structs.ACLRole
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		out = nil
		var x *structs.ACLRole
		var err error
		if byName {
			x, err = snap.ACLRoleByName(ws, id)
		} else {
			x, err = snap.ACLRoleByID(ws, id)
		}
		if err != nil {
			return 0, err
		}
		if x != nil && !all && !slices.Contains(mine, x.ID) {
			return 0, structs.ErrPermissionDenied
		}
		if x == nil {
			if !all {
				return 0, structs.ErrPermissionDenied
			}
			return tableIndex(snap, state.TableACLRoles), structs.NotFoundf("ACL role not found")
		}
		out = x
		return x.ModifyIndex, nil
	})
	return out, meta, err
}

// NamespaceList lists the namespaces whose name starts with opts.Prefix in
// which the caller holds any capability.
func (s *Server) NamespaceList(ctx context.Context, opts QueryOptions) ([]*structs.Namespace, QueryMeta, error) {
	var out []*structs.Namespace
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		out = nil
		nss, err := snap.Namespaces(ws, opts.Prefix)
		if err != nil {
			return 0, err
		}
		for _, ns := range nss {
			if opts.ACL.AllowNamespace(ns.Name) {
				out = append(out, ns)
			}
		}
		return tableIndex(snap, state.TableNamespaces), nil
	})
	return out, meta, err
}

// NamespaceGet returns namespace name, to a caller holding a capability
// in it.
func (s *Server) NamespaceGet(ctx context.Context, opts QueryOptions, name string) (*structs.Namespace, QueryMeta, error) {
	if !opts.ACL.AllowNamespace(name) {
		return nil, s.refusedMeta(), structs.ErrPermissionDenied
	}
	var out *structs.Namespace
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		ns, err := snap.NamespaceByName(ws, name)
		if err != nil {
			return 0, err
		}
		out = ns
		if ns == nil {
			return tableIndex(snap, state.TableNamespaces), structs.NotFoundf("namespace not found")
		}
		return ns.ModifyIndex, nil
	})
	return out, meta, err
}

// ACLAuthMethodList lists the auth methods (anyone may: a login needs
// them).
func (s *Server) ACLAuthMethodList(ctx context.Context, opts QueryOptions) ([]*structs.ACLAuthMethod, QueryMeta, error) {
	if !s.ACLEnabled() {
		return nil, s.refusedMeta(), ErrACLDisabled
	}
	var out []*structs.ACLAuthMethod
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		methods, err := snap.ACLAuthMethods(ws)
		out = methods
		return tableIndex(snap, state.TableACLAuthMethods), err
	})
	return out, meta, err
}

// ACLAuthMethodGet returns auth method name (management only).
func (s *Server) ACLAuthMethodGet(ctx context.Context, opts QueryOptions, name string) (*structs.ACLAuthMethod, QueryMeta, error) {
	if !s.ACLEnabled() {
		return nil, s.refusedMeta(), ErrACLDisabled
	}
	if err := requireManagement(&opts); err != nil {
		return nil, s.refusedMeta(), err
	}
	var out *structs.ACLAuthMethod
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		m, err := snap.ACLAuthMethodByName(ws, name)
		if err != nil {
			return 0, err
		}
		out = m
		if m == nil {
			return tableIndex(snap, state.TableACLAuthMethods), structs.NotFoundf("ACL auth-method not found")
		}
		return m.ModifyIndex, nil
	})
	return out, meta, err
}

// ACLBindingRuleList lists the binding rules whose ID starts with
// opts.Prefix (management only).
func (s *Server) ACLBindingRuleList(ctx context.Context, opts QueryOptions) ([]*structs.ACLBindingRule, QueryMeta, error) {
	if !s.ACLEnabled() {
		return nil, s.refusedMeta(), ErrACLDisabled
	}
	if err := requireManagement(&opts); err != nil {
		return nil, s.refusedMeta(), err
	}
	var out []*structs.ACLBindingRule
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		out = nil
		rules, err := snap.ACLBindingRules(ws)
		if err != nil {
			return 0, err
		}
		for _, x := range rules {
			if strings.HasPrefix(x.ID, opts.Prefix) {
				out = append(out, x)
			}
		}
		return tableIndex(snap, state.TableACLBindingRules), nil
	})
	return out, meta, err
}

// ACLBindingRuleGet returns binding rule id (management only).
func (s *Server) ACLBindingRuleGet(ctx context.Context, opts QueryOptions, id string) (*structs.ACLBindingRule, QueryMeta, error) {
	if !s.ACLEnabled() {
		return nil, s.refusedMeta(), ErrACLDisabled
	}
	if err := requireManagement(&opts); err != nil {
		return nil, s.refusedMeta(), err
	}
	var out *structs.ACLBindingRule
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		x, err := snap.ACLBindingRuleByID(ws, id)
		if err != nil {
			return 0, err
		}
		out = x
		if x == nil {
			return tableIndex(snap, state.TableACLBindingRules), structs.NotFoundf("ACL binding rule not found")
		}
		return x.ModifyIndex, nil
	})
	return out, meta, err
}
