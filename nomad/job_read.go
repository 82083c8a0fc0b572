package nomad

import (
	"context"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// The reads of jobs. Each takes the caller's QueryOptions, checks its
// capability in opts.Namespace itself (read-job; list-jobs for the list)
// and runs as a blocking query.

// JobListEntry is one job of a list with its summary (what the list stub
// is made of; opts.Filter receives it).
type JobListEntry struct {
	Job     *structs.Job
	Summary *structs.JobSummary
}

// JobList lists the jobs of opts.Namespace (AllNamespaces: of every
// namespace the caller may list) whose ID starts with opts.Prefix.
func (s *Server) JobList(ctx context.Context, opts QueryOptions) ([]JobListEntry, QueryMeta, error) {
	ns := opts.namespace()
	if err := requireNamespace(opts.ACL, ns, acl.NamespaceCapabilityListJobs); err != nil {
		return nil, s.refusedMeta(), err
	}
	var out []JobListEntry
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		var jobs []*structs.Job
		var err error
		if opts.Prefix != "" {
			jobs, err = snap.JobsByIDPrefix(ws, ns, opts.Prefix)
		} else {
			jobs, err = snap.Jobs(ws, ns)
		}
		if err != nil {
			return 0, err
		}
		jobs = filterByNamespace(opts.ACL, acl.NamespaceCapabilityListJobs, jobs, jobNamespace)
		out = make([]JobListEntry, 0, len(jobs))
		for _, j := range jobs {
			sum, err := snap.JobSummaryByID(ws, j.Namespace, j.ID)
			if err != nil {
				return 0, err
			}
			out = append(out, JobListEntry{Job: j, Summary: sum})
		}
		out, err = applyFilter(&opts, out, func(e JobListEntry) any { return e })
		return tableIndex(snap, state.TableJobs, state.TableAllocs), err
	})
	return out, meta, err
}

func jobNamespace(j *structs.Job) string { return j.Namespace }

// jobQuery runs fn as a blocking query on job id of opts.Namespace, after
// the check of cap there; a missing job is a 404 "job not found".
func (s *Server) jobQuery(ctx context.Context, opts *QueryOptions, id, cap string, fn func(ws memdb.WatchSet, snap *state.Snapshot, job *structs.Job) (uint64, error)) (QueryMeta, error) {
	ns := opts.namespace()
	if err := requireNamespace(opts.ACL, ns, cap); err != nil {
		return s.refusedMeta(), err
	}
	return s.blockingQuery(ctx, opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		job, err := snap.JobByID(ws, ns, id)
		if err != nil {
			return 0, err
		}
		if job == nil {
			return tableIndex(snap, state.TableJobs), structs.NotFoundf("job not found")
		}
		return fn(ws, snap, job)
	})
}

// jobRead runs fn as a blocking query after the read-job check in
// opts.Namespace (for the reads of a job that may not exist).
func (s *Server) jobRead(ctx context.Context, opts *QueryOptions, fn func(ws memdb.WatchSet, snap *state.Snapshot, ns string) (uint64, error)) (QueryMeta, error) {
	ns := opts.namespace()
	if err := requireNamespace(opts.ACL, ns, acl.NamespaceCapabilityReadJob); err != nil {
		return s.refusedMeta(), err
	}
	return s.blockingQuery(ctx, opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		return fn(ws, snap, ns)
	})
}

// JobGet returns job id.
func (s *Server) JobGet(ctx context.Context, opts QueryOptions, id string) (*structs.Job, QueryMeta, error) {
	var out *structs.Job
	meta, err := s.jobQuery(ctx, &opts, id, acl.NamespaceCapabilityReadJob, func(_ memdb.WatchSet, _ *state.Snapshot, job *structs.Job) (uint64, error) {
		out = job
		return job.ModifyIndex, nil
	})
	return out, meta, err
}

// JobSummary returns the summary of job id.
func (s *Server) JobSummary(ctx context.Context, opts QueryOptions, id string) (*structs.JobSummary, QueryMeta, error) {
	var out *structs.JobSummary
	meta, err := s.jobQuery(ctx, &opts, id, acl.NamespaceCapabilityReadJob, func(ws memdb.WatchSet, snap *state.Snapshot, job *structs.Job) (uint64, error) {
		sum, err := snap.JobSummaryByID(ws, job.Namespace, job.ID)
		out = sum
		return tableIndex(snap, state.TableJobs, state.TableAllocs), err
	})
	return out, meta, err
}

// JobAllocations lists the allocations of job id (with all, those of
// earlier jobs of the same ID too); an unknown job has none, not a 404.
func (s *Server) JobAllocations(ctx context.Context, opts QueryOptions, id string, all bool) ([]*structs.Allocation, QueryMeta, error) {
	var out []*structs.Allocation
	meta, err := s.jobRead(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot, ns string) (uint64, error) {
		allocs, err := snap.AllocsByJob(ws, ns, id, all)
		out = allocs
		return tableIndex(snap, state.TableAllocs), err
	})
	return out, s.listIndex(meta, state.TableAllocs), err
}

// JobEvaluations lists the evaluations of job id; an unknown job has none.
func (s *Server) JobEvaluations(ctx context.Context, opts QueryOptions, id string) ([]*structs.Evaluation, QueryMeta, error) {
	var out []*structs.Evaluation
	meta, err := s.jobRead(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot, ns string) (uint64, error) {
		evals, err := snap.EvalsByJob(ws, ns, id)
		out = evals
		return tableIndex(snap, state.TableEvals), err
	})
	return out, s.listIndex(meta, state.TableEvals), err
}

// JobLatestDeployment returns the newest deployment of job id, nil (and no
// error) when there is none.
func (s *Server) JobLatestDeployment(ctx context.Context, opts QueryOptions, id string) (*structs.Deployment, QueryMeta, error) {
	var out *structs.Deployment
	meta, err := s.jobRead(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot, ns string) (uint64, error) {
		d, err := snap.LatestDeploymentByJobID(ws, ns, id)
		if err != nil || d == nil {
			out = nil
			return tableIndex(snap, state.TableDeployments), err
		}
		out = d
		return d.ModifyIndex, nil
	})
	return out, meta, err
}

// JobDeployments lists the deployments of job id (with all, those of
// earlier jobs of the same ID too); a missing job is a 404.
func (s *Server) JobDeployments(ctx context.Context, opts QueryOptions, id string, all bool) ([]*structs.Deployment, QueryMeta, error) {
	var out []*structs.Deployment
	meta, err := s.jobQuery(ctx, &opts, id, acl.NamespaceCapabilityReadJob, func(ws memdb.WatchSet, snap *state.Snapshot, job *structs.Job) (uint64, error) {
		ds, err := snap.DeploymentsByJobID(ws, job.Namespace, job.ID, all)
		out = ds
		return tableIndex(snap, state.TableDeployments), err
	})
	return out, meta, err
}

// JobVersionsReply holds the versions of a job, newest first, and with
// diffs asked for, the diff of each (against its predecessor, or against
// the base version).
type JobVersionsReply struct {
	Versions []*structs.Job
	Diffs    []*structs.JobDiff
}

// JobVersions returns the versions of job id; diffs adds their diffs,
// against version *base when base is non-nil (a version the job lacks is a
// 400) and otherwise each against its predecessor. No versions is a 404.
func (s *Server) JobVersions(ctx context.Context, opts QueryOptions, id string, diffs bool, base *uint64) (*JobVersionsReply, QueryMeta, error) {
	var out *JobVersionsReply
	meta, err := s.jobRead(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot, ns string) (uint64, error) {
		out = nil
		versions, err := snap.JobVersionsByID(ws, ns, id)
		if err != nil {
			return 0, err
		}
		if len(versions) == 0 {
			return tableIndex(snap, state.TableJobVersions), structs.NotFoundf("job versions not found")
		}
		reply, err := jobVersionDiffs(versions, id, diffs, base)
		if err != nil {
			return 0, err
		}
		out = reply
		return tableIndex(snap, state.TableJobVersions), nil
	})
	if err != nil {
		out = nil
	}
	return out, meta, err
}

// jobVersionDiffs builds the reply of JobVersions from versions.
func jobVersionDiffs(versions []*structs.Job, id string, diffs bool, base *uint64) (*JobVersionsReply, error) {
	var against *structs.Job
	if base != nil {
		for _, v := range versions {
			if v.Version == *base {
				against = v
			}
		}
		if against == nil {
			return nil, structs.BadRequestf("diff_version %d: no such version of job %q", *base, id)
		}
	}
	reply := &JobVersionsReply{}
	for i, v := range versions {
		reply.Versions = append(reply.Versions, v)
		var from *structs.Job
		switch {
		case diffs && against != nil:
			from = against
		case diffs && i+1 < len(versions):
			from = versions[i+1]
		default:
			continue
		}
		d, err := from.Diff(v, false)
		if err != nil {
			return nil, err
		}
		reply.Diffs = append(reply.Diffs, d)
	}
	return reply, nil
}

// JobSubmission returns the source job id was submitted with at version.
func (s *Server) JobSubmission(ctx context.Context, opts QueryOptions, id string, version uint64) (*structs.JobSubmission, QueryMeta, error) {
	var out *structs.JobSubmission
	meta, err := s.jobRead(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot, ns string) (uint64, error) {
		sub, err := snap.SubmissionByVersion(ws, ns, id, version)
		if err != nil {
			return 0, err
		}
		out = sub
		if sub == nil {
			return tableIndex(snap, state.TableSubmissions), structs.NotFoundf("job source not found")
		}
		return tableIndex(snap, state.TableSubmissions), nil
	})
	return out, meta, err
}
