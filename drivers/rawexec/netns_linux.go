package rawexec

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// enterNetns moves the calling goroutine's thread into the network
// namespace at path and keeps the goroutine on it, so that the task the
// executor forks from it starts there. "" does nothing.
func enterNetns(path string) error {
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening the allocation's network namespace: %w", err)
	}
	defer f.Close()
	runtime.LockOSThread() // never unlocked: the thread stays in the namespace
	if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("entering the allocation's network namespace %s: %w", path, err)
	}
	return nil
}
