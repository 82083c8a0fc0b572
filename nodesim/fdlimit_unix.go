//go:build unix

package nodesim

import "syscall"

// openFileLimit is the process's soft limit on open files, or 0 when
// unknown or unlimited.
func openFileLimit() int {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil || l.Cur > 1<<30 {
		return 0
	}
	return int(l.Cur)
}
