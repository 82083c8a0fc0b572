package nomad

import (
	"context"

	"github.com/drover-project/drover/nomad/structs"
)

// evalCancelledDescription is the status description of an evaluation that
// the broker cancelled in favour of a newer evaluation of its job (Nomad's
// wording).
const evalCancelledDescription = "canceled after more recent eval was processed"

// reapBatch bounds the evaluations recorded as cancelled in one raft entry.
const reapBatch = 1000

// runEvalReaper records, as they come, the evaluations the broker cancelled
// in favour of a newer one of their job: each still pending in state is
// written back with status "canceled". It runs on the leader until ctx
// ends; evaluations it could not record stay pending in state, so the next
// leader enqueues them again and its broker coalesces them anew.
func (s *Server) runEvalReaper(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.broker.CancelledCh():
		}
		superseded := s.broker.TakeCancelled()
		for len(superseded) > 0 {
			n := min(len(superseded), reapBatch)
			if err := s.recordCancelled(superseded[:n]); err != nil {
				if ctx.Err() == nil {
					s.logger.Error("failed to record cancelled evaluations", "count", n, "error", err)
				}
				break
			}
			superseded = superseded[n:]
		}
	}
}

// recordCancelled writes back those of evals still pending in state with
// status "canceled".
func (s *Server) recordCancelled(evals []*structs.Evaluation) error {
	now := s.now().UnixNano()
	snap := s.State().Snapshot()
	updates := make([]*structs.Evaluation, 0, len(evals))
	for _, e := range evals {
		cur, err := snap.EvalByID(nil, e.ID)
		if err != nil {
			return err
		}
		if cur == nil || cur.Status != structs.EvalStatusPending {
			continue
		}
		c := cur.Copy()
		c.Status = structs.EvalStatusCancelled
		c.StatusDescription = evalCancelledDescription
		c.ModifyTime = now
		updates = append(updates, c)
	}
	if len(updates) == 0 {
		return nil
	}
	_, _, err := s.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: updates})
	return err
}
