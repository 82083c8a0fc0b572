package nomad

import (
	"context"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// UpsertNodePool validates pool and creates or updates it through raft.
// Bad input is a *structs.RequestError.
func (s *Server) UpsertNodePool(caller *acl.ACL, pool *structs.NodePool) (uint64, error) {
	if err := permit(caller.IsManagement()); err != nil {
		return 0, err
	}
	if pool == nil {
		return 0, &structs.RequestError{Kind: structs.ErrBadRequest, Msg: "missing node pool"}
	}
	if pool.Name == "" {
		return 0, &structs.RequestError{Kind: structs.ErrBadRequest, Msg: "missing node pool name"}
	}
	if err := pool.Validate(); err != nil {
		return 0, &structs.RequestError{Kind: structs.ErrBadRequest, Msg: err.Error()}
	}
	return s.applyChecked(structs.NodePoolUpsertRequestType, &structs.NodePoolUpsertRequest{NodePools: []*structs.NodePool{pool}})
}

// DeleteNodePool deletes the pool name: a missing one is not found, a
// built-in one or one with nodes or jobs left is refused.
func (s *Server) DeleteNodePool(caller *acl.ACL, name string) (uint64, error) {
	if err := permit(caller.IsManagement()); err != nil {
		return 0, err
	}
	if name == "" {
		return 0, &structs.RequestError{Kind: structs.ErrBadRequest, Msg: "missing node pool name"}
	}
	p, err := s.State().NodePoolByName(nil, name)
	if err != nil {
		return 0, err
	}
	if p == nil {
		return 0, structs.NotFoundf("node pool %q not found", name)
	}
	return s.applyChecked(structs.NodePoolDeleteRequestType, &structs.NodePoolDeleteRequest{Names: []string{name}})
}

// applyChecked applies msg through raft and returns the FSM's error, if
// any, as the error.
func (s *Server) applyChecked(t structs.MessageType, msg any) (uint64, error) {
	resp, index, err := s.raftApply(t, msg)
	if err != nil {
		return 0, err
	}
	if rerr, ok := resp.(error); ok {
		return 0, rerr
	}
	return index, nil
}

// The reads of node pools: each needs node read.

// NodePoolList lists the node pools whose name starts with opts.Prefix and
// that opts.Filter accepts (it receives each *structs.NodePool), paged by
// name (opts.PerPage, opts.NextToken; meta.NextToken starts the next page).
func (s *Server) NodePoolList(ctx context.Context, opts QueryOptions) ([]*structs.NodePool, QueryMeta, error) {
	if !opts.ACL.AllowNodeRead() {
		return nil, s.refusedMeta(), structs.ErrPermissionDenied
	}
	var out []*structs.NodePool
	var next string
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		out, next = nil, ""
		pools, err := snap.NodePools(ws, opts.Prefix)
		if err != nil {
			return 0, err
		}
		if pools, err = applyFilter(&opts, pools, func(p *structs.NodePool) any { return p }); err != nil {
			return 0, err
		}
		out, next = paginate(&opts, pools, func(p *structs.NodePool) string { return p.Name })
		return tableIndex(snap, state.TableNodePools), nil
	})
	meta.NextToken = next
	return out, meta, err
}

// NodePoolGet returns node pool name (404 "node pool not found").
func (s *Server) NodePoolGet(ctx context.Context, opts QueryOptions, name string) (*structs.NodePool, QueryMeta, error) {
	if !opts.ACL.AllowNodeRead() {
		return nil, s.refusedMeta(), structs.ErrPermissionDenied
	}
	var out *structs.NodePool
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		p, err := snap.NodePoolByName(ws, name)
		if err != nil {
			return 0, err
		}
		out = p
		if p == nil {
			return tableIndex(snap, state.TableNodePools), structs.NotFoundf("node pool not found")
		}
		return max(p.ModifyIndex, 1), nil
	})
	return out, meta, err
}

// nodePoolQuery runs fn as a blocking query once node pool name is found
// (404 "node pool not found"), after the node read check.
func (s *Server) nodePoolQuery(ctx context.Context, opts *QueryOptions, name string, fn func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error)) (QueryMeta, error) {
	if !opts.ACL.AllowNodeRead() {
		return s.refusedMeta(), structs.ErrPermissionDenied
	}
	return s.blockingQuery(ctx, opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		p, err := snap.NodePoolByName(ws, name)
		if err != nil {
			return 0, err
		}
		if p == nil {
			return tableIndex(snap, state.TableNodePools), structs.NotFoundf("node pool not found")
		}
		return fn(ws, snap)
	})
}

// poolOf is the pool a node or job names ("" is the default pool).
func poolOf(pool string) string {
	if pool == "" {
		return structs.NodePoolDefault
	}
	return pool
}

// NodePoolNodes lists the nodes of pool name ("all": every node; "default":
// those that name no other pool), paged by ID.
func (s *Server) NodePoolNodes(ctx context.Context, opts QueryOptions, name string) ([]*structs.Node, QueryMeta, error) {
	var out []*structs.Node
	var next string
	meta, err := s.nodePoolQuery(ctx, &opts, name, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		out, next = nil, ""
		nodes, err := snap.Nodes(ws)
		if err != nil {
			return 0, err
		}
		var in []*structs.Node
		for _, n := range nodes {
			if name == structs.NodePoolAll || poolOf(n.NodePool) == name {
				in = append(in, n)
			}
		}
		out, next = paginate(&opts, in, func(n *structs.Node) string { return n.ID })
		return tableIndex(snap, state.TableNodes, state.TableNodePools), nil
	})
	meta.NextToken = next
	return out, meta, err
}

// NodePoolJobs lists, with their summaries, the jobs of opts.Namespace
// (AllNamespaces: all) that run in pool name, paged by namespace and ID.
func (s *Server) NodePoolJobs(ctx context.Context, opts QueryOptions, name string) ([]JobListEntry, QueryMeta, error) {
	var out []JobListEntry
	var next string
	meta, err := s.nodePoolQuery(ctx, &opts, name, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		out, next = nil, ""
		jobs, err := snap.Jobs(ws, opts.namespace())
		if err != nil {
			return 0, err
		}
		var in []*structs.Job
		for _, j := range jobs {
			if poolOf(j.NodePool) == name {
				in = append(in, j)
			}
		}
		page, token := paginateNamespaced(&opts, in, func(j *structs.Job) (string, string) { return j.Namespace, j.ID })
		entries := make([]JobListEntry, 0, len(page))
		for _, j := range page {
			sum, err := snap.JobSummaryByID(ws, j.Namespace, j.ID)
			if err != nil {
				return 0, err
			}
			entries = append(entries, JobListEntry{Job: j, Summary: sum})
		}
		out, next = entries, token
		return tableIndex(snap, state.TableJobs, state.TableNodePools), nil
	})
	meta.NextToken = next
	return out, meta, err
}
