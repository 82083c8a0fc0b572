package agent

import (
	"context"
	"net/http"

	"github.com/drover-project/drover/helper/apiconv"
	"github.com/drover-project/drover/nomad"
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
	ro, index, err := readByID(r, func(ctx context.Context, opts nomad.QueryOptions, id string) (*nomad.JobRollout, nomad.QueryMeta, error) {
		return h.srv.JobRollout(ctx, opts, id, depID)
	})
	if err != nil {
		return nil, index, err
	}
	out := &wire.RolloutView{Job: apiconv.JobToAPI(ro.Job), AllocColumns: wire.RolloutAllocColumns, Allocs: rolloutAllocRows(ro.Allocs, ro.Deployment)}
	if ro.Deployment != nil {
		out.Deployment = apiconv.DeploymentToAPI(ro.Deployment)
		out.Gates = wire.GatesOf(ro.Deployment)
	}
	if ro.Nodes != nil {
		out.NodeColumns = wire.RolloutNodeColumns
		out.Nodes = make([][]any, 0, len(ro.Nodes))
		for _, n := range ro.Nodes {
			out.Nodes = append(out.Nodes, []any{n.ID, n.Name, n.Status, n.SchedulingEligibility, n.Datacenter, n.NodePool})
		}
	}
	return out, index, nil
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
