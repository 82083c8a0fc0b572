//go:build linux

package exec

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Capability numbers (linux/capability.h) of the set a task keeps.
const (
	capChown          = 0
	capDacOverride    = 1
	capFowner         = 3
	capFsetid         = 4
	capKill           = 5
	capSetgid         = 6
	capSetuid         = 7
	capSetpcap        = 8
	capNetBindService = 10
	capSysChroot      = 18
	capMknod          = 27
	capAuditWrite     = 29
	capSetfcap        = 31
)

// taskCaps is the capability bounding set of a task: what a task run as
// root may have. Everything else (sys_admin, net_admin, sys_ptrace,
// sys_module, ...) is gone for the task and its children, whatever their
// user or file capabilities.
var taskCaps = map[int]bool{
	capChown: true, capDacOverride: true, capFowner: true, capFsetid: true, capKill: true,
	capSetgid: true, capSetuid: true, capSetpcap: true, capNetBindService: true,
	capSysChroot: true, capMknod: true, capAuditWrite: true, capSetfcap: true,
}

// taskCapMask is taskCaps as the bits of /proc/<pid>/status CapBnd.
func taskCapMask() uint64 {
	var m uint64
	for c := range taskCaps {
		m |= 1 << c
	}
	return m
}

const prCapbsetDrop = 24 // PR_CAPBSET_DROP

// dropBoundingCaps removes every capability outside taskCaps from the
// calling thread's bounding set; processes it starts afterwards inherit the
// smaller set. The caller must hold its OS thread locked.
func dropBoundingCaps() error {
	last := 63
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		if taskCaps[c] {
			continue
		}
		_, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prCapbsetDrop, uintptr(c), 0, 0, 0, 0)
		if errno != 0 && !errors.Is(errno, syscall.EINVAL) {
			return fmt.Errorf("dropping capability %d: %w", c, errno)
		}
	}
	return nil
}
