package nomad

import (
	"context"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// allocStopDescription is the DesiredDescription of an allocation an
// operator stopped.
const allocStopDescription = "alloc was stopped by the operator"

// AllocStop stops an allocation (its client kills its tasks), records tr
// on it (alloc stop sets Migrate; Reschedule and NoShutdownDelay as the
// operator asked) and creates an evaluation of its job (trigger
// alloc-stop), which replaces it where the job still wants one: a system
// job's node gets a new allocation; a service or batch group gets one
// that names the stopped allocation as its previous one (with Reschedule,
// extending its reschedule history), preferring another node. It returns
// the evaluation's ID ("" when the job is gone) and the raft index.
// caller needs alloc-lifecycle in the allocation's namespace (nil: ACLs
// disabled, or an internal caller).
func (s *Server) AllocStop(caller *acl.ACL, allocID string, tr structs.DesiredTransition) (string, uint64, error) {
	ns, found := s.AllocNamespace(allocID)
	if err := requireObjectNamespace(caller, ns, found, acl.NamespaceCapabilityAllocLifecycle); err != nil {
		return "", 0, err
	}
	alloc, err := s.State().AllocByID(nil, allocID)
	if err != nil {
		return "", 0, err
	}
	if alloc == nil {
		return "", 0, structs.NotFoundf("alloc not found")
	}
	if alloc.ClientTerminal() {
		// It already finished: there is nothing to migrate.
		tr.Migrate = false
	}
	req := &structs.AllocDesiredTransitionRequest{AllocIDs: []string{allocID}, Description: allocStopDescription, Transition: tr}
	job, err := s.State().JobByID(nil, alloc.Namespace, alloc.JobID)
	if err != nil {
		return "", 0, err
	}
	evalID := ""
	if job != nil {
		e := s.newEval(job, structs.EvalTriggerAllocStop)
		e.JobModifyIndex = job.JobModifyIndex
		e.NodeID = alloc.NodeID
		req.Evals, evalID = []*structs.Evaluation{e}, e.ID
	}
	index, err := s.applyChecked(structs.AllocDesiredTransitionRequestType, req)
	if err != nil {
		return "", 0, err
	}
	return evalID, index, nil
}

// The reads of allocations. A single allocation is found by ID whatever
// opts.Namespace says; read-job is checked in its own namespace.

// AllocList lists the allocations of opts.Namespace (AllNamespaces: of
// every namespace the caller may read) whose ID starts with opts.Prefix and
// that opts.Filter accepts (it receives each *structs.Allocation).
func (s *Server) AllocList(ctx context.Context, opts QueryOptions) ([]*structs.Allocation, QueryMeta, error) {
	ns := opts.namespace()
	if err := requireNamespace(opts.ACL, ns, acl.NamespaceCapabilityReadJob); err != nil {
		return nil, s.refusedMeta(), err
	}
	var out []*structs.Allocation
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		out = nil
		var allocs []*structs.Allocation
		var err error
		if opts.Prefix != "" {
			allocs, err = snap.AllocsByIDPrefix(ws, ns, opts.Prefix)
		} else {
			allocs, err = snap.Allocs(ws)
			allocs = allocsOfNamespace(allocs, ns)
		}
		if err != nil {
			return 0, err
		}
		allocs = filterByNamespace(opts.ACL, acl.NamespaceCapabilityReadJob, allocs, allocNamespace)
		allocs, err = applyFilter(&opts, allocs, func(a *structs.Allocation) any { return a })
		out = allocs
		return tableIndex(snap, state.TableAllocs), err
	})
	return out, s.listIndex(meta, state.TableAllocs), err
}

func allocNamespace(a *structs.Allocation) string { return a.Namespace }

// allocsOfNamespace keeps the allocations of ns (all for AllNamespaces).
func allocsOfNamespace(allocs []*structs.Allocation, ns string) []*structs.Allocation {
	if ns == AllNamespaces {
		return allocs
	}
	var out []*structs.Allocation
	for _, a := range allocs {
		if a.Namespace == ns {
			out = append(out, a)
		}
	}
	return out
}

// AllocNamespace returns the namespace of allocation id, and whether it
// exists (for the authorization of the routes that name it).
func (s *Server) AllocNamespace(id string) (string, bool) {
	a, err := s.State().AllocByID(nil, id)
	if err != nil || a == nil {
		return "", false
	}
	return a.Namespace, true
}

// AllocGet returns allocation id (404 "alloc not found").
func (s *Server) AllocGet(ctx context.Context, opts QueryOptions, id string) (*structs.Allocation, QueryMeta, error) {
	var out *structs.Allocation
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		out = nil
		a, err := snap.AllocByID(ws, id)
		if err != nil {
			return 0, err
		}
		if err := requireObjectNamespace(opts.ACL, allocNamespaceOrEmpty(a), a != nil, acl.NamespaceCapabilityReadJob); err != nil {
			return 0, err
		}
		if a == nil {
			return tableIndex(snap, state.TableAllocs), structs.NotFoundf("alloc not found")
		}
		out = a
		return a.ModifyIndex, nil
	})
	return out, meta, err
}

func allocNamespaceOrEmpty(a *structs.Allocation) string {
	if a == nil {
		return ""
	}
	return a.Namespace
}
