package agent

import (
	"net/http"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/helper/apiconv"
	"github.com/drover-project/drover/nomad/structs"
)

// registerACLAuthRoutes registers the auth method, binding rule and
// client introduction endpoints. Listing auth methods is public, as in
// Nomad (a login page needs the names); the rest needs management, and a
// client introduction token needs node:write.
func (h *HTTPServer) registerACLAuthRoutes(get, put, del routeFn) {
	get("/v1/acl/auth-methods", public(), h.aclAuthMethodsList)
	put("/v1/acl/auth-method", management(), h.aclAuthMethodCreate)
	get("/v1/acl/auth-method/{name}", management(), h.aclAuthMethodGet)
	put("/v1/acl/auth-method/{name}", management(), h.aclAuthMethodUpdate)
	del("/v1/acl/auth-method/{name}", management(), h.aclAuthMethodDelete)

	get("/v1/acl/binding-rules", management(), h.aclBindingRulesList)
	put("/v1/acl/binding-rule", management(), h.aclBindingRuleCreate)
	get("/v1/acl/binding-rule/{id}", management(), h.aclBindingRuleGet)
	put("/v1/acl/binding-rule/{id}", management(), h.aclBindingRuleUpdate)
	del("/v1/acl/binding-rule/{id}", management(), h.aclBindingRuleDelete)

	put("/v1/acl/identity/client-introduction-token", nodeWrite(), h.aclClientIntroductionToken)
}

func (h *HTTPServer) aclAuthMethodsList(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	opts, err := h.aclQueryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	methods, meta, err := h.srv.ACLAuthMethodList(r.Context(), opts)
	if err != nil {
		return nil, metaIndex(meta), err
	}
	out := []*api.ACLAuthMethodListStub{}
	for _, m := range methods {
		out = append(out, &api.ACLAuthMethodListStub{Name: m.Name, Type: m.Type, Default: m.Default,
			CreateIndex: m.CreateIndex, ModifyIndex: m.ModifyIndex})
	}
	return out, metaIndex(meta), nil
}

func (h *HTTPServer) aclAuthMethodGet(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	opts, err := h.aclQueryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	m, meta, err := h.srv.ACLAuthMethodGet(r.Context(), opts, r.PathValue("name"))
	if err != nil {
		return nil, metaIndex(meta), err
	}
	return authMethodToAPI(m), metaIndex(meta), nil
}

func (h *HTTPServer) aclAuthMethodCreate(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var in api.ACLAuthMethod
	if err := decodeBody(r, &in); err != nil {
		return nil, 0, err
	}
	m, index, err := h.srv.UpsertACLAuthMethod(aclOf(r), authMethodFromAPI(&in), true)
	if err != nil {
		return nil, 0, err
	}
	return authMethodToAPI(m), index, nil
}

func (h *HTTPServer) aclAuthMethodUpdate(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var in api.ACLAuthMethod
	if err := decodeBody(r, &in); err != nil {
		return nil, 0, err
	}
	name := r.PathValue("name")
	if in.Name != "" && in.Name != name {
		return nil, 0, badRequest("ACL auth-method name does not match request path")
	}
	in.Name = name
	m, index, err := h.srv.UpsertACLAuthMethod(aclOf(r), authMethodFromAPI(&in), false)
	if err != nil {
		return nil, 0, err
	}
	return authMethodToAPI(m), index, nil
}

func (h *HTTPServer) aclAuthMethodDelete(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	index, err := h.srv.DeleteACLAuthMethods(aclOf(r), []string{r.PathValue("name")})
	if err != nil {
		return nil, 0, err
	}
	return writeMeta(index)
}

func (h *HTTPServer) aclBindingRulesList(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	opts, err := h.aclQueryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	rules, meta, err := h.srv.ACLBindingRuleList(r.Context(), opts)
	if err != nil {
		return nil, metaIndex(meta), err
	}
	out := []*api.ACLBindingRuleListStub{}
	for _, x := range rules {
		out = append(out, &api.ACLBindingRuleListStub{ID: x.ID, Description: x.Description,
			AuthMethod: x.AuthMethod, CreateIndex: x.CreateIndex, ModifyIndex: x.ModifyIndex})
	}
	return out, metaIndex(meta), nil
}

func (h *HTTPServer) aclBindingRuleGet(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	opts, err := h.aclQueryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	x, meta, err := h.srv.ACLBindingRuleGet(r.Context(), opts, r.PathValue("id"))
	if err != nil {
		return nil, metaIndex(meta), err
	}
	return bindingRuleToAPI(x), metaIndex(meta), nil
}

func (h *HTTPServer) aclBindingRuleCreate(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var in api.ACLBindingRule
	if err := decodeBody(r, &in); err != nil {
		return nil, 0, err
	}
	x, index, err := h.srv.UpsertACLBindingRule(aclOf(r), bindingRuleFromAPI(&in), true)
	if err != nil {
		return nil, 0, err
	}
	return bindingRuleToAPI(x), index, nil
}

func (h *HTTPServer) aclBindingRuleUpdate(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var in api.ACLBindingRule
	if err := decodeBody(r, &in); err != nil {
		return nil, 0, err
	}
	id := r.PathValue("id")
	if in.ID != "" && in.ID != id {
		return nil, 0, badRequest("ACL binding rule ID does not match request path")
	}
	in.ID = id
	x, index, err := h.srv.UpsertACLBindingRule(aclOf(r), bindingRuleFromAPI(&in), false)
	if err != nil {
		return nil, 0, err
	}
	return bindingRuleToAPI(x), index, nil
}

func (h *HTTPServer) aclBindingRuleDelete(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	index, err := h.srv.DeleteACLBindingRules(aclOf(r), []string{r.PathValue("id")})
	if err != nil {
		return nil, 0, err
	}
	return writeMeta(index)
}

// aclClientIntroductionToken signs a client introduction token. It writes
// nothing to raft; the index it reports is the store's latest.
func (h *HTTPServer) aclClientIntroductionToken(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var in api.ACLIdentityClientIntroductionTokenRequest
	if r.ContentLength != 0 {
		if err := decodeBody(r, &in); err != nil {
			return nil, 0, err
		}
	}
	tok, err := h.srv.CreateClientIntroductionToken(aclOf(r), in.NodeName, in.NodePool, in.TTL)
	if err != nil {
		return nil, 0, err
	}
	return &api.ACLIdentityClientIntroductionTokenResponse{JWT: tok}, max(h.srv.LatestIndex(), 1), nil
}

func authMethodToAPI(m *structs.ACLAuthMethod) *api.ACLAuthMethod {
	return &api.ACLAuthMethod{Name: m.Name, Type: m.Type, TokenLocality: m.TokenLocality,
		TokenNameFormat: m.TokenNameFormat, MaxTokenTTL: m.MaxTokenTTL, Default: m.Default,
		Config: apiconv.AuthMethodConfigToAPI(m.Config), CreateTime: m.CreateTime, ModifyTime: m.ModifyTime,
		CreateIndex: m.CreateIndex, ModifyIndex: m.ModifyIndex}
}

func authMethodFromAPI(in *api.ACLAuthMethod) *structs.ACLAuthMethod {
	return &structs.ACLAuthMethod{Name: in.Name, Type: in.Type, TokenLocality: in.TokenLocality,
		TokenNameFormat: in.TokenNameFormat, MaxTokenTTL: in.MaxTokenTTL, Default: in.Default,
		Config: apiconv.AuthMethodConfigFromAPI(in.Config)}
}

func bindingRuleToAPI(x *structs.ACLBindingRule) *api.ACLBindingRule {
	return &api.ACLBindingRule{ID: x.ID, Description: x.Description, AuthMethod: x.AuthMethod,
		Selector: x.Selector, BindType: x.BindType, BindName: x.BindName, CreateTime: x.CreateTime,
		ModifyTime: x.ModifyTime, CreateIndex: x.CreateIndex, ModifyIndex: x.ModifyIndex}
}

func bindingRuleFromAPI(in *api.ACLBindingRule) *structs.ACLBindingRule {
	return &structs.ACLBindingRule{ID: in.ID, Description: in.Description, AuthMethod: in.AuthMethod,
		Selector: in.Selector, BindType: in.BindType, BindName: in.BindName}
}
