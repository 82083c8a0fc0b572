package chaos

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// serverDiskMiB is the size of the tmpfs each server's data directory is
// on: DROVER_CHAOS_DISK_MB, else 256 MiB for a run of up to 60 faults
// (small, so that filling it is quick) and 1 GiB for a longer one. Every
// server's raft log holds every disk-full fault's ballast until a
// snapshot lets raft drop it, and the last 10,240 entries are kept even
// then: 40 disk-full faults in a row took the log to 200–223 MiB of 256
// on all three servers, and a disk the log itself fills stays full after
// the filler goes.
func serverDiskMiB() int64 {
	def := int64(256)
	if envInt("DROVER_CHAOS_FAULTS", 6) > 60 {
		def = 1024
	}
	return envInt("DROVER_CHAOS_DISK_MB", def)
}

// envInt is the integer in the environment variable name, or def when it
// is unset or not an integer.
func envInt(name string, def int64) int64 {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err == nil {
			return n
		}
	}
	return def
}

// mountDisk mounts a tmpfs of serverDiskMiB on dir (which must exist and
// be empty), unmounted in t.Cleanup. Cleanups run last-in first-out, so a
// caller that registers the process's kill after this has it killed
// before the unmount.
func mountDisk(t testing.TB, dir string) error {
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%dm,mode=0700", serverDiskMiB())); err != nil {
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

// diskUse returns the bytes in use on the file system of dir and its size.
func diskUse(dir string) (used, size int64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return int64(st.Blocks-st.Bfree) * st.Bsize, int64(st.Blocks) * st.Bsize, nil
}

// DiskUse describes every server's data disk ("s0 41/256 MiB ...") and
// records the most each has used (MaxDiskUse).
func (c *Cluster) DiskUse() string {
	var b strings.Builder
	for _, s := range c.Servers {
		used, size, err := diskUse(s.DataDir)
		if err != nil {
			fmt.Fprintf(&b, " %s ?(%v)", s.Name, err)
			continue
		}
		if c.maxDisk == nil {
			c.maxDisk = map[string]int64{}
		}
		c.maxDisk[s.Name] = max(c.maxDisk[s.Name], used)
		fmt.Fprintf(&b, " %s %d/%d MiB", s.Name, used>>20, size>>20)
	}
	return strings.TrimSpace(b.String())
}

// MaxDiskUse is the most every server's data disk held at a DiskUse,
// the disk-full filler not counted (DiskUse runs after heals).
func (c *Cluster) MaxDiskUse() string {
	var b strings.Builder
	for _, s := range c.Servers {
		fmt.Fprintf(&b, " %s %d MiB", s.Name, c.maxDisk[s.Name]>>20)
	}
	return strings.TrimSpace(b.String())
}

// KeepData copies every server's data directory (the filler left out) to
// dir/<server>/ and its log to dir/<server>.log, for a failed run to be
// looked into after the test has removed its own.
func (c *Cluster) KeepData(dir string) error {
	var errs []error
	for _, s := range c.Servers {
		dst := filepath.Join(dir, s.Name)
		err := filepath.WalkDir(s.DataDir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(s.DataDir, path)
			switch {
			case d.Name() == fillerName:
				return nil
			case d.IsDir():
				return os.MkdirAll(filepath.Join(dst, rel), 0o700)
			case !d.Type().IsRegular():
				return nil
			}
			return copyFile(path, filepath.Join(dst, rel))
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Name, err))
		}
		if err := os.WriteFile(filepath.Join(dir, s.Name+".log"), []byte(s.Logs()), 0o644); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
