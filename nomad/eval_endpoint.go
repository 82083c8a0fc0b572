package nomad

import (
	"context"
	"sort"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// The reads of evaluations. A single evaluation is found by ID whatever
// opts.Namespace says (the CLI sends the user's namespace, not the
// object's); read-job is checked in the evaluation's own namespace.

// EvalList lists the evaluations of opts.Namespace (AllNamespaces: of every
// namespace the caller may read) whose ID starts with opts.Prefix, that
// opts.Filter accepts (it receives each *structs.Evaluation), paged by
// opts (see pageEvals; meta.NextToken starts the next page).
func (s *Server) EvalList(ctx context.Context, opts QueryOptions) ([]*structs.Evaluation, QueryMeta, error) {
	ns := opts.namespace()
	if err := requireNamespace(opts.ACL, ns, acl.NamespaceCapabilityReadJob); err != nil {
		return nil, s.refusedMeta(), err
	}
	var out []*structs.Evaluation
	var next string
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		out, next = nil, ""
		var evals []*structs.Evaluation
		var err error
		if opts.Prefix != "" {
			evals, err = snap.EvalsByIDPrefix(ws, ns, opts.Prefix)
		} else {
			evals, err = snap.Evals(ws, ns)
		}
		if err != nil {
			return 0, err
		}
		evals = filterByNamespace(opts.ACL, acl.NamespaceCapabilityReadJob, evals, evalNamespace)
		if evals, err = applyFilter(&opts, evals, func(e *structs.Evaluation) any { return e }); err != nil {
			return 0, err
		}
		page, token, err := pageEvals(&opts, evals, opts.Prefix != "")
		if err != nil {
			return 0, err
		}
		out, next = page, token
		return tableIndex(snap, state.TableEvals), nil
	})
	meta.NextToken = next
	return out, s.listIndex(meta, state.TableEvals), err
}

func evalNamespace(e *structs.Evaluation) string { return e.Namespace }

// EvalCount counts the evaluations of opts.Namespace (AllNamespaces: of
// every namespace the caller may read) that opts.Filter accepts (it
// receives each *structs.Evaluation).
func (s *Server) EvalCount(ctx context.Context, opts QueryOptions) (int, QueryMeta, error) {
	ns := opts.namespace()
	if err := requireNamespace(opts.ACL, ns, acl.NamespaceCapabilityReadJob); err != nil {
		return 0, s.refusedMeta(), err
	}
	count := 0
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		evals, err := snap.Evals(ws, ns)
		if err != nil {
			return 0, err
		}
		evals = filterByNamespace(opts.ACL, acl.NamespaceCapabilityReadJob, evals, evalNamespace)
		if evals, err = applyFilter(&opts, evals, func(e *structs.Evaluation) any { return e }); err != nil {
			return 0, err
		}
		count = len(evals)
		return tableIndex(snap, state.TableEvals), nil
	})
	return count, s.listIndex(meta, state.TableEvals), err
}

// EvalNamespace returns the namespace of evaluation id, and whether it
// exists (for the authorization of the routes that name it).
func (s *Server) EvalNamespace(id string) (string, bool) {
	e, err := s.State().EvalByID(nil, id)
	if err != nil || e == nil {
		return "", false
	}
	return e.Namespace, true
}

// requireObjectNamespace checks cap for an object of namespace ns that was
// found, and for one that was not, cap in some namespace (the caller then
// answers 404).
func requireObjectNamespace(a *acl.ACL, ns string, found bool, cap string) error {
	if !found {
		return requireNamespace(a, AllNamespaces, cap)
	}
	if !a.AllowNamespaceOperation(ns, cap) {
		return structs.ErrPermissionDenied
	}
	return nil
}

// EvalReply is an evaluation with, when asked for, the evaluations linked
// to it (see relatedEvals).
type EvalReply struct {
	Eval    *structs.Evaluation
	Related []*structs.Evaluation
}

// EvalGet returns evaluation id (404 "eval not found"), with related the
// evaluations linked to it.
func (s *Server) EvalGet(ctx context.Context, opts QueryOptions, id string, related bool) (*EvalReply, QueryMeta, error) {
	var out *EvalReply
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		out = nil
		e, err := snap.EvalByID(ws, id)
		if err != nil {
			return 0, err
		}
		if err := requireObjectNamespace(opts.ACL, evalNamespaceOrEmpty(e), e != nil, acl.NamespaceCapabilityReadJob); err != nil {
			return 0, err
		}
		if e == nil {
			return tableIndex(snap, state.TableEvals), structs.NotFoundf("eval not found")
		}
		reply := &EvalReply{Eval: e}
		if related {
			if reply.Related, err = relatedEvals(snap, ws, e); err != nil {
				return 0, err
			}
		}
		out = reply
		return e.ModifyIndex, nil
	})
	return out, meta, err
}

func evalNamespaceOrEmpty(e *structs.Evaluation) string {
	if e == nil {
		return ""
	}
	return e.Namespace
}

// relatedEvals returns, sorted by CreateIndex, the evaluations linked to e
// through NextEval, PreviousEval and BlockedEval, transitively (e itself
// excluded; an empty list, not nil, when there are none).
func relatedEvals(snap *state.Snapshot, ws memdb.WatchSet, e *structs.Evaluation) ([]*structs.Evaluation, error) {
	seen := map[string]bool{e.ID: true}
	queue := []*structs.Evaluation{e}
	found := []*structs.Evaluation{}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, id := range []string{cur.NextEval, cur.PreviousEval, cur.BlockedEval} {
			if id == "" || seen[id] {
				continue
			}
			seen[id] = true
			linked, err := snap.EvalByID(ws, id)
			if err != nil {
				return nil, err
			}
			if linked != nil {
				found = append(found, linked)
				queue = append(queue, linked)
			}
		}
	}
	sort.Slice(found, func(i, j int) bool { return found[i].CreateIndex < found[j].CreateIndex })
	return found, nil
}

// EvalAllocations lists the allocations evaluation id placed (none for an
// unknown evaluation).
func (s *Server) EvalAllocations(ctx context.Context, opts QueryOptions, id string) ([]*structs.Allocation, QueryMeta, error) {
	var out []*structs.Allocation
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		out = nil
		e, err := snap.EvalByID(nil, id) // for the check only: not watched
		if err != nil {
			return 0, err
		}
		if err := requireObjectNamespace(opts.ACL, evalNamespaceOrEmpty(e), e != nil, acl.NamespaceCapabilityReadJob); err != nil {
			return 0, err
		}
		allocs, err := snap.AllocsByEval(ws, id)
		out = allocs
		return tableIndex(snap, state.TableAllocs), err
	})
	return out, s.listIndex(meta, state.TableAllocs), err
}
