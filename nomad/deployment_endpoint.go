package nomad

import (
	"context"
	"errors"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/deploymentwatcher"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// DeploymentUpdateReply reports a deployment action.
type DeploymentUpdateReply struct {
	EvalID                string
	EvalCreateIndex       uint64
	DeploymentModifyIndex uint64
	RevertedJobVersion    *uint64
	Index                 uint64
}

// activeDeployment returns the deployment id, refusing missing ones (404)
// and, for actions that need it, terminal ones with Nomad's wording.
func (s *Server) activeDeployment(id, action string) (*structs.Deployment, *structs.Job, error) {
	d, err := s.State().DeploymentByID(nil, id)
	if err != nil {
		return nil, nil, err
	}
	if d == nil {
		return nil, nil, structs.NotFoundf("deployment not found")
	}
	if !d.Active() {
		return nil, nil, structs.BadRequestf("can't %s terminal deployment", action)
	}
	job, err := s.State().JobByID(nil, d.Namespace, d.JobID)
	if err != nil {
		return nil, nil, err
	}
	if job == nil {
		return nil, nil, structs.NotFoundf("job for deployment not found")
	}
	return d, job, nil
}

// endedMeanwhile maps the state store's refusal to change a deployment that
// became terminal after activeDeployment read it (the deployment watcher
// may finish it at any time) to the error activeDeployment gives.
func (s *Server) endedMeanwhile(err error, id, action string) error {
	if !errors.Is(err, state.ErrConflict) {
		return err
	}
	if d, rerr := s.State().DeploymentByID(nil, id); rerr == nil && d != nil && !d.Active() {
		return structs.BadRequestf("can't %s terminal deployment", action)
	}
	return err
}

// deploymentEval is the evaluation that follows a deployment action.
func (s *Server) deploymentEval(d *structs.Deployment, job *structs.Job) *structs.Evaluation {
	e := s.newEval(job, structs.EvalTriggerDeploymentWatcher)
	e.DeploymentID = d.ID
	e.JobModifyIndex = job.JobModifyIndex
	return e
}

// DeploymentPromote promotes the canaries of all groups (all) or of groups.
// Every promoted group must have all its desired canaries healthy; the
// deployment's description goes back to "Deployment is running".
func (s *Server) DeploymentPromote(caller *acl.ACL, id string, all bool, groups []string) (*DeploymentUpdateReply, error) {
	if err := s.requireDeploymentSubmit(caller, id); err != nil {
		return nil, err
	}
	d, job, err := s.activeDeployment(id, "promote")
	if err != nil {
		return nil, err
	}
	if err := checkPromotable(d, all, groups); err != nil {
		return nil, err
	}
	allocs, err := s.State().AllocsByDeployment(nil, id)
	if err != nil {
		return nil, err
	}
	selected := groups
	if all {
		selected = nil
	}
	if g, healthy, desired := deploymentwatcher.UnhealthyCanaries(d, allocs, selected); g != "" {
		return nil, structs.BadRequestf("Task group %q has %d/%d healthy allocations", g, healthy, desired)
	}
	eval := s.deploymentEval(d, job)
	req := &structs.DeploymentPromoteRequest{DeploymentID: id, All: all, Groups: groups, Eval: eval, UpdatedAt: s.now().UnixNano()}
	_, index, err := s.raftApply(structs.DeploymentPromoteRequestType, req)
	if err != nil {
		return nil, s.endedMeanwhile(err, id, "promote")
	}
	return &DeploymentUpdateReply{EvalID: eval.ID, EvalCreateIndex: index, DeploymentModifyIndex: index, Index: index}, nil
}

// checkPromotable refuses promotions of deployments without canaries or of
// groups the deployment does not have, in Nomad's words.
func checkPromotable(d *structs.Deployment, all bool, groups []string) error {
	hasCanaries := false
	for _, st := range d.TaskGroups {
		if st.DesiredCanaries > 0 {
			hasCanaries = true
		}
	}
	if !hasCanaries {
		return structs.BadRequestf("No canaries to promote")
	}
	if all {
		return nil
	}
	for _, g := range groups {
		if _, ok := d.TaskGroups[g]; !ok {
			return structs.BadRequestf("Deployment does not include task group %q", g)
		}
	}
	return nil
}

// DeploymentPause pauses (pause=true) or resumes a deployment.
func (s *Server) DeploymentPause(caller *acl.ACL, id string, pause bool) (*DeploymentUpdateReply, error) {
	if err := s.requireDeploymentSubmit(caller, id); err != nil {
		return nil, err
	}
	action := "resume"
	if pause {
		action = "pause"
	}
	d, job, err := s.activeDeployment(id, action)
	if err != nil {
		return nil, err
	}
	upd := &structs.DeploymentStatusUpdate{DeploymentID: id}
	var eval *structs.Evaluation
	if pause {
		upd.Status, upd.StatusDescription = structs.DeploymentStatusPaused, structs.DeploymentStatusDescriptionPaused
	} else {
		upd.Status, upd.StatusDescription = structs.DeploymentStatusRunning, structs.DeploymentStatusDescriptionRunning
		eval = s.deploymentEval(d, job)
	}
	req := &structs.DeploymentStatusUpdateRequest{Update: upd, Eval: eval, UpdatedAt: s.now().UnixNano()}
	_, index, err := s.raftApply(structs.DeploymentStatusUpdateRequestType, req)
	if err != nil {
		return nil, s.endedMeanwhile(err, id, action)
	}
	reply := &DeploymentUpdateReply{DeploymentModifyIndex: index, Index: index}
	if eval != nil {
		reply.EvalID, reply.EvalCreateIndex = eval.ID, index
	}
	return reply, nil
}

// DeploymentFail marks a deployment failed and, when a group has
// auto_revert, registers the newest stable version of the job again. The
// revert decision is the deployment watcher's (deploymentwatcher.Failure).
func (s *Server) DeploymentFail(caller *acl.ACL, id string) (*DeploymentUpdateReply, error) {
	if err := s.requireDeploymentSubmit(caller, id); err != nil {
		return nil, err
	}
	d, job, err := s.activeDeployment(id, "fail")
	if err != nil {
		return nil, err
	}
	versions, err := s.State().JobVersionsByID(nil, job.Namespace, job.ID)
	if err != nil {
		return nil, err
	}
	upd, ce := deploymentwatcher.Failure(d, job, versions, structs.DeploymentStatusDescriptionFailedByUser)
	now := s.now()
	req := &structs.DeploymentStatusUpdateRequest{
		Update: &structs.DeploymentStatusUpdate{DeploymentID: id, Status: upd.Status, StatusDescription: upd.Description},
		Job:    upd.RevertJob,
		Eval:   deploymentwatcher.NewEval(job, ce, now),
		// UpdatedAt is set by the leader so that every server stores it.
		UpdatedAt: now.UnixNano(),
	}
	reply := &DeploymentUpdateReply{}
	if upd.RevertJob != nil {
		v := upd.RevertJob.Version
		reply.RevertedJobVersion = &v
	}
	_, index, err := s.raftApply(structs.DeploymentStatusUpdateRequestType, req)
	if err != nil {
		return nil, s.endedMeanwhile(err, id, "fail")
	}
	reply.EvalID, reply.EvalCreateIndex, reply.DeploymentModifyIndex, reply.Index = req.Eval.ID, index, index, index
	return reply, nil
}

// DeploymentAllocHealth sets the health of allocations of a deployment (the
// `manual` health check mode).
func (s *Server) DeploymentAllocHealth(caller *acl.ACL, id string, healthy, unhealthy []string) (*DeploymentUpdateReply, error) {
	if err := s.requireDeploymentSubmit(caller, id); err != nil {
		return nil, err
	}
	d, job, err := s.activeDeployment(id, "set health of allocations for")
	if err != nil {
		return nil, err
	}
	for _, allocID := range append(append([]string(nil), healthy...), unhealthy...) {
		a, err := s.State().AllocByID(nil, allocID)
		if err != nil {
			return nil, err
		}
		if a == nil || a.DeploymentID != id {
			return nil, structs.BadRequestf("Allocation %q is not part of the deployment", allocID)
		}
	}
	eval := s.deploymentEval(d, job)
	req := &structs.DeploymentAllocHealthRequest{
		DeploymentID: id, HealthyAllocationIDs: healthy, UnhealthyAllocationIDs: unhealthy,
		Timestamp: s.now().UnixNano(), Eval: eval,
	}
	_, index, err := s.raftApply(structs.DeploymentAllocHealthRequestType, req)
	if err != nil {
		return nil, s.endedMeanwhile(err, id, "set health of allocations for")
	}
	return &DeploymentUpdateReply{EvalID: eval.ID, EvalCreateIndex: index, DeploymentModifyIndex: index, Index: index}, nil
}

// The reads of deployments. A single deployment is found by ID whatever
// opts.Namespace says; read-job is checked in its own namespace.

// DeploymentList lists the deployments of opts.Namespace (AllNamespaces: of
// every namespace the caller may read) whose ID starts with opts.Prefix and
// that opts.Filter accepts (it receives each *structs.Deployment).
func (s *Server) DeploymentList(ctx context.Context, opts QueryOptions) ([]*structs.Deployment, QueryMeta, error) {
	ns := opts.namespace()
	if err := requireNamespace(opts.ACL, ns, acl.NamespaceCapabilityReadJob); err != nil {
		return nil, s.refusedMeta(), err
	}
	var out []*structs.Deployment
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		out = nil
		var ds []*structs.Deployment
		var err error
		if opts.Prefix != "" {
			ds, err = snap.DeploymentsByIDPrefix(ws, ns, opts.Prefix)
		} else {
			ds, err = snap.Deployments(ws, ns)
		}
		if err != nil {
			return 0, err
		}
		ds = filterByNamespace(opts.ACL, acl.NamespaceCapabilityReadJob, ds, func(d *structs.Deployment) string { return d.Namespace })
		ds, err = applyFilter(&opts, ds, func(d *structs.Deployment) any { return d })
		out = ds
		return tableIndex(snap, state.TableDeployments), err
	})
	return out, meta, err
}

// requireDeploymentSubmit checks that caller may act on deployment id:
// submit-job in its namespace (for a missing one, in some namespace: the
// action answers its 404). nil is ACLs disabled, or an internal caller.
func (s *Server) requireDeploymentSubmit(caller *acl.ACL, id string) error {
	ns, found := s.DeploymentNamespace(id)
	return requireObjectNamespace(caller, ns, found, acl.NamespaceCapabilitySubmitJob)
}

// DeploymentNamespace returns the namespace of deployment id, and whether
// it exists (for the authorization of the routes that name it).
func (s *Server) DeploymentNamespace(id string) (string, bool) {
	d, err := s.State().DeploymentByID(nil, id)
	if err != nil || d == nil {
		return "", false
	}
	return d.Namespace, true
}

// deploymentCheck checks read-job for deployment id (not watched).
func deploymentCheck(a *acl.ACL, snap *state.Snapshot, id string) error {
	d, err := snap.DeploymentByID(nil, id)
	if err != nil {
		return err
	}
	ns := ""
	if d != nil {
		ns = d.Namespace
	}
	return requireObjectNamespace(a, ns, d != nil, acl.NamespaceCapabilityReadJob)
}

// DeploymentGet returns deployment id (404 "deployment not found").
func (s *Server) DeploymentGet(ctx context.Context, opts QueryOptions, id string) (*structs.Deployment, QueryMeta, error) {
	var out *structs.Deployment
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		out = nil
		if err := deploymentCheck(opts.ACL, snap, id); err != nil {
			return 0, err
		}
		d, err := snap.DeploymentByID(ws, id)
		if err != nil {
			return 0, err
		}
		if d == nil {
			return tableIndex(snap, state.TableDeployments), structs.NotFoundf("deployment not found")
		}
		out = d
		return d.ModifyIndex, nil
	})
	return out, meta, err
}

// DeploymentAllocations lists the allocations of deployment id (none for
// an unknown deployment).
func (s *Server) DeploymentAllocations(ctx context.Context, opts QueryOptions, id string) ([]*structs.Allocation, QueryMeta, error) {
	var out []*structs.Allocation
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		out = nil
		if err := deploymentCheck(opts.ACL, snap, id); err != nil {
			return 0, err
		}
		allocs, err := snap.AllocsByDeployment(ws, id)
		out = allocs
		return tableIndex(snap, state.TableAllocs), err
	})
	return out, meta, err
}
