package agent

import (
	"net/http"
	"strconv"

	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/helper/apiconv"
	"github.com/drover-project/drover/nomad"
	"github.com/drover-project/drover/nomad/state"
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
	if err := h.checkJobSubmit(r, job); err != nil {
		return nil, 0, err
	}
	args := &nomad.JobRegisterArgs{
		Job: job, EnforceIndex: req.EnforceIndex, JobModifyIndex: req.JobModifyIndex, EvalPriority: req.EvalPriority,
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

// checkJobSubmit refuses a job the request may not submit (submit-job in
// the job's namespace, which the body may name) and a job in a namespace
// that does not exist.
func (h *HTTPServer) checkJobSubmit(r *http.Request, job *structs.Job) error {
	if err := requireNS(r, job.Namespace, acl.NamespaceCapabilitySubmitJob); err != nil {
		return err
	}
	return h.srv.CheckNamespaceExists(job)
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
	ns, prefix := namespace(r), prefixParam(r)
	f, err := parseFilter(r)
	if err != nil {
		return nil, 0, err
	}
	return h.blockingQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
		var jobs []*structs.Job
		var err error
		if prefix != "" {
			jobs, err = snap.JobsByIDPrefix(ws, ns, prefix)
		} else {
			jobs, err = snap.Jobs(ws, ns)
		}
		if err != nil {
			return nil, 0, err
		}
		jobs = filterByNS(r, acl.NamespaceCapabilityListJobs, jobs, func(j *structs.Job) string { return j.Namespace })
		out := make([]*api.JobListStub, 0, len(jobs))
		for _, j := range jobs {
			sum, err := snap.JobSummaryByID(ws, j.Namespace, j.ID)
			if err != nil {
				return nil, 0, err
			}
			out = append(out, apiconv.JobStubToAPI(j, sum))
		}
		out, err = applyFilter(f, out)
		return out, tableIndex(snap, state.TableJobs, state.TableAllocs), err
	})
}

// jobQuery runs a blocking query on the job named in the path; fn receives the
// job (404 "job not found" when missing).
func (h *HTTPServer) jobQuery(r *http.Request, fn func(ws memdb.WatchSet, snap *state.Snapshot, job *structs.Job) (any, uint64, error)) (any, uint64, error) {
	ns, id := namespace(r), r.PathValue("id")
	return h.blockingQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
		job, err := snap.JobByID(ws, ns, id)
		if err != nil {
			return nil, 0, err
		}
		if job == nil {
			return nil, tableIndex(snap, state.TableJobs), notFound("job not found")
		}
		return fn(ws, snap, job)
	})
}

func (h *HTTPServer) jobGet(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	return h.jobQuery(r, func(_ memdb.WatchSet, _ *state.Snapshot, job *structs.Job) (any, uint64, error) {
		return apiconv.JobToAPI(job), job.ModifyIndex, nil
	})
}

func (h *HTTPServer) jobSummary(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	return h.jobQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot, job *structs.Job) (any, uint64, error) {
		sum, err := snap.JobSummaryByID(ws, job.Namespace, job.ID)
		if err != nil {
			return nil, 0, err
		}
		return apiconv.JobSummaryToAPI(sum), tableIndex(snap, state.TableJobs, state.TableAllocs), nil
	})
}

// jobAllocations lists the allocations of the job in the path; an unknown
// job has none (an empty list, as in Nomad, not a 404).
func (h *HTTPServer) jobAllocations(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	all, err := boolParam(r, "all", false)
	if err != nil {
		return nil, 0, err
	}
	ns, id := namespace(r), r.PathValue("id")
	out, index, err := h.blockingQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
		allocs, err := snap.AllocsByJob(ws, ns, id, all)
		if err != nil {
			return nil, 0, err
		}
		return allocStubs(allocs), tableIndex(snap, state.TableAllocs), nil
	})
	return out, h.listIndex(index, state.TableAllocs), err
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
	ns, id := namespace(r), r.PathValue("id")
	out, index, err := h.blockingQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
		evals, err := snap.EvalsByJob(ws, ns, id)
		if err != nil {
			return nil, 0, err
		}
		out := make([]*api.Evaluation, 0, len(evals))
		for _, e := range evals {
			out = append(out, apiconv.EvalToAPI(e))
		}
		return out, tableIndex(snap, state.TableEvals), nil
	})
	return out, h.listIndex(index, state.TableEvals), err
}

// jobLatestDeployment answers the newest deployment, or JSON null with 200
// when there is none (the CLI treats any error as fatal here).
func (h *HTTPServer) jobLatestDeployment(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	ns, id := namespace(r), r.PathValue("id")
	return h.blockingQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
		d, err := snap.LatestDeploymentByJobID(ws, ns, id)
		if err != nil {
			return nil, 0, err
		}
		if d == nil {
			return nil, tableIndex(snap, state.TableDeployments), nil
		}
		return apiconv.DeploymentToAPI(d), d.ModifyIndex, nil
	})
}

func (h *HTTPServer) jobDeployments(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	all, err := boolParam(r, "all", false)
	if err != nil {
		return nil, 0, err
	}
	return h.jobQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot, job *structs.Job) (any, uint64, error) {
		ds, err := snap.DeploymentsByJobID(ws, job.Namespace, job.ID, all)
		if err != nil {
			return nil, 0, err
		}
		return deploymentsToAPI(ds), tableIndex(snap, state.TableDeployments), nil
	})
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
	ns, id := namespace(r), r.PathValue("id")
	return h.blockingQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
		versions, err := snap.JobVersionsByID(ws, ns, id)
		if err != nil {
			return nil, 0, err
		}
		if len(versions) == 0 {
			return nil, tableIndex(snap, state.TableJobVersions), notFound("job versions not found")
		}
		var against *structs.Job
		if base != nil {
			for _, v := range versions {
				if v.Version == *base {
					against = v
				}
			}
			if against == nil {
				return nil, 0, badRequest("diff_version %d: no such version of job %q", *base, id)
			}
		}
		resp := &jobVersionsResponse{KnownLeader: true}
		for i, v := range versions {
			resp.Versions = append(resp.Versions, apiconv.JobToAPI(v))
			if diffs && against != nil {
				d, err := against.Diff(v, false)
				if err != nil {
					return nil, 0, err
				}
				resp.Diffs = append(resp.Diffs, apiconv.JobDiffToAPI(d))
			} else if diffs && i+1 < len(versions) {
				d, err := versions[i+1].Diff(v, false)
				if err != nil {
					return nil, 0, err
				}
				resp.Diffs = append(resp.Diffs, apiconv.JobDiffToAPI(d))
			}
		}
		resp.Index = tableIndex(snap, state.TableJobVersions)
		return resp, resp.Index, nil
	})
}

func (h *HTTPServer) jobSubmission(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	ns, id := namespace(r), r.PathValue("id")
	version, err := strconv.ParseUint(r.URL.Query().Get("version"), 10, 64)
	if err != nil {
		return nil, 0, badRequest("Unable to parse job version: %v", err)
	}
	return h.blockingQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
		sub, err := snap.SubmissionByVersion(ws, ns, id, version)
		if err != nil {
			return nil, 0, err
		}
		if sub == nil {
			return nil, tableIndex(snap, state.TableSubmissions), notFound("job source not found")
		}
		return &api.JobSubmission{Source: sub.Source, Format: sub.Format, VariableFlags: sub.VariableFlags, Variables: sub.Variables},
			tableIndex(snap, state.TableSubmissions), nil
	})
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
	if err := h.checkJobSubmit(r, job); err != nil {
		return nil, 0, err
	}
	reply, err := h.srv.JobPlan(job, req.Diff)
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
	reply, err := h.srv.JobRevert(namespace(r), req.JobID, req.JobVersion, req.EnforcePriorVersion)
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
	index, err := h.srv.JobStability(namespace(r), req.JobID, req.JobVersion, req.Stable)
	if err != nil {
		return nil, 0, err
	}
	return &api.JobStabilityResponse{WriteMeta: api.WriteMeta{LastIndex: index}}, index, nil
}

func (h *HTTPServer) jobEvaluate(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	evalID, index, err := h.srv.JobEvaluate(namespace(r), r.PathValue("id"))
	if err != nil {
		return nil, 0, err
	}
	return &api.JobRegisterResponse{EvalID: evalID, EvalCreateIndex: index, QueryMeta: api.QueryMeta{LastIndex: index}}, index, nil
}
