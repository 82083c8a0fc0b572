package nomad

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/scheduler"
)

// drainDecision is what the drainer must do at one moment.
type drainDecision struct {
	// Complete lists the draining nodes left with nothing to wait for.
	Complete []drainDone
	// StopSystem lists system and sysbatch allocations to stop now: their
	// node's other allocations are gone, or its deadline passed.
	StopSystem []*structs.Allocation
	// Deadlined lists the draining nodes whose deadline passed while
	// service or batch allocations still run there (they must be
	// re-evaluated: the schedulers then stop them all at once).
	Deadlined []deadlined
	// WakeAt is the earliest deadline still to come (zero: none).
	WakeAt time.Time
}

type drainDone struct {
	NodeID          string
	DeadlineReached bool
}

type deadlined struct {
	NodeID   string
	Deadline time.Time
	Jobs     []structs.NamespacedID // sorted
}

// decideDrains decides, at now, for every draining node, given its
// allocations (each with its job):
//
//   - service and batch allocations move as their schedulers decide
//     (migrate blocks; batch ones run on until the deadline); once the
//     deadline passed (ForceDeadline, "now" for a forced drain), their jobs
//     are named in Deadlined;
//   - system and sysbatch allocations stop once no other allocation runs
//     on the node, or the deadline passed; never with IgnoreSystemJobs;
//   - the drain is complete when no allocation it waits for is live (an
//     allocation asked to stop is live until its client reports it
//     finished, unless the node is down).
func decideDrains(now time.Time, nodes []*structs.Node, allocsByNode func(nodeID string) ([]*structs.Allocation, error)) (drainDecision, error) {
	var d drainDecision
	for _, n := range nodes {
		if !n.Drain {
			continue
		}
		allocs, err := allocsByNode(n.ID)
		if err != nil {
			return d, err
		}
		ds := n.DrainStrategy
		passed := ds.DeadlinePassed(now)
		ignoreSystem := ds != nil && ds.IgnoreSystemJobs
		var system []*structs.Allocation
		others, waiting := 0, false
		jobs := map[structs.NamespacedID]bool{}
		for _, a := range allocs {
			if a.ClientTerminal() || (a.DesiredStatus != structs.AllocDesiredStatusRun && n.Status == structs.NodeStatusDown) {
				continue
			}
			if isSystemAlloc(a) {
				if ignoreSystem {
					continue
				}
				waiting = true
				if a.DesiredStatus == structs.AllocDesiredStatusRun {
					system = append(system, a)
				}
				continue
			}
			waiting = true
			others++
			if a.DesiredStatus == structs.AllocDesiredStatusRun {
				jobs[structs.NamespacedID{Namespace: a.Namespace, ID: a.JobID}] = true
			}
		}
		if !waiting {
			d.Complete = append(d.Complete, drainDone{NodeID: n.ID, DeadlineReached: passed})
			continue
		}
		if !passed && ds != nil && !ds.ForceDeadline.IsZero() && (d.WakeAt.IsZero() || ds.ForceDeadline.Before(d.WakeAt)) {
			d.WakeAt = ds.ForceDeadline
		}
		if others == 0 || passed {
			d.StopSystem = append(d.StopSystem, system...)
		}
		if passed && len(jobs) > 0 {
			dl := deadlined{NodeID: n.ID, Deadline: ds.ForceDeadline}
			for id := range jobs {
				dl.Jobs = append(dl.Jobs, id)
			}
			slices.SortFunc(dl.Jobs, func(a, b structs.NamespacedID) int {
				return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.ID, b.ID))
			})
			d.Deadlined = append(d.Deadlined, dl)
		}
	}
	return d, nil
}

// isSystemAlloc reports whether a belongs to a system or sysbatch job:
// bound to its node, it cannot migrate.
func isSystemAlloc(a *structs.Allocation) bool {
	return a.Job != nil && (a.Job.Type == structs.JobTypeSystem || a.Job.Type == structs.JobTypeSysBatch)
}

// runDrainer carries out drains on the leader. It waits for a change of
// nodes or allocations, or the next drain deadline, asks decideDrains what
// to do and does it: stops system allocations, creates one evaluation per
// job with allocations on a node whose deadline passed (once per node and
// deadline, again every drainRetry while some are left to stop), and ends
// drains that are complete (the node stays ineligible).
func (s *Server) runDrainer(ctx context.Context) {
	var index uint64
	forced := map[string]forcedDrain{}
	var wake time.Time
	for ctx.Err() == nil {
		qctx, cancel := ctx, context.CancelFunc(func() {})
		if !wake.IsZero() {
			qctx, cancel = context.WithTimeout(ctx, wake.Sub(s.now()))
		}
		out, next, err := s.State().BlockingQuery(qctx, index, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
			nodes, err := snap.Nodes(ws)
			if err != nil {
				return nil, 0, err
			}
			d, err := decideDrains(s.now(), nodes, func(id string) ([]*structs.Allocation, error) { return snap.AllocsByNode(ws, id) })
			return d, max(snap.Index(state.TableNodes), snap.Index(state.TableAllocs)), err
		})
		timedOut := qctx.Err() != nil && ctx.Err() == nil
		cancel()
		if err != nil {
			s.logger.Error("drainer query failed", "error", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		index = next
		if timedOut {
			index = 0 // the deadline passed: decide again at once
		}
		d := out.(drainDecision)
		s.carryOutDrains(ctx, d, forced)
		wake = d.WakeAt
		for _, dl := range d.Deadlined {
			if f, ok := forced[dl.NodeID]; ok && (wake.IsZero() || f.retryAt().Before(wake)) {
				wake = f.retryAt()
			}
		}
	}
}

// drainRetry is how long after the evaluations of a node past its deadline
// the drainer creates them again if allocations are still to be stopped
// there (an evaluation failed, or ran on a server whose clock lagged).
const drainRetry = 30 * time.Second

// forcedDrain records the evaluations created for a node past its
// deadline.
type forcedDrain struct {
	deadline time.Time // the drain deadline they were created for
	at       time.Time // when
}

func (f forcedDrain) retryAt() time.Time { return f.at.Add(drainRetry) }

// carryOutDrains does what d says.
func (s *Server) carryOutDrains(ctx context.Context, d drainDecision, forced map[string]forcedDrain) {
	if len(d.StopSystem) > 0 {
		req := &structs.AllocDesiredTransitionRequest{Description: scheduler.DescMigrating}
		for _, a := range d.StopSystem {
			req.AllocIDs = append(req.AllocIDs, a.ID)
		}
		if _, err := s.applyChecked(structs.AllocDesiredTransitionRequestType, req); err != nil && ctx.Err() == nil {
			s.logger.Error("failed to stop system allocations of draining nodes", "error", err)
		}
	}
	for _, dl := range d.Deadlined {
		if f, ok := forced[dl.NodeID]; ok && f.deadline.Equal(dl.Deadline) && s.now().Before(f.retryAt()) {
			continue
		}
		// Recorded even on failure: the next attempt comes after
		// drainRetry, not in a busy loop.
		forced[dl.NodeID] = forcedDrain{deadline: dl.Deadline, at: s.now()}
		evals, err := s.drainDeadlineEvals(dl)
		if err == nil && len(evals) > 0 {
			_, _, err = s.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: evals})
		}
		if err != nil {
			if ctx.Err() == nil {
				s.logger.Error("failed to evaluate the jobs of a node past its drain deadline", "node_id", dl.NodeID, "error", err)
			}
			continue
		}
		s.logger.Info("node drain deadline reached; stopping its remaining allocations", "node_id", dl.NodeID, "jobs", len(evals))
	}
	for _, c := range d.Complete {
		delete(forced, c.NodeID)
		if _, _, err := s.NodeDrain(nil, &structs.NodeUpdateDrainRequest{NodeID: c.NodeID, Complete: true, DeadlineReached: c.DeadlineReached}); err != nil {
			if ctx.Err() == nil {
				s.logger.Error("failed to complete node drain", "node_id", c.NodeID, "error", err)
			}
			continue
		}
		s.logger.Info("node drain complete", "node_id", c.NodeID)
	}
}

// drainDeadlineEvals returns one node-drain evaluation per job of dl that
// still exists and is not stopped.
func (s *Server) drainDeadlineEvals(dl deadlined) ([]*structs.Evaluation, error) {
	var evals []*structs.Evaluation
	for _, id := range dl.Jobs {
		job, err := s.State().JobByID(nil, id.Namespace, id.ID)
		if err != nil {
			return nil, err
		}
		if job == nil || job.Stop {
			continue
		}
		e := s.newEval(job, structs.EvalTriggerNodeDrain)
		e.JobModifyIndex = job.JobModifyIndex
		e.NodeID = dl.NodeID
		evals = append(evals, e)
	}
	return evals, nil
}
