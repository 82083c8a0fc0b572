package network

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// createNetns creates a new network namespace and bind-mounts it on path
// (a new empty file), as `ip netns add` does. The namespace lives as long
// as the mount.
func createNetns(path string) error {
	if err := touch(path); err != nil {
		return err
	}
	errCh := make(chan error, 1)
	go func() {
		// The thread enters the new namespace, binds it, and goes back
		// to the client's before it serves other goroutines. A thread
		// that cannot go back stays locked: it exits with this goroutine
		// (or, the main thread, stays parked), never running others.
		runtime.LockOSThread()
		orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			runtime.UnlockOSThread()
			errCh <- err
			return
		}
		defer orig.Close()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread() // still in the client's namespace
			errCh <- fmt.Errorf("unshare: %w", err)
			return
		}
		src := fmt.Sprintf("/proc/%d/task/%d/ns/net", os.Getpid(), unix.Gettid())
		err = unix.Mount(src, path, "none", unix.MS_BIND, "")
		if serr := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); serr == nil {
			runtime.UnlockOSThread()
		}
		errCh <- err
	}()
	if err := <-errCh; err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("network: creating namespace %s: %w", path, err)
	}
	return nil
}

// adoptNetns bind-mounts the namespace src (/proc/<pid>/ns/net of the
// process that owns it) on path, so that it outlives that process's view
// and has the allocation's name.
func adoptNetns(src, path string) error {
	if err := touch(path); err != nil {
		return err
	}
	if err := unix.Mount(src, path, "none", unix.MS_BIND, ""); err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("network: binding namespace %s on %s: %w", src, path, err)
	}
	return nil
}

// deleteNetns unmounts and removes path; a missing path is no error.
func deleteNetns(path string) error {
	err := unix.Unmount(path, unix.MNT_DETACH)
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("network: unmounting namespace %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("network: %w", err)
	}
	return nil
}

// isNetns reports whether path is a mounted network namespace.
func isNetns(path string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return false
	}
	return st.Type == unix.NSFS_MAGIC
}

func touch(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("network: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return fmt.Errorf("network: %w", err)
	}
	return f.Close()
}
