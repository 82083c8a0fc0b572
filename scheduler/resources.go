package scheduler

import (
	"fmt"
	"slices"

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

// portSet is a set of host ports in use on a node, by address
// (structs.HostPort; node-wide reserved ports on structs.AnyAddress).
type portSet map[structs.HostPort]struct{}

func (s portSet) has(hp structs.HostPort) bool { _, ok := s[hp]; return ok }

// add puts hp in s, making s when it is nil (most nodes have no port taken
// before a placement, and a system job visits every node).
func (s portSet) add(hp structs.HostPort) portSet {
	if s == nil {
		s = portSet{}
	}
	s[hp] = struct{}{}
	return s
}

// usedPorts returns node's reserved host ports (its own on every address,
// each host network's on that network's address) plus every port the live
// allocations in allocs hold, on the address each holds it; nil when there
// are none (a nil portSet reads as empty). def is node's DefaultAddress.
func usedPorts(node *structs.Node, allocs []*structs.Allocation, def string) portSet {
	var used portSet
	node.EachReservedPort(func(hp structs.HostPort) { used = used.add(hp) })
	for _, a := range allocs {
		if a.Terminal() || a.AllocatedResources == nil {
			continue
		}
		for _, p := range a.AllocatedResources.Shared.Ports {
			used = used.add(structs.HostPort{Addr: orAddr(p.HostIP, def), Port: p.Value})
		}
		for _, tr := range a.AllocatedResources.Tasks {
			for _, nw := range tr.Networks {
				used = addPorts(used, node, nw, nw.ReservedPorts, def)
				used = addPorts(used, node, nw, nw.DynamicPorts, def)
			}
		}
	}
	return used
}

func addPorts(used portSet, node *structs.Node, nw *structs.NetworkResource, ports []structs.Port, def string) portSet {
	for _, p := range ports {
		if p.Value != 0 {
			used = used.add(structs.HostPort{Addr: node.PortAddress(p.HostNetwork, nw.IP, def), Port: p.Value})
		}
	}
	return used
}

func orAddr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// allocateResources returns what an allocation of tg on node is granted:
// each task's CPU and memory, the group's disk, and host ports. Static ports
// must be free; each dynamic port gets the lowest free port of the node's
// dynamic range (DefaultMinDynamicPort..DefaultMaxDynamicPort when the node
// reports none). Ports are taken per address: a port's host network's
// address, or the node's own for the default network. others are the
// allocations the node runs besides this one (terminal ones are skipped);
// their ports, the node's reserved host ports (on every address) and each
// host network's reserved ports are taken. When a port cannot be had,
// dimension names why (structs.DimensionPorts, DimensionDynamicPorts, or
// the missing host network) and ar is nil.
//
// Group ports are written to Shared.Ports (To -1 maps to the host port;
// HostIP is the port's host network's address) and Shared.Networks; task
// ports to the task's Networks. A network's IP is the address of its first
// port on a host network other than the default, else the node's.
func allocateResources(node *structs.Node, tg *structs.TaskGroup, others []*structs.Allocation, arena *resourceArena) (ar *structs.AllocatedResources, dimension string) {
	if arena == nil {
		arena = newResourceArena(tg, 1)
	}
	pa := &portAssigner{node: node, hostIP: hostIP(node)}
	if asksPorts(tg) {
		pa.def = node.DefaultAddress()
		pa.used = usedPorts(node, others, pa.def)
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
	each := func(fn func(*structs.NetworkResource) string) string {
		for _, nw := range ar.Shared.Networks {
			if d := fn(nw); d != "" {
				return d
			}
		}
		for i := range trs {
			for _, nw := range trs[i].Networks {
				if d := fn(nw); d != "" {
					return d
				}
			}
		}
		return ""
	}
	if d := each(func(nw *structs.NetworkResource) string { return pa.claimStatic(nw.ReservedPorts) }); d != "" {
		return nil, d
	}
	if d := each(func(nw *structs.NetworkResource) string { return pa.assignDynamic(nw.DynamicPorts) }); d != "" {
		return nil, d
	}
	n := 0
	for _, nw := range ar.Shared.Networks {
		n += len(nw.ReservedPorts) + len(nw.DynamicPorts)
	}
	ar.Shared.Ports = arena.mappings.take(n)[:0:n] // nil when n is 0
	for _, nw := range ar.Shared.Networks {
		ar.Shared.Ports = pa.appendMappings(ar.Shared.Ports, nw.ReservedPorts)
		ar.Shared.Ports = pa.appendMappings(ar.Shared.Ports, nw.DynamicPorts)
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

// MissingHostNetwork is the reason a node lacks the host network a port
// asks for (Nomad's wording).
func MissingHostNetwork(network, port string) string {
	return fmt.Sprintf("missing host network %q for port %q", network, port)
}

// portAssigner hands out host ports on one node for one allocation.
type portAssigner struct {
	node *structs.Node
	used portSet // taken by others; read only; nil when none is
	// taken by this allocation: the first few in place (no allocation
	// per placement), the rest in more
	few    [8]structs.HostPort
	nFew   int
	more   []structs.HostPort
	lo, hi int
	hostIP string // the mapping address of default-network ports
	def    string // the address default-network ports are taken on
}

// addr returns the address a port on hostNetwork is taken on and the
// address it is mapped on; ok is false when the node lacks the network.
func (pa *portAssigner) addr(hostNetwork string) (key, ip string, ok bool) {
	if structs.IsDefaultHostNetwork(hostNetwork) {
		return pa.def, pa.hostIP, true
	}
	a, _, ok := pa.node.HostNetworkAddress(hostNetwork)
	return a, a, ok
}

func (pa *portAssigner) free(hp structs.HostPort) bool {
	return !pa.used.has(hp) && !pa.used.has(structs.HostPort{Addr: structs.AnyAddress, Port: hp.Port}) &&
		!slices.Contains(pa.few[:pa.nFew], hp) && !slices.Contains(pa.more, hp)
}

func (pa *portAssigner) take(hp structs.HostPort) {
	if pa.nFew < len(pa.few) {
		pa.few[pa.nFew] = hp
		pa.nFew++
		return
	}
	pa.more = append(pa.more, hp)
}

// claimStatic takes each static port on its address; the dimension when
// one cannot be had, else "".
func (pa *portAssigner) claimStatic(ports []structs.Port) string {
	for _, p := range ports {
		key, _, ok := pa.addr(p.HostNetwork)
		if !ok {
			return MissingHostNetwork(p.HostNetwork, p.Label)
		}
		hp := structs.HostPort{Addr: key, Port: p.Value}
		if !pa.free(hp) {
			return structs.DimensionPorts
		}
		pa.take(hp)
	}
	return ""
}

// assignDynamic sets each port's Value to the lowest free port of the
// range on its address; the dimension when one cannot be had, else "".
func (pa *portAssigner) assignDynamic(ports []structs.Port) string {
	next, prev := pa.lo, ""
	for i := range ports {
		key, _, ok := pa.addr(ports[i].HostNetwork)
		if !ok {
			return MissingHostNetwork(ports[i].HostNetwork, ports[i].Label)
		}
		if i > 0 && key != prev {
			next = pa.lo
		}
		prev = key
		for next <= pa.hi && !pa.free(structs.HostPort{Addr: key, Port: next}) {
			next++
		}
		if next > pa.hi {
			return DimensionDynamicPorts
		}
		ports[i].Value = next
		pa.take(structs.HostPort{Addr: key, Port: next})
	}
	return ""
}

// copyNetworks copies networks so that assigning ports does not touch the
// job, setting each network's address (see allocateResources).
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
			c.IP = pa.networkIP(c)
		}
		out = append(out, c)
	}
	return out
}

// networkIP is the address of nw's first port on a host network other
// than the default that the node has, else the node's.
func (pa *portAssigner) networkIP(nw *structs.NetworkResource) string {
	for _, ports := range [2][]structs.Port{nw.ReservedPorts, nw.DynamicPorts} {
		for _, p := range ports {
			if !structs.IsDefaultHostNetwork(p.HostNetwork) {
				if _, ip, ok := pa.addr(p.HostNetwork); ok {
					return ip
				}
			}
		}
	}
	return pa.hostIP
}

func (pa *portAssigner) appendMappings(out []structs.AllocatedPortMapping, ports []structs.Port) []structs.AllocatedPortMapping {
	for _, p := range ports {
		to := p.To
		if to == -1 {
			to = p.Value
		}
		_, ip, _ := pa.addr(p.HostNetwork)
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
