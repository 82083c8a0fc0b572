package nomad

import (
	"context"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/state"
)

// CSIEmptyList is the read behind the lists of CSI (and host) volumes and
// plugins, which Drover has none of: a blocking query at the store's
// latest index that answers when the wait ends. The caller checks the
// capability of the list (it depends on the list's type).
func (s *Server) CSIEmptyList(ctx context.Context, opts QueryOptions) (QueryMeta, error) {
	return s.blockingQuery(ctx, &opts, func(_ memdb.WatchSet, snap *state.Snapshot) (uint64, error) {
		return snap.LatestIndex(), nil
	})
}
