package scheduler

import "github.com/drover-project/drover/nomad/structs"

// Stop descriptions, in Nomad's wording (users grep them).
const (
	// DescNotNeeded: the job was stopped or purged, the group removed, or the
	// node left the job's datacenters, pool or constraints.
	DescNotNeeded = "alloc not needed due to job update"
	// DescUpdating: a destructive update replaces the allocation.
	DescUpdating = "alloc is being updated due to job update"
	// DescMigrating: the node is draining. System allocations are not
	// replaced elsewhere; Nomad uses this wording for drained allocations.
	DescMigrating = "alloc is being migrated"
	// DescLost: the node is down or gone; the allocation is also marked lost.
	DescLost = "alloc is lost since its node is down"
	// DescReconnected: the node of an unknown allocation reconnected and
	// the group's disconnect.reconcile kept the other of it and its
	// replacement.
	DescReconnected = "alloc not needed due to disconnected client reconnect"
	// DescUnknown is the client description of an allocation marked
	// unknown: its node is disconnected, within the group's lost_after.
	DescUnknown = "alloc is unknown since its node is disconnected"
)

// AllocStop is an allocation to stop and the description it gets.
type AllocStop struct {
	Alloc  *structs.Allocation
	Reason string
}
