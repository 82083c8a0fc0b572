package exec

import "path/filepath"

// cgroupRoot is where the unified (v2) hierarchy is expected; a variable so
// tests may point elsewhere.
var cgroupRoot = "/sys/fs/cgroup"

// cgroupParent is the cgroup, below cgroupRoot, that holds one cgroup per
// exec task.
const cgroupParent = "drover.exec"

// cgroupSpec is the cgroup v2 of one task.
type cgroupSpec struct {
	Path      string // absolute cgroup dir
	MemoryMax int64  // bytes; 0 leaves memory.max alone
	MemoryLow int64  // bytes; 0 leaves memory.low alone
	CPUWeight int    // 1..10000; 0 leaves cpu.weight alone
}

// newCgroupSpec returns the cgroup of a task with memory (MB), memory_max
// (MB, 0 = none) and cpu (MHz shares).
func newCgroupSpec(name string, memoryMB, memoryMaxMB, cpu int) *cgroupSpec {
	cg := &cgroupSpec{Path: filepath.Join(cgroupRoot, cgroupParent, name)}
	const mb = 1 << 20
	switch {
	case memoryMaxMB > memoryMB && memoryMB > 0:
		cg.MemoryMax = int64(memoryMaxMB) * mb
		cg.MemoryLow = int64(memoryMB) * mb
	case memoryMB > 0:
		cg.MemoryMax = int64(memoryMB) * mb
	}
	if cpu > 0 {
		cg.CPUWeight = cpuWeight(cpu)
	}
	return cg
}

// cpuWeight converts CPU shares (MHz) to cgroup v2's cpu.weight range
// [1, 10000], the way v1 shares [2, 262144] map onto it.
func cpuWeight(shares int) int {
	if shares < 2 {
		shares = 2
	}
	if shares > 262144 {
		shares = 262144
	}
	return 1 + ((shares-2)*9999)/262142
}
