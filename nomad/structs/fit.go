package structs

import (
	"fmt"
	"strconv"
	"strings"
)

// Dimensions that can be exhausted on a node, as placement metrics name them.
const (
	DimensionCPU    = "cpu"
	DimensionMemory = "memory"
	DimensionDisk   = "disk"
	DimensionPorts  = "network: reserved port collision"
)

// AllocsFit reports whether allocs (the live allocations a node would run)
// fit on node after its reservations. When they do not, dimension names the
// first exhausted resource.
func AllocsFit(node *Node, allocs []*Allocation) (fit bool, dimension string) {
	var cpu, mem, disk int64
	used := map[HostPort]bool{}
	node.EachReservedPort(func(hp HostPort) { used[hp] = true })
	def := node.DefaultAddress()
	// claim takes port on addr; false when a port is already taken there
	// or reserved on every address.
	claim := func(addr string, port int) bool {
		hp := HostPort{addr, port}
		if used[hp] || used[HostPort{AnyAddress, port}] {
			return false
		}
		used[hp] = true
		return true
	}
	for _, a := range allocs {
		if a.Terminal() || a.AllocatedResources == nil {
			continue
		}
		ar := a.AllocatedResources
		for _, tr := range ar.Tasks {
			cpu += tr.Cpu.CpuShares
			mem += tr.Memory.MemoryMB
			for _, nw := range tr.Networks {
				for _, ports := range [][]Port{nw.ReservedPorts, nw.DynamicPorts} {
					for _, p := range ports {
						if p.Value != 0 && !claim(node.PortAddress(p.HostNetwork, nw.IP, def), p.Value) {
							return false, DimensionPorts
						}
					}
				}
			}
		}
		disk += ar.Shared.DiskMB
		for _, p := range ar.Shared.Ports {
			if !claim(cmpOr(p.HostIP, def), p.Value) {
				return false, DimensionPorts
			}
		}
	}
	res, rsv := node.NodeResources, node.ReservedResources
	switch {
	case cpu > res.Cpu.CpuShares-rsv.Cpu.CpuShares:
		return false, DimensionCPU
	case mem > res.Memory.MemoryMB-rsv.Memory.MemoryMB:
		return false, DimensionMemory
	case disk > res.Disk.DiskMB-rsv.Disk.DiskMB:
		return false, DimensionDisk
	}
	return true, ""
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ValidatePortSpec reports an error when spec is not a port list such as
// "22,80,8000-8002".
func ValidatePortSpec(spec string) error {
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 1 || a > 65535 {
			return fmt.Errorf("invalid port %q in %q", lo, spec)
		}
		if isRange {
			b, err := strconv.Atoi(hi)
			if err != nil || b < a || b > 65535 {
				return fmt.Errorf("invalid port range %q in %q", part, spec)
			}
		}
	}
	return nil
}
