package scheduler

import (
	"slices"
	"strconv"
	"strings"

	"github.com/drover-project/drover/nomad/structs"
)

// DimensionDynamicPorts is the DimensionExhausted key of nodes with no free
// port left in their dynamic range (Nomad's wording).
const DimensionDynamicPorts = "network: dynamic port selection failed"

// Dynamic port range of nodes that do not fingerprint one.
const (
	DefaultMinDynamicPort = structs.DefaultMinDynamicPort
	DefaultMaxDynamicPort = structs.DefaultMaxDynamicPort
)

// portSet is a set of host ports in use on a node.
type portSet map[int]struct{}

func (s portSet) has(p int) bool { _, ok := s[p]; return ok }

// add puts p in s, making s when it is nil (most nodes have no port taken
// before a placement, and a system job visits every node).
func (s portSet) add(p int) portSet {
	if s == nil {
		s = portSet{}
	}
	s[p] = struct{}{}
	return s
}

// usedPorts returns node's reserved host ports plus every port the live
// allocations in allocs hold; nil when there are none (a nil portSet reads
// as empty).
func usedPorts(node *structs.Node, allocs []*structs.Allocation) portSet {
	var used portSet
	for _, p := range parsePorts(node.ReservedResources.Networks.ReservedHostPorts) {
		used = used.add(p)
	}
	for _, a := range allocs {
		if a.Terminal() || a.AllocatedResources == nil {
			continue
		}
		for _, p := range a.AllocatedResources.Shared.Ports {
			used = used.add(p.Value)
		}
		for _, tr := range a.AllocatedResources.Tasks {
			for _, nw := range tr.Networks {
				used = addPorts(used, nw.ReservedPorts)
				used = addPorts(used, nw.DynamicPorts)
			}
		}
	}
	return used
}

func addPorts(used portSet, ports []structs.Port) portSet {
	for _, p := range ports {
		if p.Value != 0 {
			used = used.add(p.Value)
		}
	}
	return used
}

// parsePorts parses a reserved port list such as "22,80,8000-8002";
// malformed parts are skipped (node registration validates the list).
func parsePorts(spec string) []int {
	var out []int
	if spec == "" {
		return nil
	}
	for _, part := range strings.Split(spec, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		for p := a; p <= b; p++ {
			out = append(out, p)
		}
	}
	return out
}

// allocateResources returns what an allocation of tg on node is granted:
// each task's CPU and memory, the group's disk, and host ports. Static ports
// must be free; each dynamic port gets the lowest free port of the node's
// dynamic range (DefaultMinDynamicPort..DefaultMaxDynamicPort when the node
// reports none). others are the allocations the node runs besides this one
// (terminal ones are skipped); their ports and the node's reserved host
// ports are taken. When a port cannot be had, dimension names why
// (structs.DimensionPorts or DimensionDynamicPorts) and ar is nil.
//
// Group ports are written to Shared.Ports (To -1 maps to the host port) and
// Shared.Networks; task ports to the task's Networks.
func allocateResources(node *structs.Node, tg *structs.TaskGroup, others []*structs.Allocation, arena *resourceArena) (ar *structs.AllocatedResources, dimension string) {
	if arena == nil {
		arena = newResourceArena(tg, 1)
	}
	pa := &portAssigner{hostIP: hostIP(node)}
	if asksPorts(tg) {
		pa.used = usedPorts(node, others)
		pa.lo, pa.hi = dynamicRange(node)
	}
	ar = &arena.ars.take(1)[0]
	if tg.EphemeralDisk != nil {
		ar.Shared.DiskMB = int64(tg.EphemeralDisk.SizeMB)
	}
	// Invariants: every static port is claimed before any dynamic one, so a
	// dynamic port never takes a port a static one of the group names.
	var trs []structs.AllocatedTaskResources
	if ar.Tasks = arena.sharedTasks; ar.Tasks == nil {
		ar.Tasks = make(map[string]*structs.AllocatedTaskResources, len(tg.Tasks))
		trs = arena.trs.take(len(tg.Tasks))
		for i, t := range tg.Tasks {
			tr := &trs[i]
			if r := t.Resources; r != nil {
				tr.Cpu.CpuShares = int64(r.CPU)
				tr.Memory.MemoryMB = int64(r.MemoryMB)
				tr.Memory.MemoryMaxMB = int64(r.MemoryMaxMB)
				tr.Networks = pa.copyNetworks(r.Networks, arena)
			}
			ar.Tasks[t.Name] = tr
		}
		if !arena.taskNets {
			arena.sharedTasks = ar.Tasks // identical for every placement
		}
	}
	ar.Shared.Networks = pa.copyNetworks(tg.Networks, arena)
	// Group networks first, then each task's in task order.
	each := func(fn func(*structs.NetworkResource) bool) bool {
		for _, nw := range ar.Shared.Networks {
			if !fn(nw) {
				return false
			}
		}
		for i := range trs {
			for _, nw := range trs[i].Networks {
				if !fn(nw) {
					return false
				}
			}
		}
		return true
	}
	if !each(func(nw *structs.NetworkResource) bool { return pa.claimStatic(nw.ReservedPorts) }) {
		return nil, structs.DimensionPorts
	}
	if !each(func(nw *structs.NetworkResource) bool { return pa.assignDynamic(nw.DynamicPorts) }) {
		return nil, DimensionDynamicPorts
	}
	n := 0
	for _, nw := range ar.Shared.Networks {
		n += len(nw.ReservedPorts) + len(nw.DynamicPorts)
	}
	ar.Shared.Ports = arena.mappings.take(n)[:0:n] // nil when n is 0
	for _, nw := range ar.Shared.Networks {
		ar.Shared.Ports = appendMappings(ar.Shared.Ports, nw.ReservedPorts, pa.hostIP)
		ar.Shared.Ports = appendMappings(ar.Shared.Ports, nw.DynamicPorts, pa.hostIP)
	}
	return ar, ""
}

// asksPorts reports whether tg or one of its tasks has a network.
func asksPorts(tg *structs.TaskGroup) bool {
	if len(tg.Networks) > 0 {
		return true
	}
	for _, t := range tg.Tasks {
		if t.Resources != nil && len(t.Resources.Networks) > 0 {
			return true
		}
	}
	return false
}

// portAssigner hands out host ports on one node for one allocation.
type portAssigner struct {
	used portSet // taken by others; read only; nil when none is
	// taken by this allocation: the first few in place (no allocation
	// per placement), the rest in more
	few    [8]int
	nFew   int
	more   []int
	lo, hi int
	hostIP string
}

func (pa *portAssigner) free(p int) bool {
	return !pa.used.has(p) && !slices.Contains(pa.few[:pa.nFew], p) && !slices.Contains(pa.more, p)
}

func (pa *portAssigner) take(p int) {
	if pa.nFew < len(pa.few) {
		pa.few[pa.nFew] = p
		pa.nFew++
		return
	}
	pa.more = append(pa.more, p)
}

func (pa *portAssigner) claimStatic(ports []structs.Port) bool {
	for _, p := range ports {
		if !pa.free(p.Value) {
			return false
		}
		pa.take(p.Value)
	}
	return true
}

// assignDynamic sets each port's Value to the lowest free port of the range.
func (pa *portAssigner) assignDynamic(ports []structs.Port) bool {
	next := pa.lo
	for i := range ports {
		for next <= pa.hi && !pa.free(next) {
			next++
		}
		if next > pa.hi {
			return false
		}
		ports[i].Value = next
		pa.take(next)
	}
	return true
}

// copyNetworks copies networks so that assigning ports does not touch the
// job, setting the node's address.
func (pa *portAssigner) copyNetworks(networks []*structs.NetworkResource, arena *resourceArena) []*structs.NetworkResource {
	if len(networks) == 0 {
		return nil
	}
	n, ports := 0, 0
	for _, nw := range networks {
		if nw != nil {
			n++
			ports += len(nw.ReservedPorts) + len(nw.DynamicPorts)
		}
	}
	out := arena.netPtrs.take(n)[:0:n]
	copies := arena.nets.take(n)
	slab := arena.ports.take(ports)[:0:ports]
	// take copies ps into the slab, capped so that an append to the
	// result never writes into the next copy; nil when ps is empty.
	take := func(ps []structs.Port) []structs.Port {
		if len(ps) == 0 {
			return nil
		}
		start := len(slab)
		slab = append(slab, ps...)
		return slab[start:len(slab):len(slab)]
	}
	for _, nw := range networks {
		if nw == nil {
			continue
		}
		c := &copies[len(out)]
		*c = *nw
		c.ReservedPorts = take(nw.ReservedPorts)
		c.DynamicPorts = take(nw.DynamicPorts)
		if c.IP == "" {
			c.IP = pa.hostIP
		}
		out = append(out, c)
	}
	return out
}

func appendMappings(out []structs.AllocatedPortMapping, ports []structs.Port, ip string) []structs.AllocatedPortMapping {
	for _, p := range ports {
		to := p.To
		if to == -1 {
			to = p.Value
		}
		out = append(out, structs.AllocatedPortMapping{Label: p.Label, Value: p.Value, To: to, HostIP: ip})
	}
	return out
}

// dynamicRange returns the node's dynamic port range, or the default one.
func dynamicRange(node *structs.Node) (lo, hi int) {
	lo, hi = node.NodeResources.MinDynamicPort, node.NodeResources.MaxDynamicPort
	if lo == 0 {
		lo = DefaultMinDynamicPort
	}
	if hi == 0 {
		hi = DefaultMaxDynamicPort
	}
	return lo, hi
}

// hostIP is the address of the node's first network that has one, or "".
func hostIP(node *structs.Node) string {
	for _, nw := range node.NodeResources.Networks {
		if nw != nil && nw.IP != "" {
			return nw.IP
		}
	}
	return ""
}
