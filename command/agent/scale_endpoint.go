package agent

import (
	"net/http"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/nomad"
	"github.com/drover-project/drover/nomad/structs"
)

func (h *HTTPServer) jobScale(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req api.ScalingRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, 0, err
	}
	id := r.PathValue("id")
	if j := req.Target["Job"]; j != "" && j != id {
		return nil, 0, badRequest("job ID in payload did not match URL")
	}
	reply, err := h.srv.JobScale(&nomad.JobScaleArgs{
		Namespace: namespace(r), JobID: id, Group: req.Target["Group"], Count: req.Count,
		Message: req.Message, Error: req.Error, Meta: req.Meta,
		EnforceIndex: req.JobModifyIndex, PolicyOverride: req.PolicyOverride, ACL: aclOf(r),
	})
	if err != nil {
		return nil, 0, err
	}
	return &api.JobRegisterResponse{EvalID: reply.EvalID, EvalCreateIndex: reply.EvalCreateIndex,
		JobModifyIndex: reply.JobModifyIndex, QueryMeta: api.QueryMeta{LastIndex: reply.Index, KnownLeader: true}}, reply.Index, nil
}

func (h *HTTPServer) jobScaleStatus(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	sc, index, err := readByID(r, h.srv.JobScaleStatus)
	if err != nil {
		return nil, index, err
	}
	return scaleStatus(sc.Job, sc.Allocs, sc.Events), index, nil
}

// scaleStatus counts, per group, the desired count, the allocations placed
// (wanted running, not finished), running, and healthy or unhealthy in
// their deployment, with the group's recent scaling events.
func scaleStatus(job *structs.Job, allocs []*structs.Allocation, events *structs.JobScalingEvents) *api.JobScaleStatusResponse {
	out := &api.JobScaleStatusResponse{
		JobID: job.ID, Namespace: job.Namespace, JobCreateIndex: job.CreateIndex, JobModifyIndex: job.JobModifyIndex,
		JobStopped: job.Stop, TaskGroups: map[string]api.TaskGroupScaleStatus{},
	}
	for _, tg := range job.TaskGroups {
		s := api.TaskGroupScaleStatus{Desired: tg.Count, Events: []api.ScalingEvent{}}
		for _, a := range allocs {
			if a.TaskGroup != tg.Name || a.Terminal() {
				continue
			}
			s.Placed++
			if a.ClientStatus == structs.AllocClientStatusRunning {
				s.Running++
			}
			switch {
			case a.DeploymentStatus.IsHealthy():
				s.Healthy++
			case a.DeploymentStatus.IsUnhealthy():
				s.Unhealthy++
			}
		}
		if events != nil {
			for _, e := range events.ScalingEvents[tg.Name] {
				s.Events = append(s.Events, api.ScalingEvent{
					Count: e.Count, PreviousCount: e.PreviousCount, Error: e.Error, Message: e.Message,
					Meta: e.Meta, EvalID: e.EvalID, Time: e.Time, CreateIndex: e.CreateIndex,
				})
			}
		}
		out.TaskGroups[tg.Name] = s
	}
	return out
}

// scalingPolicyToAPI is the API form of a scaling policy.
func scalingPolicyToAPI(sp nomad.ScalingPolicy) *api.ScalingPolicy {
	j, tg, p := sp.Job, sp.Group, sp.Group.Scaling
	return &api.ScalingPolicy{
		ID: sp.ID, Namespace: j.Namespace,
		Min: new(p.Min), Max: p.Max, Policy: p.Policy, Enabled: new(p.Enabled), Type: p.Type,
		Target:      map[string]string{"Namespace": j.Namespace, "Job": j.ID, "Group": tg.Name},
		CreateIndex: j.CreateIndex, ModifyIndex: j.ModifyIndex,
	}
}

func (h *HTTPServer) scalingPoliciesList(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	opts, err := queryOptions(r)
	if err != nil {
		return nil, 0, err
	}
	ps, meta, err := h.srv.ScalingPolicyList(r.Context(), opts)
	if err != nil {
		return nil, metaIndex(meta), err
	}
	out := make([]*api.ScalingPolicyListStub, 0, len(ps))
	for _, sp := range ps {
		p := scalingPolicyToAPI(sp)
		out = append(out, &api.ScalingPolicyListStub{ID: p.ID, Enabled: *p.Enabled, Type: p.Type, Target: p.Target,
			CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex})
	}
	return out, metaIndex(meta), nil
}

func (h *HTTPServer) scalingPolicyGet(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	return serveByID(r, h.srv.ScalingPolicyGet, func(sp *nomad.ScalingPolicy) *api.ScalingPolicy { return scalingPolicyToAPI(*sp) })
}
