package nomad

import (
	"context"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/search"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// searchTables are the tables a search reads (its index).
var searchTables = []string{state.TableJobs, state.TableEvals, state.TableAllocs, state.TableNodes,
	state.TableDeployments, state.TableNodePools}

// searchAccess returns what the caller (opts.ACL) may find by a search of
// context ctx in opts.Namespace, or ErrPermissionDenied: for a caller that
// may read neither jobs there, nor nodes, nor the namespace, and for a
// context the caller may not read (so that it learns why it gets nothing).
// Jobs and what they hold need read-job in their namespace; nodes and node
// pools node:read; a namespace any capability in it.
func searchAccess(opts *QueryOptions, ctx string) (*search.Access, error) {
	a := opts.ACL
	if a.IsManagement() {
		return nil, nil
	}
	ns := opts.namespace()
	access := &search.Access{
		JobNamespace: func(ns string) bool { return a.AllowNamespaceOperation(ns, acl.NamespaceCapabilityReadJob) },
		Nodes:        a.AllowNodeRead(),
		Namespace:    a.AllowNamespace,
	}
	nsVisible := true // "*": the namespaces context is filtered
	if ns == AllNamespaces {
		access.Jobs = a.AllowNamespaceOperationAnywhere(acl.NamespaceCapabilityReadJob)
	} else {
		access.Jobs = a.AllowNamespaceOperation(ns, acl.NamespaceCapabilityReadJob)
		nsVisible = a.AllowNamespace(ns)
	}
	ok := access.Jobs || access.Nodes || nsVisible
	switch search.ScopeOf(ctx) {
	case search.ScopeJobs:
		ok = ok && access.Jobs
	case search.ScopeNodes:
		ok = ok && access.Nodes
	case search.ScopeNamespaces:
		ok = ok && nsVisible
	}
	if !ok {
		return nil, structs.ErrPermissionDenied
	}
	return access, nil
}

// SearchPrefix returns the IDs starting with prefix of opts.Namespace per
// context (see search.Prefix) that the caller may read (see searchAccess),
// and which lists were truncated.
func (s *Server) SearchPrefix(ctx context.Context, opts QueryOptions, prefix, context string) (map[string][]string, map[string]bool, QueryMeta, error) {
	access, err := searchAccess(&opts, context)
	if err != nil {
		return nil, nil, s.refusedMeta(), err
	}
	var matches map[string][]string
	var truncated map[string]bool
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		m, t, err := search.Prefix(snap, access, opts.namespace(), prefix, context)
		if err != nil {
			return 0, err
		}
		matches, truncated = m, t
		return tableIndex(snap, searchTables...), nil
	})
	return matches, truncated, meta, err
}

// SearchFuzzy returns the names, images and commands of opts.Namespace
// containing text per context (see search.Fuzzy) that the caller may read
// (see searchAccess), and which lists were truncated.
func (s *Server) SearchFuzzy(ctx context.Context, opts QueryOptions, text, context string) (map[string][]search.Match, map[string]bool, QueryMeta, error) {
	access, err := searchAccess(&opts, context)
	if err != nil {
		return nil, nil, s.refusedMeta(), err
	}
	var matches map[string][]search.Match
	var truncated map[string]bool
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		m, t, err := search.Fuzzy(snap, access, opts.namespace(), text, context)
		if err != nil {
			return 0, err
		}
		matches, truncated = m, t
		return tableIndex(snap, searchTables...), nil
	})
	return matches, truncated, meta, err
}
