package nomad

import (
	"context"
	"time"

	"github.com/drover-project/drover/nomad/prefetch"
	"github.com/drover-project/drover/nomad/structs"
)

// runPrefetch publishes prefetch directives until ctx ends (when this
// server loses leadership).
func (s *Server) runPrefetch(ctx context.Context) { s.prefetch.Run(ctx) }

// PrefetchDirectives answers a node's blocking query for its prefetch
// directives, with their index (leader only: the record is in the leader's
// memory).
func (s *Server) PrefetchDirectives(ctx context.Context, nodeID string, minIndex uint64, wait time.Duration) ([]*structs.PrefetchDirective, uint64) {
	return s.prefetch.Directives(ctx, nodeID, minIndex, wait)
}

// PrefetchReport records a node's prefetch reports (leader only).
func (s *Server) PrefetchReport(nodeID string, reports []*structs.PrefetchReport) {
	s.prefetch.Report(nodeID, reports)
}

// PrefetchStats counts this server's grants of pulls ahead of the wave.
func (s *Server) PrefetchStats() prefetch.Stats { return s.prefetch.Stats() }
