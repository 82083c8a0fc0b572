package agent

import (
	"net/http"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/helper/apiconv"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/wire"
)

// jobRollout serves GET /v1/job/{id}/rollout[?deployment=<id>]: the job,
// its latest deployment (or the one named, which must be the job's), and,
// of its allocations, every one still running or meant to run plus the
// newest of each node, with the ID of the deployment only on allocations
// of the deployment shown. It is a blocking query over jobs, deployments,
// allocations and nodes.
func (h *HTTPServer) jobRollout(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	depID := r.URL.Query().Get("deployment")
	withNodes := aclOf(r).AllowNodeRead()
	return h.jobQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot, job *structs.Job) (any, uint64, error) {
		var d *structs.Deployment
		var err error
		if depID != "" {
			d, err = snap.DeploymentByID(ws, depID)
			if err == nil && (d == nil || d.Namespace != job.Namespace || d.JobID != job.ID) {
				return nil, 0, notFound("deployment not found")
			}
		} else {
			d, err = snap.LatestDeploymentByJobID(ws, job.Namespace, job.ID)
		}
		if err != nil {
			return nil, 0, err
		}
		allocs, err := snap.AllocsByJob(ws, job.Namespace, job.ID, true)
		if err != nil {
			return nil, 0, err
		}
		out := &wire.RolloutView{Job: apiconv.JobToAPI(job), AllocColumns: wire.RolloutAllocColumns, Allocs: rolloutAllocRows(allocs, d)}
		if d != nil {
			out.Deployment = apiconv.DeploymentToAPI(d)
		}
		tables := []string{state.TableJobs, state.TableDeployments, state.TableAllocs}
		if withNodes {
			nodes, err := snap.Nodes(ws)
			if err != nil {
				return nil, 0, err
			}
			out.NodeColumns = wire.RolloutNodeColumns
			out.Nodes = make([][]any, 0, len(nodes))
			for _, n := range nodes {
				out.Nodes = append(out.Nodes, []any{n.ID, n.Name, n.Status, n.SchedulingEligibility, n.Datacenter, n.NodePool})
			}
			tables = append(tables, state.TableNodes)
		}
		return out, tableIndex(snap, tables...), nil
	})
}

// rolloutAllocRows keeps, of a job's allocations, those that run or are
// meant to (a node may briefly hold two) and the newest of each node,
// leaving out the finished history the view never draws.
func rolloutAllocRows(allocs []*structs.Allocation, d *structs.Deployment) [][]any {
	newest := map[string]*structs.Allocation{}
	for _, a := range allocs {
		if n := newest[a.NodeID]; n == nil || a.CreateIndex > n.CreateIndex {
			newest[a.NodeID] = a
		}
	}
	rows := make([][]any, 0, len(newest))
	for _, a := range allocs {
		live := a.DesiredStatus == structs.AllocDesiredStatusRun && !a.ClientTerminal()
		if !live && newest[a.NodeID] != a {
			continue
		}
		var healthy *bool
		canary := false
		if a.DeploymentStatus != nil {
			healthy, canary = a.DeploymentStatus.Healthy, a.DeploymentStatus.Canary
		}
		dep := ""
		if d != nil && a.DeploymentID == d.ID {
			dep = d.ID
		}
		msg, phase := lastTaskEvent(a)
		rows = append(rows, []any{a.ID, a.NodeID, a.NodeName, a.JobVersion, a.ClientStatus, a.DesiredStatus,
			healthy, canary, a.CreateIndex, a.CreateTime, dep, msg, phase})
	}
	return rows
}

// lastTaskEvent returns the message and the "phase" detail of the newest
// task event of the allocation, across its tasks.
func lastTaskEvent(a *structs.Allocation) (msg, phase string) {
	var last *structs.TaskEvent
	for _, ts := range a.TaskStates {
		for _, e := range ts.Events {
			if last == nil || e.Time > last.Time {
				last = e
			}
		}
	}
	if last == nil {
		return "", ""
	}
	msg = last.DisplayMessage
	if msg == "" {
		msg = last.Message
	}
	return msg, last.Details["phase"]
}
