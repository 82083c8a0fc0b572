package nomad

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/drover-project/drover/nomad/broker"
	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/scheduler"
)

// schedulerTypes are the queues workers take evaluations from. "_failed"
// holds evaluations that exhausted their delivery limit.
var schedulerTypes = []string{structs.JobTypeSystem, structs.JobTypeSysBatch, structs.JobTypeService, structs.JobTypeBatch, broker.FailedQueue}

// failedEvalFollowupDelay is how long after a failed evaluation its follow-up
// runs.
const failedEvalFollowupDelay = time.Minute

// worker takes evaluations from the broker and runs a scheduler on each.
type worker struct {
	srv    *Server
	id     int
	queues []string    // broker queues it serves; nil means schedulerTypes
	busy   atomic.Bool // set while it runs an evaluation
}

func (w *worker) run(ctx context.Context) {
	logger := w.srv.logger.Named("worker").With("worker_id", w.id)
	for {
		q := w.queues
		if q == nil {
			q = schedulerTypes
		}
		eval, token, err := w.srv.broker.Dequeue(ctx, q)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			logger.Debug("dequeue failed", "error", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		w.busy.Store(true)
		err = w.process(eval, token)
		w.busy.Store(false)
		if err != nil {
			logger.Error("evaluation failed", "eval_id", eval.ID, "job_id", eval.JobID, "error", err)
			_ = w.srv.broker.Nack(eval.ID, token)
			continue
		}
		_ = w.srv.broker.Ack(eval.ID, token)
	}
}

// process runs one evaluation. Evaluations from the failed queue are marked
// failed with a delayed follow-up instead of being scheduled again.
func (w *worker) process(eval *structs.Evaluation, token string) error {
	snap := w.srv.State().Snapshot()
	if stored, err := snap.EvalByID(nil, eval.ID); err == nil && stored == nil {
		return nil // deleted by an operator while the broker was paused
	}
	if w.srv.broker.IsFailed(eval.ID) {
		return w.failEval(eval)
	}
	sched, err := scheduler.New(eval.Type, w.srv.logger, snap, &workerPlanner{srv: w.srv, eval: eval, token: token}, w.srv.now)
	if err != nil {
		return err
	}
	return sched.Process(eval)
}

// failEval marks eval failed and creates a follow-up evaluation that runs
// after failedEvalFollowupDelay.
func (w *worker) failEval(eval *structs.Evaluation) error {
	now := w.srv.now()
	failed := eval.Copy()
	failed.Status = structs.EvalStatusFailed
	failed.StatusDescription = "evaluation reached delivery limit (3)"
	followup := eval.Copy()
	followup.ID = generateUUID()
	followup.Status = structs.EvalStatusPending
	followup.StatusDescription = ""
	followup.TriggeredBy = structs.EvalTriggerFailedFollowUp
	followup.PreviousEval = eval.ID
	followup.WaitUntil = now.Add(failedEvalFollowupDelay)
	followup.CreateTime, followup.ModifyTime = now.UnixNano(), now.UnixNano()
	failed.NextEval = followup.ID
	_, _, err := w.srv.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{failed, followup}})
	return err
}

// workerPlanner is the scheduler.Planner of one evaluation on the leader.
type workerPlanner struct {
	srv   *Server
	eval  *structs.Evaluation
	token string
}

// SubmitPlan sends plan through the plan queue. On a partial commit it returns
// a snapshot at least as new as the result's RefreshIndex.
func (p *workerPlanner) SubmitPlan(plan *structs.Plan) (*structs.PlanResult, scheduler.State, error) {
	ctx, cancel := context.WithTimeout(context.Background(), raftApplyTimeout)
	defer cancel()
	result, err := p.srv.plans.Submit(ctx, plan)
	if err != nil {
		return nil, nil, err
	}
	if result.RefreshIndex == 0 {
		return result, nil, nil
	}
	if err := p.srv.waitForIndex(ctx, result.RefreshIndex); err != nil {
		return nil, nil, err
	}
	return result, p.srv.State().Snapshot(), nil
}

// UpdateEval records the evaluation's outcome.
func (p *workerPlanner) UpdateEval(eval *structs.Evaluation) error {
	eval.ModifyTime = p.srv.now().UnixNano()
	_, _, err := p.srv.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{eval}})
	return err
}

// CreateEval creates a follow-up evaluation.
func (p *workerPlanner) CreateEval(eval *structs.Evaluation) error {
	now := p.srv.now().UnixNano()
	eval.CreateTime, eval.ModifyTime = now, now
	_, _, err := p.srv.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{eval}})
	return err
}

// waitForIndex waits until the local state store has applied index.
func (s *Server) waitForIndex(ctx context.Context, index uint64) error {
	for s.State().LatestIndex() < index {
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for state index %d: %w", index, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}
