package nomad

import (
	"context"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/search"
	"github.com/drover-project/drover/nomad/state"
)

// searchTables are the tables a search reads (its index).
var searchTables = []string{state.TableJobs, state.TableEvals, state.TableAllocs, state.TableNodes,
	state.TableDeployments, state.TableNodePools}

// SearchPrefix returns the IDs starting with prefix of opts.Namespace per
// context (see search.Prefix), and which lists were truncated.
func (s *Server) SearchPrefix(ctx context.Context, opts QueryOptions, prefix, context string) (map[string][]string, map[string]bool, QueryMeta, error) {
	var matches map[string][]string
	var truncated map[string]bool
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		m, t, err := search.Prefix(snap, opts.namespace(), prefix, context)
		if err != nil {
			return 0, err
		}
		matches, truncated = m, t
		return tableIndex(snap, searchTables...), nil
	})
	return matches, truncated, meta, err
}

// SearchFuzzy returns the names, images and commands of opts.Namespace
// containing text per context (see search.Fuzzy), and which lists were
// truncated.
func (s *Server) SearchFuzzy(ctx context.Context, opts QueryOptions, text, context string) (map[string][]search.Match, map[string]bool, QueryMeta, error) {
	var matches map[string][]search.Match
	var truncated map[string]bool
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		m, t, err := search.Fuzzy(snap, opts.namespace(), text, context)
		if err != nil {
			return 0, err
		}
		matches, truncated = m, t
		return tableIndex(snap, searchTables...), nil
	})
	return matches, truncated, meta, err
}
