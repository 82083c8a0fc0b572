package nomad

import (
	"context"

	"github.com/go-jose/go-jose/v4"
	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// ErrActiveRootKey refuses the deletion of the active root key.
var ErrActiveRootKey = state.ErrActiveRootKey

// KeyringList lists the root keys (management only).
func (s *Server) KeyringList(ctx context.Context, opts QueryOptions) ([]*structs.RootKey, QueryMeta, error) {
	if !opts.ACL.IsManagement() {
		return nil, s.refusedMeta(), structs.ErrPermissionDenied
	}
	var out []*structs.RootKey
	meta, err := s.blockingQuery(ctx, &opts, func(ws memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		keys, err := snap.RootKeys(ws)
		out = keys
		return tableIndex(snap, state.TableRootKeys), err
	})
	return out, meta, err
}

// PublicKeys returns the public halves of every root key and the keys
// table's index; unpublished reports keys left out (see PublicKeySet),
// err a failed read.
func (s *Server) PublicKeys() (set jose.JSONWebKeySet, index uint64, unpublished, err error) {
	snap := s.State().Snapshot()
	keys, err := snap.RootKeys(nil)
	if err != nil {
		return set, 0, nil, err
	}
	set, unpublished = PublicKeySet(keys)
	return set, tableIndex(snap, state.TableRootKeys), unpublished, nil
}
