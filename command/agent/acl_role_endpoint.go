package agent

import (
	"net/http"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/nomad/structs"
)

func roleToAPI(x *structs.ACLRole) *api.ACLRole {
	out := &api.ACLRole{ID: x.ID, Name: x.Name, Description: x.Description,
		CreateIndex: x.CreateIndex, ModifyIndex: x.ModifyIndex}
	for _, p := range x.Policies {
		out.Policies = append(out.Policies, &api.ACLRolePolicyLink{Name: p.Name})
	}
	return out
}

func (h *HTTPServer) aclRolesList(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	opts, err := h.aclQueryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	roles, meta, err := h.srv.ACLRoleList(r.Context(), opts)
	if err != nil {
		return nil, metaIndex(meta), err
	}
	out := []*api.ACLRoleListStub{}
	for _, x := range roles {
		a := roleToAPI(x)
		out = append(out, &api.ACLRoleListStub{ID: a.ID, Name: a.Name, Description: a.Description,
			Policies: a.Policies, CreateIndex: a.CreateIndex, ModifyIndex: a.ModifyIndex})
	}
	return out, metaIndex(meta), nil
}

func (h *HTTPServer) aclRoleGet(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	return h.aclRoleRead(r, r.PathValue("id"), false)
}

func (h *HTTPServer) aclRoleGetByName(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	return h.aclRoleRead(r, r.PathValue("name"), true)
}

// aclRoleRead reads one role: management reads any, a token the roles it
// links to.
func (h *HTTPServer) aclRoleRead(r *http.Request, key string, byName bool) (any, uint64, error) {
	opts, err := h.aclQueryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	x, meta, err := h.srv.ACLRoleGet(r.Context(), opts, key, byName)
	if err != nil {
		return nil, metaIndex(meta), err
	}
	return roleToAPI(x), metaIndex(meta), nil
}

func roleFromAPI(in *api.ACLRole) *structs.ACLRole {
	out := &structs.ACLRole{ID: in.ID, Name: in.Name, Description: in.Description}
	for _, p := range in.Policies {
		if p != nil {
			out.Policies = append(out.Policies, &structs.ACLRolePolicyLink{Name: p.Name})
		}
	}
	return out
}

func (h *HTTPServer) aclRoleCreate(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var in api.ACLRole
	if err := decodeBody(r, &in); err != nil {
		return nil, 0, err
	}
	x, index, err := h.srv.UpsertACLRole(aclOf(r), roleFromAPI(&in), true)
	if err != nil {
		return nil, 0, err
	}
	return roleToAPI(x), index, nil
}

func (h *HTTPServer) aclRoleUpdate(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var in api.ACLRole
	if err := decodeBody(r, &in); err != nil {
		return nil, 0, err
	}
	id := r.PathValue("id")
	if in.ID != "" && in.ID != id {
		return nil, 0, badRequest("ACL role ID does not match path")
	}
	in.ID = id
	x, index, err := h.srv.UpsertACLRole(aclOf(r), roleFromAPI(&in), false)
	if err != nil {
		return nil, 0, err
	}
	return roleToAPI(x), index, nil
}

func (h *HTTPServer) aclRoleDelete(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	index, err := h.srv.DeleteACLRoles(aclOf(r), []string{r.PathValue("id")})
	if err != nil {
		return nil, 0, err
	}
	return writeMeta(index)
}

func namespaceToAPI(ns *structs.Namespace) *api.Namespace {
	return &api.Namespace{Name: ns.Name, Description: ns.Description, Quota: ns.Quota, Meta: ns.Meta,
		CreateIndex: ns.CreateIndex, ModifyIndex: ns.ModifyIndex}
}

// namespacesList lists the namespaces the caller holds any capability in.
func (h *HTTPServer) namespacesList(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	opts, err := queryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	opts.Prefix = prefixParam(r)
	nss, meta, err := h.srv.NamespaceList(r.Context(), opts)
	if err != nil {
		return nil, metaIndex(meta), err
	}
	out := []*api.Namespace{}
	for _, ns := range nss {
		out = append(out, namespaceToAPI(ns))
	}
	return out, metaIndex(meta), nil
}

func (h *HTTPServer) namespaceGet(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	name := r.PathValue("name")
	if !aclOf(r).AllowNamespace(name) { // before the query parameters, as ever; the server checks again
		return nil, 0, structs.ErrPermissionDenied
	}
	opts, err := queryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	ns, meta, err := h.srv.NamespaceGet(r.Context(), opts, name)
	if err != nil {
		return nil, metaIndex(meta), err
	}
	return namespaceToAPI(ns), metaIndex(meta), nil
}

func (h *HTTPServer) namespacePut(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var in api.Namespace
	if err := decodeBody(r, &in); err != nil {
		return nil, 0, err
	}
	if name := r.PathValue("name"); name != "" {
		if in.Name != "" && in.Name != name {
			return nil, 0, badRequest("Namespace name does not match request path")
		}
		in.Name = name
	}
	index, err := h.srv.UpsertNamespaces(aclOf(r), []*structs.Namespace{{Name: in.Name, Description: in.Description,
		Quota: in.Quota, Meta: in.Meta}})
	if err != nil {
		return nil, 0, err
	}
	return writeMeta(index)
}

func (h *HTTPServer) namespaceDelete(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	index, err := h.srv.DeleteNamespaces(aclOf(r), []string{r.PathValue("name")})
	if err != nil {
		return nil, 0, err
	}
	return writeMeta(index)
}
