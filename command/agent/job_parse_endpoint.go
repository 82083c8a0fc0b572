package agent

import (
	"net/http"
	"strings"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/jobspec"
)

// jobsParse serves PUT /v1/jobs/parse: the HCL2 jobspec in the body becomes
// the job's JSON (canonicalized on request), parsed with Drover's jobspec
// package. The server's file system is out of reach: file() and
// fileexists() fail. Variables is the content of a variables file.
func (h *HTTPServer) jobsParse(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req api.JobsParseRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, 0, err
	}
	if strings.TrimSpace(req.JobHCL) == "" {
		return nil, 0, badRequest("Job HCL must not be empty (JobHCL)")
	}
	opts := jobspec.Options{NoFS: true}
	if req.Variables != "" {
		opts.VarContents = []string{req.Variables}
	}
	job, err := jobspec.Parse("input.nomad.hcl", []byte(req.JobHCL), opts)
	if err != nil {
		return nil, 0, badRequest("%v", err)
	}
	if req.Canonicalize {
		job.Canonicalize()
	}
	return job, 0, nil
}
