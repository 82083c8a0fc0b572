// Package pathguard decides whether a host path a job names stays inside
// the directory it is confined to (the allocation directory) once every
// symlink is followed, as the kernel would follow them when the path is
// used (a bind mount's source, a template's destination, an artifact's
// target).
//
// Resolve walks an absolute path component by component: a symlink is
// replaced by its target (an absolute target restarts at "/"), and ".."
// leaves the directory reached so far, not the one written (so
// "a/link/.." is the parent of link's target, not "a"). Components past the
// first one that does not exist are appended as written, with "." and ".."
// applied lexically (nothing that does not exist can be a symlink).
// Within (one root, a relative path taken from it, the resolved path or an
// error naming where the path leads) and WithinAny (several roots, the
// whole Resolution) resolve a path and check it against the resolved roots
// with filepath.Rel, so "/alloc-x" is not inside "/alloc".
//
// The answer holds for the file system as it is when it is asked: it is a
// check, not a sandbox. Callers check when nothing of the job runs in the
// root (before a task starts, after it ended), hand over or operate on the
// resolved path (which has no symlinks left), check again before each use,
// and where a final component is created or opened also refuse to follow
// a symlink there (O_NOFOLLOW, Lstat).
//
// It imports only the standard library; anyone may import it.
package pathguard
