package nomad

import (
	"context"
	"time"

	"github.com/drover-project/drover/nomad/structs"
)

// barrierTimeout bounds the wait for a new leader to catch up with its log.
const barrierTimeout = time.Minute

// monitorLeadership starts and stops leader duties as leadership changes.
func (s *Server) monitorLeadership() {
	for isLeader := range s.cluster.LeaderCh() {
		if isLeader {
			s.establishLeadership()
		} else {
			s.revokeLeadership()
		}
	}
}

// establishLeadership waits for the FSM to apply every committed entry, then
// enables the broker and plan queue, starts the reaper of cancelled
// evaluations, re-enqueues pending evaluations and starts the deployment
// watcher and the scheduler workers.
func (s *Server) establishLeadership() {
	s.leaderMu.Lock()
	defer s.leaderMu.Unlock()
	if s.leaderCancel != nil {
		return
	}
	// The term is read before the barrier: if leadership is lost and won
	// again meanwhile, the term moved on and reads stay gated.
	term := s.cluster.Raft().CurrentTerm()
	if err := s.cluster.Barrier(barrierTimeout); err != nil {
		s.logger.Error("leadership barrier failed; not taking leader duties", "error", err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.leaderCancel = cancel
	s.readsReadyTerm.Store(term)
	s.broker.SetEnabled(true)
	if paused, err := s.EvalBrokerPaused(); err == nil {
		s.broker.SetPaused(paused)
	}
	s.leaderDone.Add(1)
	go func() {
		defer s.leaderDone.Done()
		s.runSchedulerConfig(ctx)
	}()

	s.leaderDone.Add(1)
	go func() {
		defer s.leaderDone.Done()
		s.plans.Run(ctx)
	}()
	s.leaderDone.Add(1)
	go func() {
		defer s.leaderDone.Done()
		s.runEvalReaper(ctx)
	}()
	s.restoreEvals()
	// The deployment watcher stops when revokeLeadership cancels ctx.
	s.leaderDone.Add(1)
	go func() {
		defer s.leaderDone.Done()
		s.runDeploymentWatcher(ctx)
	}()
	s.leaderDone.Add(1)
	go func() {
		defer s.leaderDone.Done()
		s.runPrefetch(ctx)
	}()
	// So does the image watcher (its state is in raft).
	s.leaderDone.Add(1)
	go func() {
		defer s.leaderDone.Done()
		s.runImageWatcher(ctx)
	}()
	// The periodic dispatcher's launch records are in raft too.
	s.leaderDone.Add(1)
	go func() {
		defer s.leaderDone.Done()
		s.runPeriodicDispatcher(ctx)
	}()
	s.initializeHeartbeats()
	s.leaderDone.Add(1)
	go func() {
		defer s.leaderDone.Done()
		s.initializeKeyring(ctx)
	}()
	s.leaderDone.Add(1)
	go func() {
		defer s.leaderDone.Done()
		s.runGC(ctx)
	}()
	s.leaderDone.Add(1)
	go func() {
		defer s.leaderDone.Done()
		s.runVariableLocks(ctx)
	}()
	s.leaderDone.Add(1)
	go func() {
		defer s.leaderDone.Done()
		s.runDrainer(ctx)
	}()
	s.workers.start(ctx)
	s.leaderDone.Add(1)
	go func() {
		defer s.leaderDone.Done()
		<-ctx.Done()
		s.workers.wait()
	}()
	s.logger.Info("cluster leadership acquired")
}

// revokeLeadership stops leader duties; it returns when workers, the plan
// queue and the deployment watcher have stopped.
func (s *Server) revokeLeadership() {
	s.leaderMu.Lock()
	defer s.leaderMu.Unlock()
	if s.leaderCancel == nil {
		return
	}
	s.readsReadyTerm.Store(0)
	s.broker.SetEnabled(false)
	s.heartbeats.stop()
	s.leaderCancel()
	s.leaderDone.Wait()
	s.varLocks.reset() // the next term rebuilds its own from state
	s.leaderCancel = nil
	s.logger.Info("cluster leadership lost")
}

// restoreEvals enqueues every pending evaluation in state.
func (s *Server) restoreEvals() {
	evals, err := s.State().Evals(nil, "*")
	if err != nil {
		s.logger.Error("failed to restore evaluations", "error", err)
		return
	}
	s.enqueueEvals(evals)
}

// newEval returns a pending evaluation of job triggered by trigger.
func (s *Server) newEval(job *structs.Job, trigger string) *structs.Evaluation {
	now := s.now().UnixNano()
	return &structs.Evaluation{
		ID:          generateUUID(),
		Namespace:   job.Namespace,
		Priority:    job.Priority,
		Type:        job.Type,
		TriggeredBy: trigger,
		JobID:       job.ID,
		Status:      structs.EvalStatusPending,
		CreateTime:  now,
		ModifyTime:  now,
	}
}
