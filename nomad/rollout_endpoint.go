package nomad

import (
	"context"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// JobRollout is what the web UI's rollout view of a job is made of.
type JobRollout struct {
	Job        *structs.Job
	Deployment *structs.Deployment // nil when the job has none
	Allocs     []*structs.Allocation
	Nodes      []*structs.Node // nil unless the caller may read nodes
}

// JobRollout returns job id with its latest deployment (or deployment
// depID, which must be the job's: else a 404 "deployment not found"),
// every allocation of the job, and the nodes when the caller may read
// them. It is a blocking query over jobs, deployments, allocations (and
// nodes).
func (s *Server) JobRollout(ctx context.Context, opts QueryOptions, id, depID string) (*JobRollout, QueryMeta, error) {
	withNodes := opts.ACL.AllowNodeRead()
	var out *JobRollout
	meta, err := s.jobQuery(ctx, &opts, id, acl.NamespaceCapabilityReadJob, func(ws memdb.WatchSet, snap *state.Snapshot, job *structs.Job) (uint64, error) {
		out = nil
		var d *structs.Deployment
		var err error
		if depID != "" {
			d, err = snap.DeploymentByID(ws, depID)
			if err == nil && (d == nil || d.Namespace != job.Namespace || d.JobID != job.ID) {
				return 0, structs.NotFoundf("deployment not found")
			}
		} else {
			d, err = snap.LatestDeploymentByJobID(ws, job.Namespace, job.ID)
		}
		if err != nil {
			return 0, err
		}
		allocs, err := snap.AllocsByJob(ws, job.Namespace, job.ID, true)
		if err != nil {
			return 0, err
		}
		reply := &JobRollout{Job: job, Deployment: d, Allocs: allocs}
		tables := []string{state.TableJobs, state.TableDeployments, state.TableAllocs}
		if withNodes {
			nodes, err := snap.Nodes(ws)
			if err != nil {
				return 0, err
			}
			reply.Nodes = make([]*structs.Node, 0, len(nodes))
			reply.Nodes = append(reply.Nodes, nodes...)
			tables = append(tables, state.TableNodes)
		}
		out = reply
		return tableIndex(snap, tables...), nil
	})
	return out, meta, err
}
