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

// usedPorts returns node's reserved host ports plus every port the live
// allocations in allocs hold.
func usedPorts(node *structs.Node, allocs []*structs.Allocation) portSet {
	used := portSet{}
	for _, p := range parsePorts(node.ReservedResources.Networks.ReservedHostPorts) {
		used[p] = struct{}{}
	}
	for _, a := range allocs {
		if a.Terminal() || a.AllocatedResources == nil {
			continue
		}
		for _, p := range a.AllocatedResources.Shared.Ports {
			used[p.Value] = struct{}{}
		}
		for _, tr := range a.AllocatedResources.Tasks {
			for _, nw := range tr.Networks {
				addPorts(used, nw.ReservedPorts)
				addPorts(used, nw.DynamicPorts)
			}
		}
	}
	return used
}

func addPorts(used portSet, ports []structs.Port) {
	for _, p := range ports {
		if p.Value != 0 {
			used[p.Value] = struct{}{}
		}
	}
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
func allocateResources(node *structs.Node, tg *structs.TaskGroup, others []*structs.Allocation) (ar *structs.AllocatedResources, dimension string) {
	pa := &portAssigner{hostIP: hostIP(node)}
	if asksPorts(tg) {
		pa.used, pa.taken = usedPorts(node, others), portSet{}
		pa.lo, pa.hi = dynamicRange(node)
	}
	ar = &structs.AllocatedResources{Tasks: make(map[string]*structs.AllocatedTaskResources, len(tg.Tasks))}
	if tg.EphemeralDisk != nil {
		ar.Shared.DiskMB = int64(tg.EphemeralDisk.SizeMB)
	}
	// Invariants: every static port is claimed before any dynamic one, so a
	// dynamic port never takes a port a static one of the group names.
	var taskNets []*structs.NetworkResource
	for _, t := range tg.Tasks {
		tr := &structs.AllocatedTaskResources{}
		if r := t.Resources; r != nil {
			tr.Cpu.CpuShares = int64(r.CPU)
			tr.Memory.MemoryMB = int64(r.MemoryMB)
			tr.Memory.MemoryMaxMB = int64(r.MemoryMaxMB)
			tr.Networks = pa.copyNetworks(r.Networks)
			taskNets = append(taskNets, tr.Networks...)
		}
		ar.Tasks[t.Name] = tr
	}
	ar.Shared.Networks = pa.copyNetworks(tg.Networks)
	all := append(slices.Clip(ar.Shared.Networks), taskNets...)
	for _, nw := range all {
		if !pa.claimStatic(nw.ReservedPorts) {
			return nil, structs.DimensionPorts
		}
	}
	for _, nw := range all {
		if !pa.assignDynamic(nw.DynamicPorts) {
			return nil, DimensionDynamicPorts
		}
	}
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
	used   portSet // taken by others; read only; nil when no port is asked
	taken  portSet // taken by this allocation; nil when no port is asked
	lo, hi int
	hostIP string
}

func (pa *portAssigner) free(p int) bool { return !pa.used.has(p) && !pa.taken.has(p) }

func (pa *portAssigner) claimStatic(ports []structs.Port) bool {
	for _, p := range ports {
		if !pa.free(p.Value) {
			return false
		}
		pa.taken[p.Value] = struct{}{}
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
		pa.taken[next] = struct{}{}
	}
	return true
}

// copyNetworks copies networks so that assigning ports does not touch the
// job, setting the node's address.
func (pa *portAssigner) copyNetworks(networks []*structs.NetworkResource) []*structs.NetworkResource {
	if len(networks) == 0 {
		return nil
	}
	out := make([]*structs.NetworkResource, 0, len(networks))
	for _, nw := range networks {
		if nw == nil {
			continue
		}
		c := *nw
		c.ReservedPorts = append([]structs.Port(nil), nw.ReservedPorts...)
		c.DynamicPorts = append([]structs.Port(nil), nw.DynamicPorts...)
		if c.IP == "" {
			c.IP = pa.hostIP
		}
		out = append(out, &c)
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
