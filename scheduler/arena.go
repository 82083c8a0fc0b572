package scheduler

import "github.com/drover-project/drover/nomad/structs"

// slab hands out short slices cut from larger allocations: a system job
// places one allocation per node, and thousands of tiny objects cost the
// allocator and the garbage collector far more than a few large ones.
// Each slice is capped at its length, so an append to it copies instead of
// writing into its neighbour. A slice keeps its whole chunk alive; plans
// are short-lived (the raft log carries a decoded copy into state).
type slab[T any] struct {
	buf   []T
	chunk int // elements per allocation; at least 1
}

// take returns n zeroed elements (nil when n is 0).
func (s *slab[T]) take(n int) []T {
	if n == 0 {
		return nil
	}
	if len(s.buf) < n {
		s.buf = make([]T, max(n, s.chunk))
	}
	out := s.buf[:n:n]
	s.buf = s.buf[n:]
	return out
}

// resourceArena allocates the granted resources of the placements of one
// task group. Sized for n placements, it makes one allocation per kind of
// object instead of about ten per placement.
//
// Invariants: the allocations of one plan are read only once built. When
// no task of the group has a network, every placement is granted the same
// task resources, and they share one Tasks map (Allocation.Copy shares
// AllocatedResources too).
type resourceArena struct {
	tg          *structs.TaskGroup
	ars         slab[structs.AllocatedResources]
	trs         slab[structs.AllocatedTaskResources]
	nets        slab[structs.NetworkResource]
	netPtrs     slab[*structs.NetworkResource]
	ports       slab[structs.Port]
	mappings    slab[structs.AllocatedPortMapping]
	taskNets    bool                                       // some task has a network
	sharedTasks map[string]*structs.AllocatedTaskResources // built on first use when !taskNets
}

// newResourceArena returns an arena for n placements of tg (n ≥ 1).
func newResourceArena(tg *structs.TaskGroup, n int) *resourceArena {
	nets, ports, groupPorts := 0, 0, 0
	count := func(networks []*structs.NetworkResource, group bool) {
		for _, nw := range networks {
			if nw == nil {
				continue
			}
			nets++
			ports += len(nw.ReservedPorts) + len(nw.DynamicPorts)
			if group {
				groupPorts += len(nw.ReservedPorts) + len(nw.DynamicPorts)
			}
		}
	}
	count(tg.Networks, true)
	taskNets := false
	for _, t := range tg.Tasks {
		if t.Resources != nil && len(t.Resources.Networks) > 0 {
			taskNets = true
			count(t.Resources.Networks, false)
		}
	}
	ar := &resourceArena{tg: tg, taskNets: taskNets}
	ar.ars.chunk = n
	ar.trs.chunk = n * len(tg.Tasks)
	if !taskNets {
		ar.trs.chunk = len(tg.Tasks)
	}
	ar.nets.chunk, ar.netPtrs.chunk = n*nets, n*nets
	ar.ports.chunk = n * ports
	ar.mappings.chunk = n * groupPorts
	return ar
}
