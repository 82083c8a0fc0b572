package nomad

import (
	"context"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// The reads of scaling: a job's scale status and the scaling policies
// (the scaling blocks of the current job versions).

// JobScale is what the scale status of a job is made of.
type JobScale struct {
	Job    *structs.Job
	Allocs []*structs.Allocation
	Events *structs.JobScalingEvents
}

// JobScaleStatus returns job id with its allocations and scaling events
// (read-job-scaling).
func (s *Server) JobScaleStatus(ctx context.Context, opts QueryOptions, id string) (*JobScale, QueryMeta, error) {
	var out *JobScale
	meta, err := s.jobQuery(ctx, &opts, id, acl.NamespaceCapabilityReadJobScaling, func(ws memdb.WatchSet, snap *state.Snapshot, job *structs.Job) (uint64, error) {
		out = nil
		allocs, err := snap.AllocsByJob(ws, job.Namespace, job.ID, false)
		if err != nil {
			return 0, err
		}
		events, err := snap.ScalingEventsByJob(ws, job.Namespace, job.ID)
		if err != nil {
			return 0, err
		}
		out = &JobScale{Job: job, Allocs: allocs, Events: events}
		return tableIndex(snap, state.TableJobs, state.TableAllocs, state.TableScalingEvents), nil
	})
	return out, meta, err
}

// ScalingPolicy is the scaling block of a group of a job's current version.
type ScalingPolicy struct {
	ID    string
	Job   *structs.Job
	Group *structs.TaskGroup
}

// scalingPolicies lists the scaling blocks of the current job versions of
// namespace ns (AllNamespaces: all).
func scalingPolicies(snap *state.Snapshot, ws memdb.WatchSet, ns string) ([]ScalingPolicy, error) {
	jobs, err := snap.Jobs(ws, ns)
	if err != nil {
		return nil, err
	}
	var out []ScalingPolicy
	for _, j := range jobs {
		for _, tg := range j.TaskGroups {
			if tg.Scaling != nil {
				out = append(out, ScalingPolicy{ID: structs.ScalingPolicyID(j.Namespace, j.ID, tg.Name), Job: j, Group: tg})
			}
		}
	}
	return out, nil
}

// ScalingPolicyList lists the scaling policies of opts.Namespace
// (list-scaling-policies).
func (s *Server) ScalingPolicyList(ctx context.Context, opts QueryOptions) ([]ScalingPolicy, QueryMeta, error) {
	ns := opts.namespace()
	if err := requireNamespace(opts.ACL, ns, acl.NamespaceCapabilityListScalingPolicies); err != nil {
		return nil, s.refusedMeta(), err
	}
	var out []ScalingPolicy
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		ps, err := scalingPolicies(snap, ws, ns)
		out = ps
		return tableIndex(snap, state.TableJobs), err
	})
	return out, meta, err
}

// ScalingPolicyGet returns scaling policy id, of any namespace (404
// "scaling policy not found"); read-scaling-policy in opts.Namespace.
func (s *Server) ScalingPolicyGet(ctx context.Context, opts QueryOptions, id string) (*ScalingPolicy, QueryMeta, error) {
	if err := requireNamespace(opts.ACL, opts.namespace(), acl.NamespaceCapabilityReadScalingPolicy); err != nil {
		return nil, s.refusedMeta(), err
	}
	var out *ScalingPolicy
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		out = nil
		ps, err := scalingPolicies(snap, ws, AllNamespaces)
		if err != nil {
			return 0, err
		}
		for i := range ps {
			if ps[i].ID == id {
				out = &ps[i]
				return tableIndex(snap, state.TableJobs), nil
			}
		}
		return tableIndex(snap, state.TableJobs), structs.NotFoundf("scaling policy not found")
	})
	return out, meta, err
}
