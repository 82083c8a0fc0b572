package state

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/drover-project/drover/nomad/structs"
)

// UpsertPlanResults commits the accepted part of a plan in one transaction:
//
//  1. AllocsStopped: each stored allocation (unknown ones are skipped) gets
//     the entry's DesiredStatus ("stop" when empty) and DesiredDescription,
//     and its ClientStatus when the plan marks it lost or unknown, with
//     DisconnectedAt = req.UpdatedAt (kept when an unknown allocation is
//     marked unknown again);
//  2. AllocsUpdated: upserted as UpsertAllocs does, with CreateTime (new
//     ones) and ModifyTime set to req.UpdatedAt and a nil Job linked to the
//     stored version, or to req.Job when that version is not stored. A
//     replacement naming a PreviousAllocation sets the previous allocation's
//     NextAllocation;
//  3. Deployment (or nil) is upserted, keeping CreateIndex; when it is
//     stored, the plan cannot change the status of one that is not running,
//     undo a promotion, move a group's progress deadline or drop a group
//     (the plan was computed on a snapshot that may be stale);
//  4. DeploymentUpdates change status and description; unknown and
//     terminal deployments are skipped;
//  5. the health counts (HealthyAllocs, UnhealthyAllocs) of the plan's
//     deployment and of every deployment whose allocations changed are
//     recounted from the allocations (deployment_health.go): the plan's
//     counts are never trusted.
//
// req.Job is not stored: the job version was registered before the plan.
// req is not modified.
func (s *StateStore) UpsertPlanResults(index uint64, req *structs.ApplyPlanResultsRequest) error {
	return s.upsertPlanResults(index, req, (*structs.Allocation).Copy)
}

// UpsertPlanResultsOwned is UpsertPlanResults for a request nobody else
// holds (the FSM's, decoded from the raft log): the store keeps req's
// allocations instead of copying each of them first. The caller must not
// use req afterwards.
func (s *StateStore) UpsertPlanResultsOwned(index uint64, req *structs.ApplyPlanResultsRequest) error {
	return s.upsertPlanResults(index, req, func(a *structs.Allocation) *structs.Allocation { return a })
}

// upsertPlanResults implements UpsertPlanResults; own returns the store's
// private version of one of req's allocations.
func (s *StateStore) upsertPlanResults(index uint64, req *structs.ApplyPlanResultsRequest, own func(*structs.Allocation) *structs.Allocation) error {
	return s.write(index, func(tx *writeTxn) error {
		changes := healthChanges{}
		tx.expectAllocs(len(req.AllocsStopped) + len(req.AllocsUpdated))
		for _, stop := range req.AllocsStopped {
			if err := tx.stopAlloc(stop, req.UpdatedAt, changes); err != nil {
				return fmt.Errorf("stop alloc %q: %w", stop.ID, err)
			}
		}
		jobs := newJobLinker(tx.Txn, req.Job)
		for _, a := range inIDOrder(req.AllocsUpdated) {
			if err := tx.upsertAlloc(own(a), jobs, req.UpdatedAt, changes); err != nil {
				return fmt.Errorf("upsert alloc %q: %w", a.ID, err)
			}
		}
		if req.Deployment != nil {
			if err := tx.upsertPlanDeployment(req.Deployment.Copy(), req.UpdatedAt); err != nil {
				return err
			}
			changes.recount(req.Deployment.ID)
		}
		for _, u := range req.DeploymentUpdates {
			err := tx.updateDeploymentStatus(u, req.UpdatedAt)
			if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrConflict) {
				return err
			}
		}
		return tx.applyHealthChanges(changes, req.UpdatedAt)
	})
}

// upsertPlanDeployment upserts d, a plan's private copy of a deployment,
// merging in what the plan must not undo when the deployment is stored
// (mergeStoredDeployment).
func (tx *writeTxn) upsertPlanDeployment(d *structs.Deployment, now int64) error {
	exist, err := deploymentByID(tx.Txn, nil, d.ID)
	if err != nil {
		return err
	}
	if exist != nil {
		mergeStoredDeployment(d, exist)
	}
	return tx.upsertDeployment(d, now)
}

// stopAlloc applies one entry of a plan's AllocsStopped at time now, noting
// the health change in changes.
func (tx *writeTxn) stopAlloc(stop *structs.Allocation, now int64, changes healthChanges) error {
	exist, err := tx.allocByID(stop.ID)
	if exist == nil || err != nil {
		return err
	}
	c := exist.Copy()
	c.DesiredStatus = stop.DesiredStatus
	if c.DesiredStatus == "" {
		c.DesiredStatus = structs.AllocDesiredStatusStop
	}
	c.DesiredDescription = stop.DesiredDescription
	switch stop.ClientStatus {
	case structs.AllocClientStatusLost, structs.AllocClientStatusUnknown:
		if exist.ClientStatus != structs.AllocClientStatusUnknown || stop.ClientStatus != structs.AllocClientStatusUnknown {
			c.DisconnectedAt = now
		}
		c.ClientStatus, c.ClientDescription = stop.ClientStatus, stop.ClientDescription
	}
	if stop.FollowupEvalID != "" {
		c.FollowupEvalID = stop.FollowupEvalID
	}
	c.ModifyTime = now
	c.ModifyIndex, c.AllocModifyIndex = tx.index, tx.index
	if err := tx.insert(TableAllocs, c); err != nil {
		return err
	}
	changes.note(exist, c)
	tx.markJob(c.Namespace, c.JobID)
	return nil
}

// inIDOrder returns allocs sorted by ID, stably (two entries of one
// allocation keep their order; allocs itself is not reordered). A large
// write inserts in key order: consecutive inserts then share most of
// their path in the allocations table's ID index, whose nodes the
// transaction has just copied and the CPU cache still holds (about a
// sixth less CPU for a 10,000-placement plan, BenchmarkRaftApplyPlan10k).
func inIDOrder(allocs []*structs.Allocation) []*structs.Allocation {
	if slices.IsSortedFunc(allocs, byAllocID) {
		return allocs
	}
	sorted := slices.Clone(allocs)
	slices.SortStableFunc(sorted, byAllocID) // one allocation twice keeps its order
	return sorted
}

func byAllocID(a, b *structs.Allocation) int { return strings.Compare(a.ID, b.ID) }
