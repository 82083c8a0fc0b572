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
func (s *Server) PrefetchDirectives(ctx context.Context, caller NodeCaller, minIndex uint64, wait time.Duration) ([]*structs.PrefetchDirective, uint64, error) {
	if _, err := s.authenticateNode(caller); err != nil {
		return nil, 0, err
	}
	dirs, index := s.prefetch.Directives(ctx, caller.NodeID, minIndex, wait)
	return dirs, index, nil
}

// PrefetchReport records a node's prefetch reports (leader only); each
// names its deployment and a final state (done or failed).
func (s *Server) PrefetchReport(caller NodeCaller, reports []*structs.PrefetchReport) error {
	if _, err := s.authenticateNode(caller); err != nil {
		return err
	}
	for i, rep := range reports {
		switch {
		case rep == nil || rep.DeploymentID == "":
			return structs.BadRequestf("Reports[%d].DeploymentID must be specified", i)
		case rep.State != structs.PrefetchStateDone && rep.State != structs.PrefetchStateFailed:
			return structs.BadRequestf("Reports[%d].State must be %q or %q, got %q", i, structs.PrefetchStateDone, structs.PrefetchStateFailed, rep.State)
		}
	}
	s.prefetch.Report(caller.NodeID, reports)
	return nil
}

// PrefetchStats counts this server's grants of pulls ahead of the wave.
func (s *Server) PrefetchStats() prefetch.Stats { return s.prefetch.Stats() }
