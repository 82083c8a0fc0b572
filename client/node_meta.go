package client

import (
	"encoding/json"
	"maps"
	"net/http"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// Dynamic node metadata: operators set and unset Node.Meta keys at run
// time (POST /v1/client/metadata); the client persists them in its state
// DB, so they survive restarts, and registers the node again so the
// servers see them. A dynamic key with a nil value hides the static
// (configured) key of that name.

// mergeMeta returns static with dynamic applied.
func mergeMeta(static map[string]string, dynamic map[string]*string) map[string]string {
	out := maps.Clone(static)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range dynamic {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = *v
		}
	}
	return out
}

// loadDynamicMeta reads the stored dynamic metadata into the node.
func (c *Client) loadDynamicMeta() error {
	dyn, err := c.db.DynamicNodeMeta()
	if err != nil {
		return err
	}
	c.nodeMu.Lock()
	defer c.nodeMu.Unlock()
	c.dynamicMeta = dyn
	c.node.Meta = mergeMeta(c.cfg.Meta, dyn)
	return nil
}

// metaResponse is the client's metadata as the API reports it.
func (c *Client) metaResponse() *api.NodeMetaResponse {
	c.nodeMu.Lock()
	defer c.nodeMu.Unlock()
	static := maps.Clone(c.cfg.Meta)
	if static == nil {
		static = map[string]string{}
	}
	return &api.NodeMetaResponse{Meta: maps.Clone(c.node.Meta), Dynamic: maps.Clone(c.dynamicMeta), Static: static}
}

// handleMetaRead serves GET /v1/client/metadata.
func (c *Client) handleMetaRead(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, c.metaResponse())
}

// handleMetaApply serves POST /v1/client/metadata: the request's keys are
// set (nil: unset) in the dynamic metadata.
func (c *Client) handleMetaApply(w http.ResponseWriter, r *http.Request) {
	var req api.NodeMetaApplyRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, badRequest("Request decode failed: %v", err))
		return
	}
	if req.NodeID != "" && req.NodeID != c.NodeID() {
		writeError(w, badRequest("NodeID %q is not this node (%s)", req.NodeID, c.NodeID()))
		return
	}
	if len(req.Meta) == 0 {
		writeError(w, badRequest("Meta: at least one key is required"))
		return
	}
	for k := range req.Meta {
		if k == "" || strings.ContainsAny(k, " \t\n") {
			writeError(w, badRequest("Meta: invalid key %q: must be non-empty and contain no whitespace", k))
			return
		}
	}
	c.nodeMu.Lock()
	dyn := maps.Clone(c.dynamicMeta)
	if dyn == nil {
		dyn = map[string]*string{}
	}
	maps.Copy(dyn, req.Meta)
	if err := c.db.PutDynamicNodeMeta(dyn); err != nil {
		c.nodeMu.Unlock()
		writeError(w, err)
		return
	}
	c.dynamicMeta = dyn
	n := c.node.Copy()
	n.Meta = mergeMeta(c.cfg.Meta, dyn)
	c.node = n
	c.nodeMu.Unlock()
	c.logger.Info("dynamic node metadata changed; registering again", "keys", len(req.Meta))
	c.requestRegister()
	writeJSON(w, c.metaResponse())
}
