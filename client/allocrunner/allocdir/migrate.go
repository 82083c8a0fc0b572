package allocdir

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// An allocation's ephemeral data is what ephemeral_disk sticky and migrate
// hand to its replacement, as Nomad does: the shared alloc/data directory
// and each task's local/ directory. Logs, secrets and tmp directories stay
// behind.

// ErrUnsafeArchive is returned by RestoreSnapshot for an archive entry that
// would land outside its directory (an absolute path, "..", a symlink whose
// target leaves the allocation directory) or that is not a directory,
// regular file or symlink.
var ErrUnsafeArchive = errors.New("unsafe archive entry")

// ephemeralDirs are the relative (slash) paths of the ephemeral data of an
// allocation running tasks.
func ephemeralDirs(tasks []string) []string {
	dirs := []string{SharedDirName + "/" + DataDirName}
	for _, t := range tasks {
		dirs = append(dirs, t+"/"+LocalDirName)
	}
	return dirs
}

// MoveEphemeral moves prev's ephemeral data into d, for the tasks of d that
// prev had too, replacing d's own (freshly built) directories: a rename,
// so prev no longer holds them afterwards. A source that is missing or not
// a real directory (a symlink, say) is skipped. It returns the relative
// paths it moved. Both trees must be on one file system (one client's
// allocation root).
func MoveEphemeral(prev, d *AllocDir, tasks []string) ([]string, error) {
	for _, t := range tasks {
		if err := checkName(t); err != nil {
			return nil, fmt.Errorf("task name: %w", err)
		}
	}
	var moved []string
	for _, rel := range ephemeralDirs(tasks) {
		from := filepath.Join(prev.dir, filepath.FromSlash(rel))
		fi, err := os.Lstat(from)
		if errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.IsDir()) {
			continue
		}
		if err != nil {
			return moved, fmt.Errorf("allocdir: %w", err)
		}
		to := filepath.Join(d.dir, filepath.FromSlash(rel))
		if err := os.RemoveAll(to); err != nil {
			return moved, fmt.Errorf("allocdir: replacing %s: %w", rel, err)
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return moved, fmt.Errorf("allocdir: %w", err)
		}
		if err := os.Rename(from, to); err != nil {
			return moved, fmt.Errorf("allocdir: moving %s: %w", rel, err)
		}
		moved = append(moved, rel)
	}
	return moved, nil
}

// WriteSnapshot writes d's ephemeral data for tasks (the allocation's own)
// to w as a tar stream: directories, regular files and symlinks, with
// their modes and owners, named by their slash path relative to d. Files
// are read through an os.Root of d, so a symlink planted by a task never
// makes the snapshot read outside the allocation directory.
func (d *AllocDir) WriteSnapshot(w io.Writer, tasks []string) error {
	root, err := os.OpenRoot(d.dir)
	if err != nil {
		return fmt.Errorf("allocdir: %w", err)
	}
	defer root.Close()
	tw := tar.NewWriter(w)
	for _, rel := range ephemeralDirs(tasks) {
		fi, err := root.Lstat(rel)
		if errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.IsDir()) {
			continue
		}
		if err != nil {
			return fmt.Errorf("allocdir: %w", err)
		}
		err = fs.WalkDir(root.FS(), rel, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return writeEntry(tw, root, p, e)
		})
		if err != nil {
			return fmt.Errorf("allocdir: snapshot of %s: %w", rel, err)
		}
	}
	return tw.Close()
}

// writeEntry adds the entry p of root to tw; other file types (sockets,
// devices, pipes) are left out.
func writeEntry(tw *tar.Writer, root *os.Root, p string, e fs.DirEntry) error {
	fi, err := e.Info()
	if err != nil {
		return err
	}
	var link string
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		if link, err = root.Readlink(p); err != nil {
			return err
		}
	case fi.IsDir(), fi.Mode().IsRegular():
	default:
		return nil
	}
	if !fi.Mode().IsRegular() {
		hdr, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		hdr.Name = p
		if fi.IsDir() {
			hdr.Name += "/"
		}
		return tw.WriteHeader(hdr)
	}
	f, err := root.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	ofi, err := f.Stat()
	if err != nil {
		return err
	}
	if !ofi.Mode().IsRegular() {
		return fmt.Errorf("%s changed while it was read", p)
	}
	hdr, err := tar.FileInfoHeader(ofi, "")
	if err != nil {
		return err
	}
	hdr.Name = p
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err = io.CopyN(tw, f, hdr.Size)
	return err
}

// RestoreSnapshot unpacks a stream written by WriteSnapshot into d's
// ephemeral data for tasks (d's own), replacing d's directories. It is
// atomic: entries go to a staging directory beside d, which replaces d's
// directories only once the whole stream is read; on any error the
// staging directory is removed and d is left as it was. Entries of tasks
// d does not have are skipped. An entry that is not under alloc/data or a
// task's local/, is absolute or has "..", is of another type than
// directory, regular file or symlink, or a symlink whose target (resolved
// from its own directory) leaves the allocation directory, fails the
// restore with ErrUnsafeArchive. Writes go through an os.Root of the
// staging directory, so no entry lands outside it even through a symlink.
// Modes keep their permission bits (no setuid/setgid); owners are kept
// when the client runs as root.
func (d *AllocDir) RestoreSnapshot(r io.Reader, tasks []string) (err error) {
	known := map[string]bool{SharedDirName: true}
	for _, t := range tasks {
		if err := checkName(t); err != nil {
			return fmt.Errorf("task name: %w", err)
		}
		known[t] = true
	}
	staging := d.dir + ".migrate"
	if err := os.RemoveAll(staging); err != nil {
		return fmt.Errorf("allocdir: %w", err)
	}
	if err := os.Mkdir(staging, 0o700); err != nil {
		return fmt.Errorf("allocdir: %w", err)
	}
	defer func() {
		if rmErr := os.RemoveAll(staging); rmErr != nil && err == nil {
			err = fmt.Errorf("allocdir: removing staging directory: %w", rmErr)
		}
	}()
	root, err := os.OpenRoot(staging)
	if err != nil {
		return fmt.Errorf("allocdir: %w", err)
	}
	defer root.Close()
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("allocdir: reading archive: %w", err)
		}
		name, skip, err := entryName(hdr.Name, known)
		if err != nil {
			return err
		}
		if skip {
			continue
		}
		if err := restoreEntry(root, tr, hdr, name); err != nil {
			return err
		}
	}
	for _, rel := range ephemeralDirs(tasks) {
		from := filepath.Join(staging, filepath.FromSlash(rel))
		if fi, err := os.Lstat(from); err != nil || !fi.IsDir() {
			continue
		}
		to := filepath.Join(d.dir, filepath.FromSlash(rel))
		if err := os.RemoveAll(to); err != nil {
			return fmt.Errorf("allocdir: replacing %s: %w", rel, err)
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return fmt.Errorf("allocdir: %w", err)
		}
		if err := os.Rename(from, to); err != nil {
			return fmt.Errorf("allocdir: restoring %s: %w", rel, err)
		}
	}
	return nil
}

// entryName checks an archive entry's name and returns it cleaned; skip is
// set for the local/ data of a task not in known.
func entryName(raw string, known map[string]bool) (name string, skip bool, err error) {
	name = strings.TrimSuffix(raw, "/")
	if name == "" || path.IsAbs(name) || strings.Contains(name, `\`) || path.Clean(name) != name {
		return "", false, fmt.Errorf("%w: %q is not a clean relative path", ErrUnsafeArchive, raw)
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", false, fmt.Errorf("%w: %q leaves its directory", ErrUnsafeArchive, raw)
		}
	}
	first, rest, _ := strings.Cut(name, "/")
	second, _, _ := strings.Cut(rest, "/")
	switch {
	case first == SharedDirName && second == DataDirName:
	case first != SharedDirName && second == LocalDirName && checkName(first) == nil:
		if !known[first] {
			return "", true, nil
		}
	default:
		return "", false, fmt.Errorf("%w: %q is not under %s/%s or a task's %s/", ErrUnsafeArchive, raw, SharedDirName, DataDirName, LocalDirName)
	}
	return name, false, nil
}

// restoreEntry creates the entry name of hdr under root.
func restoreEntry(root *os.Root, tr *tar.Reader, hdr *tar.Header, name string) error {
	perm := fs.FileMode(hdr.Mode) & fs.ModePerm
	if dir := path.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return unsafeIfEscape(name, err)
		}
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := root.MkdirAll(name, 0o755); err != nil {
			return unsafeIfEscape(name, err)
		}
		if err := root.Chmod(name, perm); err != nil {
			return unsafeIfEscape(name, err)
		}
	case tar.TypeReg:
		f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if err != nil {
			return unsafeIfEscape(name, err)
		}
		_, err = io.CopyN(f, tr, hdr.Size)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("allocdir: writing %s: %w", name, err)
		}
		if err := root.Chmod(name, perm); err != nil { // OpenFile applies the umask
			return unsafeIfEscape(name, err)
		}
	case tar.TypeSymlink:
		target := hdr.Linkname
		resolved := path.Join(path.Dir(name), target)
		if target == "" || path.IsAbs(target) || resolved == ".." || strings.HasPrefix(resolved, "../") {
			return fmt.Errorf("%w: symlink %q -> %q leaves the allocation directory", ErrUnsafeArchive, name, target)
		}
		if err := root.Symlink(target, name); err != nil {
			return unsafeIfEscape(name, err)
		}
	default:
		return fmt.Errorf("%w: %q is of type %q, not a directory, regular file or symlink", ErrUnsafeArchive, name, string(hdr.Typeflag))
	}
	if os.Geteuid() == 0 {
		if err := root.Lchown(name, hdr.Uid, hdr.Gid); err != nil {
			return fmt.Errorf("allocdir: chown %s: %w", name, err)
		}
	}
	return nil
}

// unsafeIfEscape marks an os.Root refusal to leave its directory (through
// a symlink already restored) as ErrUnsafeArchive.
func unsafeIfEscape(name string, err error) error {
	if strings.Contains(err.Error(), "path escapes from parent") {
		return fmt.Errorf("%w: %q resolves outside the allocation directory: %v", ErrUnsafeArchive, name, err)
	}
	return fmt.Errorf("allocdir: restoring %s: %w", name, err)
}
