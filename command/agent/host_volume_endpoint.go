package agent

import (
	"net/http"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/helper/apiconv"
	"github.com/drover-project/drover/nomad/structs"
)

// Dynamic host volumes (`volume create` with type = "host"): the HTTP
// adapter of the server's HostVolume* endpoints, which check the caller.
// `volume register` makes an existing directory of a node a volume.

// hostVolumeCreate serves PUT /v1/volume/host/create.
func (h *HTTPServer) hostVolumeCreate(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req api.HostVolumeCreateRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, 0, err
	}
	if req.Volume == nil {
		return nil, 0, badRequest("missing volume definition")
	}
	v := apiconv.HostVolumeFromAPI(req.Volume)
	if v.Namespace == "" {
		v.Namespace = namespace(r)
	}
	out, index, err := h.srv.HostVolumeCreate(aclOf(r), v)
	if err != nil {
		return nil, 0, err
	}
	return &api.HostVolumeCreateResponse{Volume: apiconv.HostVolumeToAPI(out)}, index, nil
}

// hostVolumeRegister serves PUT /v1/volume/host/register: an existing
// directory of a node (node_id, host_path) becomes a host volume.
func (h *HTTPServer) hostVolumeRegister(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req api.HostVolumeRegisterRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, 0, err
	}
	if req.Volume == nil {
		return nil, 0, badRequest("missing volume definition")
	}
	v := apiconv.HostVolumeFromAPI(req.Volume)
	if v.Namespace == "" {
		v.Namespace = namespace(r)
	}
	out, index, err := h.srv.HostVolumeRegister(aclOf(r), v)
	if err != nil {
		return nil, 0, err
	}
	return &api.HostVolumeRegisterResponse{Volume: apiconv.HostVolumeToAPI(out)}, index, nil
}

// hostVolumeGet serves GET /v1/volume/host/{id}.
func (h *HTTPServer) hostVolumeGet(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	opts, err := queryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	v, users, meta, err := h.srv.HostVolumeGet(r.Context(), opts, r.PathValue("id"))
	if err != nil {
		return nil, metaIndex(meta), err
	}
	out := apiconv.HostVolumeToAPI(v)
	for _, a := range users {
		out.Allocations = append(out.Allocations, apiconv.AllocStubToAPI(a))
	}
	return out, metaIndex(meta), nil
}

// hostVolumeDelete serves DELETE /v1/volume/host/{id}.
func (h *HTTPServer) hostVolumeDelete(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	if _, err := boolParam(r, "force", false); err != nil {
		return nil, 0, err
	}
	index, err := h.srv.HostVolumeDelete(aclOf(r), namespace(r), r.PathValue("id"))
	if err != nil {
		return nil, 0, err
	}
	return &api.HostVolumeDeleteResponse{}, index, nil
}

// hostVolumesList serves GET /v1/volumes?type=host (&node_id=,
// &node_pool=, &prefix=).
func (h *HTTPServer) hostVolumesList(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	opts, err := queryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	q := r.URL.Query()
	vols, meta, err := h.srv.HostVolumeList(r.Context(), opts, q.Get("node_id"), q.Get("node_pool"))
	if err != nil {
		return nil, metaIndex(meta), err
	}
	out := make([]*api.HostVolumeStub, 0, len(vols))
	for _, v := range vols {
		out = append(out, apiconv.HostVolumeStubToAPI(v))
	}
	return out, metaIndex(meta), nil
}

// internalNodeHostVolumes serves the node's blocking query for its
// dynamic host volumes (wire.RouteNodeHostVolumes).
func (h *HTTPServer) internalNodeHostVolumes(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	opts, err := queryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	opts.AllowStale = true // answered by the server the client reaches
	vols, meta, err := h.srv.NodeHostVolumes(r.Context(), nodeCaller(r), opts)
	if err != nil {
		return nil, 0, err
	}
	if vols == nil {
		vols = []*structs.HostVolume{}
	}
	return vols, metaIndex(meta), nil
}
