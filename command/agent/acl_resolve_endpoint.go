package agent

import (
	"net/http"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/wire"
)

// clientCapabilities are the namespace capabilities the client endpoints
// require (logs: read-logs, fs: read-fs, alloc stats and checks: read-job).
var clientCapabilities = []string{
	acl.NamespaceCapabilityReadJob, acl.NamespaceCapabilityReadLogs, acl.NamespaceCapabilityReadFS,
}

// internalACLResolve answers a client agent (authenticated by its node's
// secret) with the rights of a caller's token. A token that does not
// resolve (unknown, expired, invalid identity) is the same 403 the API
// would answer, so the client can pass it on.
func (h *HTTPServer) internalACLResolve(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req wire.ACLResolveRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, 0, err
	}
	a, enabled, err := h.srv.ResolveTokenForNode(nodeCaller(r), req.SecretID)
	if err != nil {
		return nil, 0, err
	}
	if !enabled {
		return &wire.ACLResolveResponse{}, 0, nil
	}
	out := &wire.ACLResolveResponse{ACLEnabled: true, Management: a.IsManagement(), NodeRead: a.AllowNodeRead(), Capabilities: []string{}}
	for _, c := range clientCapabilities {
		if a.AllowNamespaceOperation(req.Namespace, c) {
			out.Capabilities = append(out.Capabilities, c)
		}
	}
	return out, 0, nil
}
