package agent

import (
	"context"
	"net/http"
	"strings"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad"
	"github.com/drover-project/drover/nomad/structs"
)

// Every route declares an authRule when it is registered (see routes.go);
// TestRoutes_EveryRouteDeclaresAuth fails on a route without one. The rule
// is checked before the handler runs, with the ACL of the request's token;
// the handler finds the ACL in the request context (aclOf) for the checks
// that depend on what it reads (list filtering, the namespace of a job in a
// request body).

// authKind says what a route requires.
type authKind int

const (
	authUnset authKind = iota
	// authPublic: no token needed (status, regions, JWKS, bootstrap).
	authPublic
	// authNodeSecret: a client agent's internal endpoint; the handler
	// checks the node's secret ID.
	authNodeSecret
	// authCaller: any caller, anonymous included; the handler scopes its
	// answer to the caller (its own token, its own policies, the
	// namespaces it may see).
	authCaller
	// authNamespace: cap in the request's namespace; for "*", cap in some
	// namespace, and the handler filters what it returns per namespace.
	authNamespace
	// authObject: cap in the namespace of the object the path names
	// (found by nsOf); a missing object is the handler's 404.
	authObject
	// authInHandler: cap in some namespace, and the handler checks the
	// namespace it learns from the body (job registration).
	authInHandler
	authNodeRead
	authNodeWrite
	authAgentRead
	authAgentWrite
	authOperatorRead
	authOperatorWrite
	authManagement
	// authPluginRead / authPluginList: the plugin policy (CSI plugins).
	authPluginRead
	authPluginList
)

// authRule is the authorization requirement of one route.
type authRule struct {
	kind authKind
	cap  string
	// nsOf returns the namespace of the object a request names, and
	// whether it exists (authObject only).
	nsOf func(srv *nomad.Server, r *http.Request) (string, bool)
}

func public() authRule              { return authRule{kind: authPublic} }
func nodeSecret() authRule          { return authRule{kind: authNodeSecret} }
func caller() authRule              { return authRule{kind: authCaller} }
func nsCap(cap string) authRule     { return authRule{kind: authNamespace, cap: cap} }
func inHandler(cap string) authRule { return authRule{kind: authInHandler, cap: cap} }
func nodeRead() authRule            { return authRule{kind: authNodeRead} }
func nodeWrite() authRule           { return authRule{kind: authNodeWrite} }
func agentRead() authRule           { return authRule{kind: authAgentRead} }
func agentWrite() authRule          { return authRule{kind: authAgentWrite} }
func operatorRead() authRule        { return authRule{kind: authOperatorRead} }
func operatorWrite() authRule       { return authRule{kind: authOperatorWrite} }
func management() authRule          { return authRule{kind: authManagement} }
func pluginRead() authRule          { return authRule{kind: authPluginRead} }
func pluginList() authRule          { return authRule{kind: authPluginList} }
func objectCap(cap string, nsOf func(*nomad.Server, *http.Request) (string, bool)) authRule {
	return authRule{kind: authObject, cap: cap, nsOf: nsOf}
}

// Namespace finders for authObject rules: the server looks the object up.

func allocNS(param string) func(*nomad.Server, *http.Request) (string, bool) {
	return func(srv *nomad.Server, r *http.Request) (string, bool) { return srv.AllocNamespace(r.PathValue(param)) }
}

func evalNS(srv *nomad.Server, r *http.Request) (string, bool) {
	return srv.EvalNamespace(r.PathValue("id"))
}

func deploymentNS(srv *nomad.Server, r *http.Request) (string, bool) {
	return srv.DeploymentNamespace(r.PathValue("id"))
}

type ctxKey int

const (
	aclKey ctxKey = iota
	identityKey
)

// aclOf returns the ACL the request was authorized with (nil when ACLs are
// off, which allows everything).
func aclOf(r *http.Request) *acl.ACL {
	a, _ := r.Context().Value(aclKey).(*acl.ACL)
	return a
}

// identityOf returns who the request acts as (never nil after authorize).
func identityOf(r *http.Request) *nomad.Identity {
	id, _ := r.Context().Value(identityKey).(*nomad.Identity)
	if id == nil {
		return &nomad.Identity{}
	}
	return id
}

// requestToken returns the secret of the request: X-Nomad-Token, else an
// "Authorization: Bearer" header.
func requestToken(r *http.Request) string {
	if t := r.Header.Get("X-Nomad-Token"); t != "" {
		return strings.TrimSpace(t)
	}
	if h := r.Header.Get("Authorization"); len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// authorize wraps fn with rule: it resolves the request's token, refuses
// the request with Nomad's 403 when the rule is not met, and otherwise runs
// fn with the ACL in the request context.
func (h *HTTPServer) authorize(rule authRule, fn handlerFunc) handlerFunc {
	if rule.kind == authUnset {
		panic("agent: route registered without an authorization rule")
	}
	return func(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
		if rule.kind == authPublic || rule.kind == authNodeSecret {
			return fn(w, r)
		}
		a, id, err := h.srv.ResolveToken(requestToken(r))
		if err != nil {
			return nil, 0, err
		}
		if err := h.check(rule, a, r); err != nil {
			return nil, 0, err
		}
		ctx := context.WithValue(context.WithValue(r.Context(), aclKey, a), identityKey, id)
		return fn(w, r.WithContext(ctx))
	}
}

// guard is authorize for handlers that write their own response (the
// client proxies); next gets the request with the ACL in its context, as a
// handlerFunc does.
func (h *HTTPServer) guard(rule authRule, next http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		authorized := r
		check := h.authorize(rule, func(_ http.ResponseWriter, ar *http.Request) (any, uint64, error) {
			authorized = ar
			return nil, 0, nil
		})
		if _, _, err := check(w, r); err != nil {
			h.serve(w, r, func(http.ResponseWriter, *http.Request) (any, uint64, error) { return nil, 0, err })
			return
		}
		next.ServeHTTP(w, authorized)
	}
}

// check applies rule to ACL a for request r.
func (h *HTTPServer) check(rule authRule, a *acl.ACL, r *http.Request) error {
	ok := false
	switch rule.kind {
	case authCaller:
		ok = true
	case authNamespace:
		if ns := namespace(r); ns == allNamespacesParam {
			ok = a.AllowNamespaceOperationAnywhere(rule.cap)
		} else {
			ok = a.AllowNamespaceOperation(ns, rule.cap)
		}
	case authObject:
		if ns, found := rule.nsOf(h.srv, r); found {
			ok = a.AllowNamespaceOperation(ns, rule.cap)
		} else {
			ok = a.AllowNamespaceOperationAnywhere(rule.cap) // the handler answers 404
		}
	case authInHandler:
		ok = a.AllowNamespaceOperationAnywhere(rule.cap)
	case authNodeRead:
		ok = a.AllowNodeRead()
	case authNodeWrite:
		ok = a.AllowNodeWrite()
	case authAgentRead:
		ok = a.AllowAgentRead()
	case authAgentWrite:
		ok = a.AllowAgentWrite()
	case authOperatorRead:
		ok = a.AllowOperatorRead()
	case authOperatorWrite:
		ok = a.AllowOperatorWrite()
	case authManagement:
		ok = a.IsManagement()
	case authPluginRead:
		ok = a.AllowPluginRead()
	case authPluginList:
		ok = a.AllowPluginList()
	}
	if !ok {
		return structs.ErrPermissionDenied
	}
	return nil
}

// allNamespacesParam is the namespace parameter that spans namespaces.
const allNamespacesParam = "*"

// allowNS reports whether the request's ACL grants cap in namespace ns.
func allowNS(r *http.Request, ns, cap string) bool {
	return aclOf(r).AllowNamespaceOperation(ns, cap)
}

// requireNS refuses the request unless its ACL grants cap in ns.
func requireNS(r *http.Request, ns, cap string) error {
	if !allowNS(r, ns, cap) {
		return structs.ErrPermissionDenied
	}
	return nil
}

// filterByNS keeps the objects whose namespace grants cap to the request.
func filterByNS[T any](r *http.Request, cap string, objs []T, nsOf func(T) string) []T {
	a := aclOf(r)
	if a.IsManagement() {
		return objs
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if a.AllowNamespaceOperation(nsOf(o), cap) {
			out = append(out, o)
		}
	}
	return out
}
