package agent

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/nomad"
	"github.com/drover-project/drover/nomad/structs"
)

// The variables endpoints are thin: they decode, call the server (which
// checks the ACL and namespace itself) and encode. Routes use the caller()
// rule for that reason.

// registerVariableRoutes adds /v1/vars and /v1/var/{path}.
func (h *HTTPServer) registerVariableRoutes(get, put, del func(string, authRule, handlerFunc)) {
	get("/v1/vars", caller(), h.varsList)
	get("/v1/var/{path...}", caller(), h.varGet)
	put("/v1/var/{path...}", caller(), h.varPut)
	del("/v1/var/{path...}", caller(), h.varDelete)
}

// varsList serves GET /v1/vars: prefix, filter, per_page and next_token
// (blocking).
func (h *HTTPServer) varsList(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	filter, err := parseFilter(r)
	if err != nil {
		return nil, 0, err
	}
	opts, err := queryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	opts.Prefix = prefixParam(r)
	metas, meta, err := h.srv.VariableList(r.Context(), opts)
	if err != nil {
		return nil, 0, err
	}
	list := make([]*api.VariableMetadata, 0, len(metas))
	for i := range metas {
		list = append(list, variableMetaToAPI(&metas[i]))
	}
	list, err = applyFilter(filter, list)
	if err != nil {
		return nil, 0, err
	}
	page, next, err := pageVariables(r, list)
	if err != nil {
		return nil, 0, err
	}
	setNextToken(w, next)
	return page, metaIndex(meta), nil
}

// pageVariables cuts the page of list (sorted by namespace and path) that
// per_page and next_token ask for; a token is "<namespace>.<path>" of the
// page's first variable (paths and namespaces hold no '.').
func pageVariables(r *http.Request, list []*api.VariableMetadata) ([]*api.VariableMetadata, string, error) {
	q := r.URL.Query()
	perPage := 0
	if v := q.Get("per_page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, "", badRequest("Invalid per_page %q: must be a non-negative integer", v)
		}
		perPage = n
	}
	token := func(m *api.VariableMetadata) string { return m.Namespace + "." + m.Path }
	if tok := q.Get("next_token"); tok != "" {
		// Compared as (namespace, path), the list's order: as one string,
		// "prod-eu.a" would sort before "prod.b".
		ns, path, _ := strings.Cut(tok, ".")
		before := func(m *api.VariableMetadata) bool {
			if m.Namespace != ns {
				return m.Namespace < ns
			}
			return m.Path < path
		}
		i := 0
		for i < len(list) && before(list[i]) {
			i++
		}
		list = list[i:]
	}
	if perPage == 0 || len(list) <= perPage {
		return list, "", nil
	}
	return list[:perPage], token(list[perPage]), nil
}

// varGet serves GET /v1/var/{path} (blocking); 404 "variable not found".
func (h *HTTPServer) varGet(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	opts, err := queryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	v, meta, err := h.srv.VariableGet(r.Context(), opts, r.PathValue("path"))
	if err != nil {
		return nil, 0, err
	}
	index := metaIndex(meta)
	if v == nil {
		return nil, index, notFound("variable not found")
	}
	return variableToAPI(v), index, nil
}

// varPut serves PUT /v1/var/{path}: a write, or with ?lock-acquire,
// ?lock-renew or ?lock-release a lock operation; ?cas= is the check
// index. A conflict answers 409 with the stored variable.
func (h *HTTPServer) varPut(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var in api.Variable
	if err := decodeBody(r, &in); err != nil {
		return nil, 0, err
	}
	q := r.URL.Query()
	ns := q.Get("namespace")
	if ns == "" {
		ns = in.Namespace
	}
	if ns == "" {
		ns = namespace(r)
	}
	write := &nomad.VariableWrite{Op: structs.VarOpSet, Namespace: ns, Path: r.PathValue("path"), Items: in.Items}
	if in.Lock != nil {
		write.LockID = in.Lock.ID
	}
	ops := 0
	for _, op := range []structs.VarOp{structs.VarOpLockAcquire, structs.VarOpLockRelease, "lock-renew"} {
		if q.Has(string(op)) {
			write.Op = op
			ops++
		}
	}
	if ops > 1 {
		return nil, 0, badRequest("multiple lock operations requested")
	}
	if v := q.Get("cas"); v != "" {
		idx, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, 0, badRequest("failed to parse cas value %q: %v", v, err)
		}
		write.CheckIndex = &idx
	}
	switch write.Op {
	case "lock-renew":
		meta, err := h.srv.RenewVariableLock(aclOf(r), ns, write.Path, write.LockID)
		if err != nil {
			return conflictAnswer(err)
		}
		return variableMetaToAPI(meta), 0, nil
	case structs.VarOpLockAcquire:
		lock, err := lockFromAPI(in.Lock)
		if err != nil {
			return nil, 0, err
		}
		write.Lock, write.LockID = lock, ""
	}
	v, index, err := h.srv.WriteVariable(aclOf(r), write)
	if err != nil {
		return conflictAnswer(err)
	}
	return variableToAPI(v), index, nil
}

// varDelete serves DELETE /v1/var/{path} (?cas=): 204 on success.
func (h *HTTPServer) varDelete(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	write := &nomad.VariableWrite{Op: structs.VarOpDelete, Namespace: namespace(r), Path: r.PathValue("path")}
	if v := r.URL.Query().Get("cas"); v != "" {
		idx, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return nil, 0, badRequest("failed to parse cas value %q: %v", v, err)
		}
		write.CheckIndex = &idx
	}
	_, index, err := h.srv.WriteVariable(aclOf(r), write)
	if err != nil {
		return conflictAnswer(err)
	}
	return noContent{}, index, nil
}

// conflictAnswer turns a *nomad.VariableConflictError into the 409 answer
// the api decodes (the stored variable); other errors pass through.
func conflictAnswer(err error) (any, uint64, error) {
	var ce *nomad.VariableConflictError
	if errors.As(err, &ce) {
		return &variableConflict{Variable: variableToAPI(ce.Conflict)}, 0, nil
	}
	return nil, 0, err
}

// variableConflict is a 409 answer.
type variableConflict struct{ *api.Variable }

func (variableConflict) StatusCode() int { return http.StatusConflict }

// noContent is a 204 answer without a body.
type noContent struct{}

func (noContent) StatusCode() int { return http.StatusNoContent }

// lockFromAPI reads the TTL and lock delay of an acquire (absent: the
// server's defaults).
func lockFromAPI(l *api.VariableLock) (*structs.VariableLock, error) {
	out := &structs.VariableLock{}
	if l == nil {
		return out, nil
	}
	var err error
	if l.TTL != "" {
		if out.TTL, err = time.ParseDuration(l.TTL); err != nil {
			return nil, badRequest("Invalid lock TTL %q: %v", l.TTL, err)
		}
	}
	if l.LockDelay != "" {
		if out.LockDelay, err = time.ParseDuration(l.LockDelay); err != nil {
			return nil, badRequest("Invalid lock delay %q: %v", l.LockDelay, err)
		}
	}
	return out, nil
}

// lockToAPI converts a lock (nil stays nil).
func lockToAPI(l *structs.VariableLock) *api.VariableLock {
	if l == nil {
		return nil
	}
	return &api.VariableLock{ID: l.ID, TTL: l.TTL.String(), LockDelay: l.LockDelay.String()}
}

func variableMetaToAPI(m *structs.VariableMeta) *api.VariableMetadata {
	return &api.VariableMetadata{
		Namespace: m.Namespace, Path: m.Path, CreateIndex: m.CreateIndex, ModifyIndex: m.ModifyIndex,
		CreateTime: m.CreateTime, ModifyTime: m.ModifyTime, Lock: lockToAPI(m.Lock),
	}
}

func variableToAPI(v *structs.VariableDecrypted) *api.Variable {
	return &api.Variable{
		Namespace: v.Namespace, Path: v.Path, CreateIndex: v.CreateIndex, ModifyIndex: v.ModifyIndex,
		CreateTime: v.CreateTime, ModifyTime: v.ModifyTime, Items: v.Items, Lock: lockToAPI(v.Lock),
	}
}
