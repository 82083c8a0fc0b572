package agent

import (
	"net/http"
	"strings"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/helper/apiconv"
	"github.com/drover-project/drover/nomad"
	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/wire"
)

// Deployments: reads and actions, answered by the server
// (nomad/deployment_endpoint.go). A single deployment is found by ID
// whatever the namespace parameter says.

func (h *HTTPServer) deploymentsList(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	f, err := parseFilter(r)
	if err != nil {
		return nil, 0, err
	}
	opts, err := queryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	opts.Prefix = uuidPrefix(prefixParam(r))
	opts.Filter = filterOf(f, func(d *structs.Deployment) any { return apiconv.DeploymentToAPI(d) })
	ds, meta, err := h.srv.DeploymentList(r.Context(), opts)
	if err != nil {
		return nil, metaIndex(meta), err
	}
	return deploymentsToAPI(ds), metaIndex(meta), nil
}

func (h *HTTPServer) deploymentGet(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	return serveByID(r, h.srv.DeploymentGet, apiconv.DeploymentToAPI)
}

// deploymentGates serves GET /v1/deployment/gates/{id}: the deployment's
// gate records (wire.DeploymentGates), read as GET /v1/deployment/{id}.
func (h *HTTPServer) deploymentGates(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	opts, err := queryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	d, meta, err := h.srv.DeploymentGet(r.Context(), opts, r.PathValue("id"))
	if err != nil {
		return nil, metaIndex(meta), err
	}
	gates := wire.GatesOf(d)
	if gates == nil {
		gates = map[string]*structs.DeploymentGate{}
	}
	return &wire.DeploymentGates{DeploymentID: d.ID, Gates: gates}, metaIndex(meta), nil
}

func (h *HTTPServer) deploymentAllocations(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	return serveByID(r, h.srv.DeploymentAllocations, allocStubs)
}

func deploymentResponse(reply *nomad.DeploymentUpdateReply) (any, uint64, error) {
	return &api.DeploymentUpdateResponse{
		EvalID: reply.EvalID, EvalCreateIndex: reply.EvalCreateIndex,
		DeploymentModifyIndex: reply.DeploymentModifyIndex, RevertedJobVersion: reply.RevertedJobVersion,
		WriteMeta: api.WriteMeta{LastIndex: reply.Index},
	}, reply.Index, nil
}

// checkDeploymentID refuses bodies naming another deployment than the path.
func checkDeploymentID(r *http.Request, bodyID string) error {
	if bodyID != "" && bodyID != r.PathValue("id") {
		return badRequest("Deployment ID does not match")
	}
	return nil
}

func (h *HTTPServer) deploymentPromote(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req api.DeploymentPromoteRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, 0, err
	}
	if err := checkDeploymentID(r, req.DeploymentID); err != nil {
		return nil, 0, err
	}
	reply, err := h.srv.DeploymentPromote(aclOf(r), r.PathValue("id"), req.All, req.Groups)
	if err != nil {
		return nil, 0, err
	}
	return deploymentResponse(reply)
}

func (h *HTTPServer) deploymentFail(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	reply, err := h.srv.DeploymentFail(aclOf(r), r.PathValue("id"))
	if err != nil {
		return nil, 0, err
	}
	return deploymentResponse(reply)
}

func (h *HTTPServer) deploymentPause(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req api.DeploymentPauseRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, 0, err
	}
	if err := checkDeploymentID(r, req.DeploymentID); err != nil {
		return nil, 0, err
	}
	reply, err := h.srv.DeploymentPause(aclOf(r), r.PathValue("id"), req.Pause)
	if err != nil {
		return nil, 0, err
	}
	return deploymentResponse(reply)
}

func (h *HTTPServer) deploymentAllocHealth(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req api.DeploymentAllocHealthRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, 0, err
	}
	if err := checkDeploymentID(r, req.DeploymentID); err != nil {
		return nil, 0, err
	}
	reply, err := h.srv.DeploymentAllocHealth(aclOf(r), r.PathValue("id"), req.HealthyAllocationIDs, req.UnhealthyAllocationIDs)
	if err != nil {
		return nil, 0, err
	}
	return deploymentResponse(reply)
}

// uuidPrefix puts the hyphens back into a UUID prefix sent without them (the
// CLI strips hyphens from deployment prefixes).
func uuidPrefix(p string) string {
	if strings.Contains(p, "-") {
		return p
	}
	var b strings.Builder
	for i, c := range p {
		if i == 8 || i == 12 || i == 16 || i == 20 {
			b.WriteByte('-')
		}
		b.WriteRune(c)
	}
	return b.String()
}
