package agent

import (
	"net/http"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/structs"
)

// Volumes and plugins. Drover runs no CSI plugins, so these endpoints
// answer what is true of such a cluster: the lists are empty, a named
// volume or plugin is not found, and registering or creating a CSI volume
// is refused because its plugin does not exist. Dynamic host volumes are
// host_volume_endpoint.go's; host volumes declared in a client's
// configuration are node attributes, not objects here.

// volumesList serves GET /v1/volumes?type=csi|host: always empty for csi,
// the dynamic host volumes for host. The caller needs csi-list-volume (csi)
// or host-volume-read (host) in the namespace.
func (h *HTTPServer) volumesList(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var capability string
	switch t := r.URL.Query().Get("type"); t {
	case "csi":
		capability = acl.NamespaceCapabilityCSIListVolume
	case "host":
		capability = acl.NamespaceCapabilityHostVolumeRead
	default:
		return nil, 0, badRequest("Invalid volume type %q: type must be \"csi\" or \"host\"", t)
	}
	if err := requireNSOrAnywhere(r, capability); err != nil {
		return nil, 0, err
	}
	if r.URL.Query().Get("type") == "host" {
		return h.hostVolumesList(w, r)
	}
	return h.emptyList(r, []*api.CSIVolumeListStub{})
}

// csiVolumeGet serves GET /v1/volume/csi/:id: no volume exists.
func (h *HTTPServer) csiVolumeGet(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	return nil, 0, notFound("volume not found")
}

// csiVolumeDeregister serves DELETE /v1/volume/csi/:id (and
// /v1/volume/csi/:id/detach): no volume exists.
func (h *HTTPServer) csiVolumeDeregister(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	if _, err := boolParam(r, "force", false); err != nil {
		return nil, 0, err
	}
	return nil, 0, notFound("volume not found")
}

// csiVolumeRegister serves PUT /v1/volume/csi/:id and
// /v1/volume/csi/:id/create: the request is checked, then refused, naming
// the plugin that does not exist. Nothing is written.
func (h *HTTPServer) csiVolumeRegister(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req api.CSIVolumeRegisterRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, 0, err
	}
	if len(req.Volumes) == 0 {
		return nil, 0, badRequest("Volumes: at least one volume is required")
	}
	for _, v := range req.Volumes {
		if v == nil || v.ID == "" {
			return nil, 0, badRequest("Volumes: every volume needs an ID")
		}
		if v.ID != r.PathValue("id") {
			return nil, 0, badRequest("Volume ID %q does not match the path (%q)", v.ID, r.PathValue("id"))
		}
		if v.PluginID == "" {
			return nil, 0, badRequest("volume %q: PluginID is required", v.ID)
		}
	}
	return nil, 0, badRequest("no CSI plugin named: %s could be found (Drover runs no CSI plugins)", req.Volumes[0].PluginID)
}

// csiPluginVolumesList serves GET /v1/volumes/external and
// /v1/volumes/snapshot (?plugin_id=): what a CSI plugin lists; no plugin
// exists to ask.
func (h *HTTPServer) csiPluginVolumesList(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	id := r.URL.Query().Get("plugin_id")
	if id == "" {
		return nil, 0, badRequest("plugin_id is required")
	}
	return nil, 0, notFound("no CSI plugin named: " + id + " could be found")
}

// csiPluginsList serves GET /v1/plugins?type=csi: always empty.
func (h *HTTPServer) csiPluginsList(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	if t := r.URL.Query().Get("type"); t != "csi" {
		return nil, 0, badRequest("Invalid plugin type %q: type must be \"csi\"", t)
	}
	return h.emptyList(r, []*api.CSIPluginListStub{})
}

// csiPluginGet serves GET /v1/plugin/csi/:id: no plugin exists.
func (h *HTTPServer) csiPluginGet(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	return nil, 0, notFound("plugin not found")
}

// requireNSOrAnywhere refuses the request unless its ACL grants cap in the
// request's namespace (for "*": in some namespace). Without ACLs every
// request passes.
func requireNSOrAnywhere(r *http.Request, capability string) error {
	a := aclOf(r)
	if a == nil {
		return nil
	}
	if ns := namespace(r); ns != allNamespacesParam {
		return requireNS(r, ns, capability)
	}
	if !a.AllowNamespaceOperationAnywhere(capability) {
		return structs.ErrPermissionDenied
	}
	return nil
}

// emptyList answers out, an empty list, as a blocking query at the store's
// latest index (see the server's CSIEmptyList).
func (h *HTTPServer) emptyList(r *http.Request, out any) (any, uint64, error) {
	opts, err := queryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	meta, err := h.srv.CSIEmptyList(r.Context(), opts)
	if err != nil {
		return nil, metaIndex(meta), err
	}
	return out, metaIndex(meta), nil
}
