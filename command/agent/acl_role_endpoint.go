package agent

import (
	"net/http"
	"slices"

	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/nomad"
	"github.com/drover-project/drover/nomad/state"
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

// callerRoles returns the IDs of the roles the request's token links to;
// all is true for management.
func callerRoles(r *http.Request) (ids []string, all bool) {
	if aclOf(r).IsManagement() {
		return nil, true
	}
	if t := identityOf(r).Token; t != nil {
		for _, l := range t.Roles {
			ids = append(ids, l.ID)
		}
	}
	return ids, false
}

func (h *HTTPServer) aclRolesList(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	if !h.srv.ACLEnabled() {
		return nil, 0, nomad.ErrACLDisabled
	}
	prefix := prefixParam(r)
	mine, all := callerRoles(r)
	return h.blockingQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
		roles, err := snap.ACLRoles(ws)
		if err != nil {
			return nil, 0, err
		}
		out := []*api.ACLRoleListStub{}
		for _, x := range roles {
			if (all || slices.Contains(mine, x.ID)) && hasPrefix(x.ID, prefix) {
				a := roleToAPI(x)
				out = append(out, &api.ACLRoleListStub{ID: a.ID, Name: a.Name, Description: a.Description,
					Policies: a.Policies, CreateIndex: a.CreateIndex, ModifyIndex: a.ModifyIndex})
			}
		}
		return out, tableIndex(snap, state.TableACLRoles), nil
	})
}

func (h *HTTPServer) aclRoleGet(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	return h.aclRoleRead(r, func(snap *state.Snapshot, ws memdb.WatchSet) (*structs.ACLRole, error) {
		return snap.ACLRoleByID(ws, r.PathValue("id"))
	})
}

func (h *HTTPServer) aclRoleGetByName(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	return h.aclRoleRead(r, func(snap *state.Snapshot, ws memdb.WatchSet) (*structs.ACLRole, error) {
		return snap.ACLRoleByName(ws, r.PathValue("name"))
	})
}

// aclRoleRead reads one role: management reads any, a token the roles it
// links to.
func (h *HTTPServer) aclRoleRead(r *http.Request, find func(*state.Snapshot, memdb.WatchSet) (*structs.ACLRole, error)) (any, uint64, error) {
	if !h.srv.ACLEnabled() {
		return nil, 0, nomad.ErrACLDisabled
	}
	mine, all := callerRoles(r)
	return h.blockingQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
		x, err := find(snap, ws)
		if err != nil {
			return nil, 0, err
		}
		if x != nil && !all && !slices.Contains(mine, x.ID) {
			return nil, 0, structs.ErrPermissionDenied
		}
		if x == nil {
			if !all {
				return nil, 0, structs.ErrPermissionDenied
			}
			return nil, tableIndex(snap, state.TableACLRoles), notFound("ACL role not found")
		}
		return roleToAPI(x), x.ModifyIndex, nil
	})
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
	x, index, err := h.srv.UpsertACLRole(roleFromAPI(&in), true)
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
	x, index, err := h.srv.UpsertACLRole(roleFromAPI(&in), false)
	if err != nil {
		return nil, 0, err
	}
	return roleToAPI(x), index, nil
}

func (h *HTTPServer) aclRoleDelete(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	index, err := h.srv.DeleteACLRoles([]string{r.PathValue("id")})
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
	prefix := prefixParam(r)
	a := aclOf(r)
	return h.blockingQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
		nss, err := snap.Namespaces(ws, prefix)
		if err != nil {
			return nil, 0, err
		}
		out := []*api.Namespace{}
		for _, ns := range nss {
			if a.AllowNamespace(ns.Name) {
				out = append(out, namespaceToAPI(ns))
			}
		}
		return out, tableIndex(snap, state.TableNamespaces), nil
	})
}

func (h *HTTPServer) namespaceGet(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	name := r.PathValue("name")
	if !aclOf(r).AllowNamespace(name) {
		return nil, 0, structs.ErrPermissionDenied
	}
	return h.blockingQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
		ns, err := snap.NamespaceByName(ws, name)
		if err != nil {
			return nil, 0, err
		}
		if ns == nil {
			return nil, tableIndex(snap, state.TableNamespaces), notFound("namespace not found")
		}
		return namespaceToAPI(ns), ns.ModifyIndex, nil
	})
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
	index, err := h.srv.UpsertNamespaces([]*structs.Namespace{{Name: in.Name, Description: in.Description,
		Quota: in.Quota, Meta: in.Meta}})
	if err != nil {
		return nil, 0, err
	}
	return writeMeta(index)
}

func (h *HTTPServer) namespaceDelete(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	index, err := h.srv.DeleteNamespaces([]string{r.PathValue("name")})
	if err != nil {
		return nil, 0, err
	}
	return writeMeta(index)
}
