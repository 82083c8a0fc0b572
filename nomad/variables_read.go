package nomad

import (
	"context"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// VariableList is ListVariables as a blocking query with opts (namespace,
// prefix, index, wait, stale, the caller's ACL); its index is 0 while no
// variable was ever written, as Nomad lists report it.
func (s *Server) VariableList(ctx context.Context, opts QueryOptions) ([]structs.VariableMeta, QueryMeta, error) {
	var out []structs.VariableMeta
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		metas, index, err := s.ListVariables(opts.ACL, ws, snap, opts.namespace(), opts.Prefix)
		out = metas
		return index, err
	})
	return out, s.listIndex(meta, state.TableVariables), err
}

// VariableGet is ReadVariable as a blocking query with opts: nil (and no
// error) for a variable that does not exist.
func (s *Server) VariableGet(ctx context.Context, opts QueryOptions, path string) (*structs.VariableDecrypted, QueryMeta, error) {
	var out *structs.VariableDecrypted
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		v, index, err := s.ReadVariable(opts.ACL, ws, snap, opts.namespace(), path)
		out = v
		return index, err
	})
	return out, meta, err
}
