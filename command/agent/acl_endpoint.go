package agent

import (
	"net/http"
	"slices"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/nomad"
	"github.com/drover-project/drover/nomad/structs"
)

type routeFn func(path string, rule authRule, fn handlerFunc)

// registerACLRoutes registers the /v1/acl/* and namespace endpoints.
func (h *HTTPServer) registerACLRoutes(get, put, del routeFn) {
	put("/v1/acl/bootstrap", public(), h.aclBootstrap)

	get("/v1/acl/policies", caller(), h.aclPoliciesList)
	get("/v1/acl/policy/self", caller(), h.aclPolicySelf)
	get("/v1/acl/policy/{name}", caller(), h.aclPolicyGet)
	put("/v1/acl/policy/{name}", management(), h.aclPolicyPut)
	del("/v1/acl/policy/{name}", management(), h.aclPolicyDelete)

	get("/v1/acl/tokens", management(), h.aclTokensList)
	put("/v1/acl/token", management(), h.aclTokenCreate)
	get("/v1/acl/token/self", caller(), h.aclTokenSelf)
	put("/v1/acl/token/onetime", caller(), h.aclOneTimeCreate)
	put("/v1/acl/token/onetime/exchange", public(), h.aclOneTimeExchange)
	get("/v1/acl/token/{id}", caller(), h.aclTokenGet)
	put("/v1/acl/token/{id}", management(), h.aclTokenPut)
	del("/v1/acl/token/{id}", management(), h.aclTokenDelete)

	get("/v1/acl/roles", caller(), h.aclRolesList)
	put("/v1/acl/role", management(), h.aclRoleCreate)
	get("/v1/acl/role/name/{name}", caller(), h.aclRoleGetByName)
	get("/v1/acl/role/{id}", caller(), h.aclRoleGet)
	put("/v1/acl/role/{id}", management(), h.aclRoleUpdate)
	del("/v1/acl/role/{id}", management(), h.aclRoleDelete)

	get("/v1/namespaces", caller(), h.namespacesList)
	put("/v1/namespace", management(), h.namespacePut)
	get("/v1/namespace/{name}", caller(), h.namespaceGet)
	put("/v1/namespace/{name}", management(), h.namespacePut)
	del("/v1/namespace/{name}", management(), h.namespaceDelete)

	h.registerACLAuthRoutes(get, put, del)
}

func writeMeta(index uint64) (any, uint64, error) {
	return &api.WriteMeta{LastIndex: index}, index, nil
}

func (h *HTTPServer) aclBootstrap(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req api.BootstrapRequest
	if r.ContentLength != 0 {
		if err := decodeBody(r, &req); err != nil {
			return nil, 0, err
		}
	}
	tok, index, err := h.srv.BootstrapACL(req.BootstrapSecret)
	if err != nil {
		return nil, 0, err
	}
	return tokenToAPI(tok), index, nil
}

func (h *HTTPServer) aclPoliciesList(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	return h.aclPolicyStubs(r, false)
}

func (h *HTTPServer) aclPolicySelf(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	return h.aclPolicyStubs(r, true)
}

// aclPolicyStubs lists the policies the caller may see: every policy for
// management, else the caller's own (self: only its own, always).
func (h *HTTPServer) aclPolicyStubs(r *http.Request, self bool) (any, uint64, error) {
	opts, err := h.aclQueryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	ps, meta, err := h.srv.ACLPolicyList(r.Context(), opts, self)
	if err != nil {
		return nil, metaIndex(meta), err
	}
	out := []*api.ACLPolicyListStub{}
	for _, p := range ps {
		out = append(out, &api.ACLPolicyListStub{Name: p.Name, Description: p.Description,
			JobACL: jobACLToAPI(p.JobACL), CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex})
	}
	return out, metaIndex(meta), nil
}

// aclQueryOptions are the request's read options with its prefix, for the
// ACL objects: ACLs disabled refuse the read before the options are parsed
// (the server checks again).
func (h *HTTPServer) aclQueryOptions(r *http.Request) (nomad.QueryOptions, error) {
	if !h.srv.ACLEnabled() {
		return nomad.QueryOptions{}, nomad.ErrACLDisabled
	}
	opts, err := queryOptions(r)
	opts.Prefix = prefixParam(r)
	return opts, err
}

func (h *HTTPServer) aclPolicyGet(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	opts, err := h.aclQueryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	p, meta, err := h.srv.ACLPolicyGet(r.Context(), opts, r.PathValue("name"))
	if err != nil {
		return nil, metaIndex(meta), err
	}
	return &api.ACLPolicy{Name: p.Name, Description: p.Description, Rules: p.Rules, JobACL: jobACLToAPI(p.JobACL),
		CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex}, metaIndex(meta), nil
}

func (h *HTTPServer) aclPolicyPut(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var in api.ACLPolicy
	if err := decodeBody(r, &in); err != nil {
		return nil, 0, err
	}
	name := r.PathValue("name")
	if in.Name != "" && in.Name != name {
		return nil, 0, badRequest("Policy name does not match request path")
	}
	p := &structs.ACLPolicy{Name: name, Description: in.Description, Rules: in.Rules}
	if in.JobACL != nil {
		p.JobACL = &structs.JobACL{Namespace: in.JobACL.Namespace, JobID: in.JobACL.JobID, Group: in.JobACL.Group, Task: in.JobACL.Task}
	}
	index, err := h.srv.UpsertACLPolicies(aclOf(r), []*structs.ACLPolicy{p})
	if err != nil {
		return nil, 0, err
	}
	return writeMeta(index)
}

func (h *HTTPServer) aclPolicyDelete(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	index, err := h.srv.DeleteACLPolicies(aclOf(r), []string{r.PathValue("name")})
	if err != nil {
		return nil, 0, err
	}
	return writeMeta(index)
}

func jobACLToAPI(j *structs.JobACL) *api.JobACL {
	if j == nil {
		return nil
	}
	return &api.JobACL{Namespace: j.Namespace, JobID: j.JobID, Group: j.Group, Task: j.Task}
}

func tokenToAPI(t *structs.ACLToken) *api.ACLToken {
	out := &api.ACLToken{
		AccessorID: t.AccessorID, SecretID: t.SecretID, Name: t.Name, Type: t.Type,
		Policies: slices.Clone(t.Policies), Global: t.Global, CreateTime: t.CreateTime,
		ExpirationTime: t.ExpirationTime, ExpirationTTL: t.ExpirationTTL,
		CreateIndex: t.CreateIndex, ModifyIndex: t.ModifyIndex,
	}
	for _, l := range t.Roles {
		out.Roles = append(out.Roles, &api.ACLTokenRoleLink{ID: l.ID, Name: l.Name})
	}
	return out
}

func tokenFromAPI(t *api.ACLToken) *structs.ACLToken {
	out := &structs.ACLToken{
		AccessorID: t.AccessorID, SecretID: t.SecretID, Name: t.Name, Type: t.Type,
		Policies: slices.Clone(t.Policies), Global: t.Global,
		ExpirationTime: t.ExpirationTime, ExpirationTTL: t.ExpirationTTL,
	}
	for _, l := range t.Roles {
		if l != nil {
			out.Roles = append(out.Roles, &structs.ACLTokenRoleLink{ID: l.ID, Name: l.Name})
		}
	}
	return out
}

func (h *HTTPServer) aclTokensList(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	opts, err := h.aclQueryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	ts, meta, err := h.srv.ACLTokenList(r.Context(), opts)
	if err != nil {
		return nil, metaIndex(meta), err
	}
	out := []*api.ACLTokenListStub{}
	for _, t := range ts {
		a := tokenToAPI(t)
		out = append(out, &api.ACLTokenListStub{AccessorID: a.AccessorID, Name: a.Name, Type: a.Type,
			Policies: a.Policies, Roles: a.Roles, Global: a.Global, CreateTime: a.CreateTime,
			ExpirationTime: a.ExpirationTime, CreateIndex: a.CreateIndex, ModifyIndex: a.ModifyIndex})
	}
	return out, metaIndex(meta), nil
}

func (h *HTTPServer) aclTokenCreate(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var in api.ACLToken
	if err := decodeBody(r, &in); err != nil {
		return nil, 0, err
	}
	if in.AccessorID != "" {
		return nil, 0, badRequest("cannot specify Accessor ID")
	}
	tok, index, err := h.srv.UpsertACLToken(aclOf(r), tokenFromAPI(&in))
	if err != nil {
		return nil, 0, err
	}
	return tokenToAPI(tok), index, nil
}

func (h *HTTPServer) aclTokenPut(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var in api.ACLToken
	if err := decodeBody(r, &in); err != nil {
		return nil, 0, err
	}
	id := r.PathValue("id")
	if in.AccessorID != "" && in.AccessorID != id {
		return nil, 0, badRequest("Token accessor ID does not match request path")
	}
	in.AccessorID = id
	tok, index, err := h.srv.UpsertACLToken(aclOf(r), tokenFromAPI(&in))
	if err != nil {
		return nil, 0, err
	}
	return tokenToAPI(tok), index, nil
}

func (h *HTTPServer) aclTokenDelete(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	index, err := h.srv.DeleteACLTokens(aclOf(r), []string{r.PathValue("id")})
	if err != nil {
		return nil, 0, err
	}
	return writeMeta(index)
}

// aclTokenGet reads a token: management reads any, a token reads itself.
func (h *HTTPServer) aclTokenGet(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	if !h.srv.ACLEnabled() {
		return nil, 0, nomad.ErrACLDisabled
	}
	id := r.PathValue("id")
	// Checked before the query parameters, as ever; the server checks again.
	if self := identityOf(r).Token; !aclOf(r).IsManagement() && (self == nil || self.AccessorID != id) {
		return nil, 0, structs.ErrPermissionDenied
	}
	opts, err := queryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	t, meta, err := h.srv.ACLTokenGet(r.Context(), opts, id)
	if err != nil {
		return nil, metaIndex(meta), err
	}
	return tokenToAPI(t), metaIndex(meta), nil
}

func (h *HTTPServer) aclTokenSelf(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	if !h.srv.ACLEnabled() {
		return nil, 0, nomad.ErrACLDisabled
	}
	if identityOf(r).Token == nil { // before the query parameters, as ever
		return nil, 0, structs.ErrTokenNotFound
	}
	opts, err := queryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	t, meta, err := h.srv.ACLTokenSelf(r.Context(), opts)
	if err != nil {
		return nil, metaIndex(meta), err
	}
	return tokenToAPI(t), metaIndex(meta), nil
}

func (h *HTTPServer) aclOneTimeCreate(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	if !h.srv.ACLEnabled() {
		return nil, 0, nomad.ErrACLDisabled
	}
	ott, index, err := h.srv.CreateOneTimeToken(identityOf(r))
	if err != nil {
		return nil, 0, err
	}
	return &api.OneTimeTokenUpsertResponse{OneTimeToken: &api.OneTimeToken{
		OneTimeSecretID: ott.OneTimeSecretID, AccessorID: ott.AccessorID, ExpiresAt: ott.ExpiresAt,
		CreateIndex: ott.CreateIndex, ModifyIndex: ott.ModifyIndex,
	}}, index, nil
}

func (h *HTTPServer) aclOneTimeExchange(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var in api.OneTimeTokenExchangeRequest
	if err := decodeBody(r, &in); err != nil {
		return nil, 0, err
	}
	tok, index, err := h.srv.ExchangeOneTimeToken(in.OneTimeSecretID)
	if err != nil {
		return nil, 0, err
	}
	return &api.OneTimeTokenExchangeResponse{Token: tokenToAPI(tok)}, index, nil
}
