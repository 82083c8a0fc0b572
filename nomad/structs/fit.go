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
	used := map[int]bool{}
	for _, p := range parsePortSpec(node.ReservedResources.Networks.ReservedHostPorts) {
		used[p] = true
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
				if !claimPorts(used, nw.ReservedPorts) || !claimPorts(used, nw.DynamicPorts) {
					return false, DimensionPorts
				}
			}
		}
		disk += ar.Shared.DiskMB
		for _, p := range ar.Shared.Ports {
			if used[p.Value] {
				return false, DimensionPorts
			}
			used[p.Value] = true
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

func claimPorts(used map[int]bool, ports []Port) bool {
	for _, p := range ports {
		if p.Value == 0 {
			continue
		}
		if used[p.Value] {
			return false
		}
		used[p.Value] = true
	}
	return true
}

// parsePortSpec parses a reserved port list such as "22,80,8000-8002".
// Malformed parts are skipped; node registration validates the spec.
func parsePortSpec(spec string) []int {
	var out []int
	if spec == "" {
		return nil
	}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				continue
			}
		}
		for p := a; p <= b; p++ {
			out = append(out, p)
		}
	}
	return out
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
