package chaos

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// serverDiskSize is the size of the tmpfs each server's data directory
// is on: small, so that filling it is quick.
const serverDiskSize = "256m"

// mountDisk mounts a tmpfs of serverDiskSize on dir (which must exist and
// be empty), unmounted in t.Cleanup. Cleanups run last-in first-out, so a
// caller that registers the process's kill after this has it killed
// before the unmount.
func mountDisk(t testing.TB, dir string) error {
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+serverDiskSize+",mode=0700"); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("chaos: unmount %s: %v", dir, err)
		}
	})
	return nil
}

// fillerName is the file that fills a server's disk.
const fillerName = "chaos-filler"

// fillDisk fills the file system of dir up to its last byte with one file
// and returns what removes it.
func fillDisk(dir string) (free func() error, err error) {
	path := filepath.Join(dir, fillerName)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	free = func() error { return os.Remove(path) }
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		_ = f.Close()
		return free, err
	}
	if n := int64(st.Bavail) * st.Bsize; n > 0 {
		if err := syscall.Fallocate(int(f.Fd()), 0, 0, n); err != nil && !errors.Is(err, syscall.ENOSPC) {
			_ = f.Close()
			return free, fmt.Errorf("fallocate %d bytes: %w", n, err)
		}
	}
	// What fallocate left (blocks freed meanwhile, rounding) is written.
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			_ = f.Close()
			return free, err
		}
	}
	return free, f.Close()
}
