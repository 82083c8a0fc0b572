package agent

import (
	"net/http"

	"github.com/hashicorp/nomad/api"
)

// Dynamic host volumes (`nomad volume create` / `volume register` with a
// host volume spec) are not built: a write is checked, then refused with
// a 400 that says what to do instead, and nothing is written. Reads and
// deletes find no volume (404). Static host volumes (a client's
// host_volume blocks) are node attributes (Node.HostVolumes), not objects
// here.

// hostVolumeWrite serves PUT /v1/volume/host/create and
// /v1/volume/host/register.
func (h *HTTPServer) hostVolumeWrite(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req api.HostVolumeCreateRequest // the register request has the same shape
	if err := decodeBody(r, &req); err != nil {
		return nil, 0, err
	}
	if req.Volume == nil {
		return nil, 0, badRequest("missing volume definition")
	}
	return nil, 0, badRequest("dynamic host volumes are not supported by Drover yet (volume %q is not created): "+
		"declare the directory in the client's configuration, client { host_volume %q { path = \"...\" } }, "+
		"and ask for it with a group volume of type \"host\"", req.Volume.Name, req.Volume.Name)
}
