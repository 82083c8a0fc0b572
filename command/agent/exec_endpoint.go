package agent

import (
	"net/http"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/client"
	"github.com/drover-project/drover/nomad/structs"
)

// allocExec serves GET /v1/client/allocation/{id}/exec, an exec session
// over a websocket (the protocol is described in client/exec.go). The
// server checks what it can before the session reaches the node's client:
// rule (alloc-exec in the allocation's namespace), the allocation, the
// query, the task, and alloc-node-exec for a raw_exec task; the client
// checks again. Errors reach a websocket caller as the close frame's text.
func (h *HTTPServer) allocExec(rule authRule) http.HandlerFunc {
	forward := h.clientRouteWith(h.nodeOfAlloc("id"), h.writeExecError)
	check := h.authorize(rule, func(_ http.ResponseWriter, r *http.Request) (any, uint64, error) {
		id := r.PathValue("id")
		a, err := h.srv.State().AllocByID(nil, id)
		if err != nil {
			return nil, 0, err
		}
		if a == nil {
			return nil, 0, notFound("Unknown allocation \"" + id + "\"")
		}
		task, _, _, err := client.ParseExecQuery(r)
		if err != nil {
			return nil, 0, badRequest("%v", err)
		}
		var tg *structs.TaskGroup
		if a.Job != nil {
			tg = a.Job.LookupTaskGroup(a.TaskGroup)
		}
		if tg == nil || tg.LookupTask(task) == nil {
			return nil, 0, badRequest("unknown task name %q", task)
		}
		if tg.LookupTask(task).Driver == "raw_exec" {
			if err := requireNS(r, a.Namespace, acl.NamespaceCapabilityAllocNodeExec); err != nil {
				return nil, 0, err
			}
		}
		return nil, 0, nil
	})
	return func(w http.ResponseWriter, r *http.Request) {
		if _, _, err := check(w, r); err != nil {
			h.writeExecError(w, r, err)
			return
		}
		forward(w, r)
	}
}

// writeExecError answers err of an exec request: a close frame for a
// websocket caller, else a plain HTTP error.
func (h *HTTPServer) writeExecError(w http.ResponseWriter, r *http.Request, err error) {
	code, msg := errorResponse(err)
	if code >= 500 {
		h.logger.Error("exec request failed", "path", r.URL.Path, "error", err)
	}
	client.WriteExecError(w, r, code, msg)
}
