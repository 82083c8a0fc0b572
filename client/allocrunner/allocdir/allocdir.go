package allocdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/drover-project/drover/helper/pathguard"
)

// Names of the directories.
const (
	SharedDirName  = "alloc"
	LogDirName     = "logs"
	DataDirName    = "data"
	TmpDirName     = "tmp"
	LocalDirName   = "local"
	SecretsDirName = "secrets"
	// PrivateRootName is the directory under the allocations' root that
	// holds the tasks' private dirs: <root>/.private/<allocID>/<task>.
	// No allocation's tree contains it, so neither a task (not even one
	// chrooted in its task dir) nor `alloc fs` sees it.
	PrivateRootName = ".private"
)

// privateDirMode keeps a private dir to the agent's user: a task running
// as another user can neither list nor write it.
const privateDirMode = 0o700

// Log streams.
const (
	Stdout = "stdout"
	Stderr = "stderr"
)

// ErrBadName is returned for an allocation ID or task name that cannot be a
// directory name (empty, ".", "..", or containing a path separator).
var ErrBadName = errors.New("allocdir: invalid name")

// AllocDir is one allocation's directory tree. It is immutable.
type AllocDir struct {
	dir     string // <root>/<allocID>
	private string // <root>/.private/<allocID>
}

// TaskDir holds the paths of one task's directories.
type TaskDir struct {
	Dir        string // <alloc>/<task>: the task's working directory
	LocalDir   string // <alloc>/<task>/local
	SecretsDir string // <alloc>/<task>/secrets
	TmpDir     string // <alloc>/<task>/tmp
	// PrivateDir is <root>/.private/<allocID>/<task>: the files the
	// client and the task's driver keep about the task (an executor's
	// spec and exit record), mode 0700, outside every allocation's tree.
	PrivateDir string
}

// New returns the tree of allocation allocID under root. Nothing is created.
func New(root, allocID string) (*AllocDir, error) {
	if err := checkName(allocID); err != nil {
		return nil, fmt.Errorf("alloc ID: %w", err)
	}
	if allocID == PrivateRootName {
		return nil, fmt.Errorf("alloc ID: %w: %q is the private dirs' root", ErrBadName, allocID)
	}
	if root == "" {
		return nil, errors.New("allocdir: root directory is required")
	}
	return &AllocDir{dir: filepath.Join(root, allocID), private: filepath.Join(root, PrivateRootName, allocID)}, nil
}

// Dir returns <root>/<allocID>.
func (d *AllocDir) Dir() string { return d.dir }

// SharedDir returns the shared alloc dir, <root>/<allocID>/alloc.
func (d *AllocDir) SharedDir() string { return filepath.Join(d.dir, SharedDirName) }

// LogDir returns <root>/<allocID>/alloc/logs.
func (d *AllocDir) LogDir() string { return filepath.Join(d.dir, SharedDirName, LogDirName) }

// TaskDir returns the paths of task's directories; the task name must be
// valid (see Build).
func (d *AllocDir) TaskDir(task string) TaskDir {
	td := filepath.Join(d.dir, task)
	return TaskDir{
		Dir:        td,
		LocalDir:   filepath.Join(td, LocalDirName),
		SecretsDir: filepath.Join(td, SecretsDirName),
		TmpDir:     filepath.Join(td, TmpDirName),
		PrivateDir: filepath.Join(d.private, task),
	}
}

// LogPath returns the first log file of a task's stream ("stdout" or
// "stderr"): <root>/<allocID>/alloc/logs/<task>.<stream>.0.
func (d *AllocDir) LogPath(task, stream string) (string, error) {
	if stream != Stdout && stream != Stderr {
		return "", fmt.Errorf("allocdir: log stream %q is not %q or %q", stream, Stdout, Stderr)
	}
	if err := checkName(task); err != nil {
		return "", fmt.Errorf("task name: %w", err)
	}
	return filepath.Join(d.LogDir(), task+"."+stream+".0"), nil
}

// Build creates the shared directories and those of each task. It is
// idempotent and keeps whatever the directories hold.
func (d *AllocDir) Build(tasks []string) error {
	dirs := []struct {
		path string
		mode os.FileMode
	}{
		{d.SharedDir(), 0o755},
		{d.LogDir(), 0o755},
		{filepath.Join(d.SharedDir(), DataDirName), 0o755},
		{filepath.Join(d.SharedDir(), TmpDirName), os.ModeSticky | 0o777},
	}
	for _, t := range tasks {
		if err := checkName(t); err != nil {
			return fmt.Errorf("task name: %w", err)
		}
		td := d.TaskDir(t)
		dirs = append(dirs, []struct {
			path string
			mode os.FileMode
		}{{td.Dir, 0o755}, {td.LocalDir, 0o755}, {td.SecretsDir, 0o755}, {td.TmpDir, os.ModeSticky | 0o777}}...)
	}
	if err := os.MkdirAll(d.dir, 0o755); err != nil {
		return fmt.Errorf("allocdir: creating %s: %w", d.dir, err)
	}
	if err := d.buildPrivate(tasks); err != nil {
		return err
	}
	for _, dir := range dirs {
		// A task of the allocation may have replaced one of these with a
		// symlink (alloc/data through /alloc, or its own local/): nothing
		// outside the allocation's tree is created or chmodded.
		p, err := pathguard.Within(d.dir, dir.path)
		if err != nil {
			return fmt.Errorf("allocdir: %w", err)
		}
		if err := os.MkdirAll(p, 0o755); err != nil {
			return fmt.Errorf("allocdir: creating %s: %w", dir.path, err)
		}
		// MkdirAll applies the umask; set the mode (sticky bit included).
		if err := os.Chmod(p, dir.mode); err != nil {
			return fmt.Errorf("allocdir: chmod %s: %w", dir.path, err)
		}
	}
	return nil
}

// buildPrivate creates the private dirs of tasks, 0700. No task can
// write under <root>/.private, so there is no symlink of a task's to
// guard against; the modes are set again in case an older agent or an
// operator loosened them.
func (d *AllocDir) buildPrivate(tasks []string) error {
	paths := []string{filepath.Dir(d.private), d.private}
	for _, t := range tasks {
		paths = append(paths, d.TaskDir(t).PrivateDir)
	}
	for _, p := range paths {
		if err := os.MkdirAll(p, privateDirMode); err != nil {
			return fmt.Errorf("allocdir: creating %s: %w", p, err)
		}
		if err := os.Chmod(p, privateDirMode); err != nil {
			return fmt.Errorf("allocdir: chmod %s: %w", p, err)
		}
	}
	return nil
}

// Destroy removes the allocation's tree and its tasks' private dirs; a
// missing tree is not an error.
func (d *AllocDir) Destroy() error {
	for _, dir := range []string{d.dir, d.private} {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("allocdir: removing %s: %w", dir, err)
		}
	}
	return nil
}

func checkName(name string) error {
	if name == "" || name == "." || name == ".." || filepath.Base(name) != name || filepath.IsAbs(name) {
		return fmt.Errorf("%w: %q", ErrBadName, name)
	}
	return nil
}
