package agent

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/helper/apiconv"
	"github.com/drover-project/drover/nomad"
	"github.com/drover-project/drover/nomad/structs"
)

// jobFromRequest converts a submitted api.Job, applying the request's
// namespace when the job names none and the region it is submitted to
// (see submitRegion).
func jobFromRequest(r *http.Request, j *api.Job, region string) (*structs.Job, []string, error) {
	if j == nil {
		return nil, nil, badRequest("Job must be specified")
	}
	if j.Namespace == nil || *j.Namespace == "" {
		ns := namespace(r)
		j.Namespace = &ns
	}
	j.Region = &region
	job, warnings, err := apiconv.JobFromAPI(j)
	var refused *structs.ValidationError
	if errors.As(err, &refused) && job != nil {
		// One answer lists every problem: the refused blocks, then what
		// the server's validation finds in the rest of the job.
		problems := slices.Clone(refused.Problems)
		var verr *structs.ValidationError
		if _, err := nomad.ValidateJob(job); errors.As(err, &verr) {
			for _, p := range verr.Problems {
				if !slices.Contains(problems, p) {
					problems = append(problems, p)
				}
			}
		}
		return nil, nil, badRequest("%v", &structs.ValidationError{Problems: problems})
	}
	if err != nil {
		return nil, nil, badRequest("%v", err)
	}
	return job, warnings, nil
}

func (h *HTTPServer) jobsRegister(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req api.JobRegisterRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, 0, err
	}
	if id := r.PathValue("id"); id != "" && req.Job != nil && req.Job.ID != nil && *req.Job.ID != id {
		return nil, 0, badRequest("Job ID does not match name")
	}
	job, warnings, err := jobFromRequest(r, req.Job, h.submitRegion(r, req.Region, req.Job))
	if err != nil {
		return nil, 0, err
	}
	args := &nomad.JobRegisterArgs{
		ACL: aclOf(r), Job: job, EnforceIndex: req.EnforceIndex, JobModifyIndex: req.JobModifyIndex, EvalPriority: req.EvalPriority,
		PreserveCounts: req.PreserveCounts, PreserveResources: req.PreserveResources,
	}
	if req.Submission != nil {
		args.Submission = &structs.JobSubmission{
			Source: req.Submission.Source, Format: req.Submission.Format,
			VariableFlags: req.Submission.VariableFlags, Variables: req.Submission.Variables,
		}
	}
	reply, err := h.srv.JobRegister(args)
	if err != nil {
		return nil, 0, err
	}
	return &api.JobRegisterResponse{
		EvalID: reply.EvalID, EvalCreateIndex: reply.EvalCreateIndex, JobModifyIndex: reply.JobModifyIndex,
		Warnings: joinWarnings(append(warnings, reply.Warnings...)), QueryMeta: api.QueryMeta{LastIndex: reply.Index, KnownLeader: true},
	}, reply.Index, nil
}

func joinWarnings(ws []string) string {
	out := ""
	for i, w := range ws {
		if i > 0 {
			out += "\n"
		}
		out += "* " + w
	}
	return out
}

func (h *HTTPServer) jobsList(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	f, err := parseFilter(r)
	if err != nil {
		return nil, 0, err
	}
	opts, err := queryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	opts.Prefix = prefixParam(r)
	opts.Filter = filterOf(f, func(e nomad.JobListEntry) any { return apiconv.JobStubToAPI(e.Job, e.Summary) })
	jobs, meta, err := h.srv.JobList(r.Context(), opts)
	if err != nil {
		return nil, metaIndex(meta), err
	}
	out := make([]*api.JobListStub, 0, len(jobs))
	for _, e := range jobs {
		out = append(out, apiconv.JobStubToAPI(e.Job, e.Summary))
	}
	return out, metaIndex(meta), nil
}

func (h *HTTPServer) jobGet(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	job, index, err := readByID(r, h.srv.JobGet)
	if err != nil {
		return nil, index, err
	}
	return apiconv.JobToAPI(job), index, nil
}

func (h *HTTPServer) jobSummary(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	sum, index, err := readByID(r, h.srv.JobSummary)
	if err != nil {
		return nil, index, err
	}
	return apiconv.JobSummaryToAPI(sum), index, nil
}

// jobAllocations lists the allocations of the job in the path; an unknown
// job has none (an empty list, as in Nomad, not a 404).
func (h *HTTPServer) jobAllocations(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	all, err := boolParam(r, "all", false)
	if err != nil {
		return nil, 0, err
	}
	allocs, index, err := readByID(r, func(ctx context.Context, opts nomad.QueryOptions, id string) ([]*structs.Allocation, nomad.QueryMeta, error) {
		return h.srv.JobAllocations(ctx, opts, id, all)
	})
	if err != nil {
		return nil, index, err
	}
	return allocStubs(allocs), index, nil
}

func allocStubs(allocs []*structs.Allocation) []*api.AllocationListStub {
	out := make([]*api.AllocationListStub, 0, len(allocs))
	for _, a := range allocs {
		out = append(out, apiconv.AllocStubToAPI(a))
	}
	return out
}

// jobEvaluations lists the evaluations of the job in the path; an unknown
// job has none.
func (h *HTTPServer) jobEvaluations(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	evals, index, err := readByID(r, h.srv.JobEvaluations)
	if err != nil {
		return nil, index, err
	}
	out := make([]*api.Evaluation, 0, len(evals))
	for _, e := range evals {
		out = append(out, apiconv.EvalToAPI(e))
	}
	return out, index, nil
}

// jobLatestDeployment answers the newest deployment, or JSON null with 200
// when there is none (the CLI treats any error as fatal here).
func (h *HTTPServer) jobLatestDeployment(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	d, index, err := readByID(r, h.srv.JobLatestDeployment)
	if err != nil || d == nil {
		return nil, index, err
	}
	return apiconv.DeploymentToAPI(d), index, nil
}

func (h *HTTPServer) jobDeployments(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	all, err := boolParam(r, "all", false)
	if err != nil {
		return nil, 0, err
	}
	ds, index, err := readByID(r, func(ctx context.Context, opts nomad.QueryOptions, id string) ([]*structs.Deployment, nomad.QueryMeta, error) {
		return h.srv.JobDeployments(ctx, opts, id, all)
	})
	if err != nil {
		return nil, index, err
	}
	return deploymentsToAPI(ds), index, nil
}

func deploymentsToAPI(ds []*structs.Deployment) []*api.Deployment {
	out := make([]*api.Deployment, 0, len(ds))
	for _, d := range ds {
		out = append(out, apiconv.DeploymentToAPI(d))
	}
	return out
}

// jobVersionsResponse is the body of /v1/job/:id/versions.
type jobVersionsResponse struct {
	Versions    []*api.Job
	Diffs       []*api.JobDiff
	Index       uint64
	KnownLeader bool
	LastContact int64
}

func (h *HTTPServer) jobVersions(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	diffs, err := boolParam(r, "diffs", false)
	if err != nil {
		return nil, 0, err
	}
	// diff_version: every version is diffed against that one instead of
	// against its predecessor (Nomad's parameter of the same name).
	var base *uint64
	if s := r.URL.Query().Get("diff_version"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return nil, 0, badRequest("diff_version must be a version number: %v", err)
		}
		base = &v
	}
	reply, index, err := readByID(r, func(ctx context.Context, opts nomad.QueryOptions, id string) (*nomad.JobVersionsReply, nomad.QueryMeta, error) {
		return h.srv.JobVersions(ctx, opts, id, diffs, base)
	})
	if err != nil {
		return nil, index, err
	}
	resp := &jobVersionsResponse{KnownLeader: true, Index: index}
	for _, v := range reply.Versions {
		resp.Versions = append(resp.Versions, apiconv.JobToAPI(v))
	}
	for _, d := range reply.Diffs {
		resp.Diffs = append(resp.Diffs, apiconv.JobDiffToAPI(d))
	}
	return resp, index, nil
}

func (h *HTTPServer) jobSubmission(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	version, err := strconv.ParseUint(r.URL.Query().Get("version"), 10, 64)
	if err != nil {
		return nil, 0, badRequest("Unable to parse job version: %v", err)
	}
	sub, index, err := readByID(r, func(ctx context.Context, opts nomad.QueryOptions, id string) (*structs.JobSubmission, nomad.QueryMeta, error) {
		return h.srv.JobSubmission(ctx, opts, id, version)
	})
	if err != nil {
		return nil, index, err
	}
	return &api.JobSubmission{Source: sub.Source, Format: sub.Format, VariableFlags: sub.VariableFlags, Variables: sub.Variables}, index, nil
}

func (h *HTTPServer) jobDeregister(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var opts nomad.JobDeregisterOptions
	var err error
	if opts.Purge, err = boolParam(r, "purge", false); err != nil {
		return nil, 0, err
	}
	if opts.NoShutdownDelay, err = boolParam(r, "no_shutdown_delay", false); err != nil {
		return nil, 0, err
	}
	// global stops every region of a multiregion job; this cluster is its
	// only region, so it changes nothing, but a malformed value is refused.
	if _, err = boolParam(r, "global", false); err != nil {
		return nil, 0, err
	}
	if v := r.URL.Query().Get("eval_priority"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, 0, badRequest("Failed to parse value of %q (%v) as an int: %v", "eval_priority", v, err)
		}
		opts.EvalPriority = n
	}
	opts.ACL = aclOf(r)
	reply, err := h.srv.JobDeregister(namespace(r), r.PathValue("id"), opts)
	if err != nil {
		return nil, 0, err
	}
	return &api.JobDeregisterResponse{EvalID: reply.EvalID, EvalCreateIndex: reply.EvalCreateIndex,
		JobModifyIndex: reply.JobModifyIndex, QueryMeta: api.QueryMeta{LastIndex: reply.Index, KnownLeader: true}}, reply.Index, nil
}

func (h *HTTPServer) jobPlan(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req api.JobPlanRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, 0, err
	}
	if req.Job == nil || req.Job.ID == nil || *req.Job.ID != r.PathValue("id") {
		return nil, 0, badRequest("Job ID does not match")
	}
	job, warnings, err := jobFromRequest(r, req.Job, h.submitRegion(r, req.Region, req.Job))
	if err != nil {
		return nil, 0, err
	}
	reply, err := h.srv.JobPlan(aclOf(r), job, req.Diff)
	if err != nil {
		return nil, 0, err
	}
	resp := &api.JobPlanResponse{
		JobModifyIndex:     reply.JobModifyIndex,
		Diff:               apiconv.JobDiffToAPI(reply.Diff),
		Annotations:        apiconv.PlanAnnotationsToAPI(reply.Annotations),
		FailedTGAllocs:     apiconv.AllocMetricsToAPI(reply.FailedTGAllocs),
		Warnings:           joinWarnings(append(warnings, reply.Warnings...)),
		NextPeriodicLaunch: reply.NextPeriodicLaunch,
	}
	for _, e := range reply.CreatedEvals {
		resp.CreatedEvals = append(resp.CreatedEvals, apiconv.EvalToAPI(e))
	}
	return resp, reply.Index, nil
}

func (h *HTTPServer) jobValidate(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req api.JobValidateRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, 0, err
	}
	resp := &api.JobValidateResponse{}
	job, warnings, err := jobFromRequest(r, req.Job, h.submitRegion(r, req.Region, req.Job))
	if err == nil {
		resp.DriverConfigValidated, err = nomad.ValidateJob(job)
	}
	if err != nil {
		resp.Error = err.Error()
		resp.ValidationErrors = []string{err.Error()}
	}
	resp.Warnings = joinWarnings(warnings)
	return resp, 0, nil
}

func (h *HTTPServer) jobRevert(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req api.JobRevertRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, 0, err
	}
	if req.JobID != r.PathValue("id") {
		return nil, 0, badRequest("Job ID does not match")
	}
	reply, err := h.srv.JobRevert(aclOf(r), namespace(r), req.JobID, req.JobVersion, req.EnforcePriorVersion)
	if err != nil {
		return nil, 0, err
	}
	return &api.JobRegisterResponse{EvalID: reply.EvalID, EvalCreateIndex: reply.EvalCreateIndex,
		JobModifyIndex: reply.JobModifyIndex, QueryMeta: api.QueryMeta{LastIndex: reply.Index, KnownLeader: true}}, reply.Index, nil
}

func (h *HTTPServer) jobStable(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req api.JobStabilityRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, 0, err
	}
	if req.JobID != r.PathValue("id") {
		return nil, 0, badRequest("Job ID does not match")
	}
	index, err := h.srv.JobStability(aclOf(r), namespace(r), req.JobID, req.JobVersion, req.Stable)
	if err != nil {
		return nil, 0, err
	}
	return &api.JobStabilityResponse{WriteMeta: api.WriteMeta{LastIndex: index}}, index, nil
}

func (h *HTTPServer) jobEvaluate(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	evalID, index, err := h.srv.JobEvaluate(aclOf(r), namespace(r), r.PathValue("id"))
	if err != nil {
		return nil, 0, err
	}
	return &api.JobRegisterResponse{EvalID: evalID, EvalCreateIndex: index, QueryMeta: api.QueryMeta{LastIndex: index}}, index, nil
}
