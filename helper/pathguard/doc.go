// Package pathguard checks that a path, after every symlink in it is
// followed, stays inside a root directory: the allocation or task
// directory a job's paths must not leave.
//
// Within is the whole API. It is a check, not a sandbox: a path it accepts
// can still be redirected by whoever may write below root between the
// check and the use. Callers therefore check when nothing of the job runs
// in root (before a task starts, after it ended), operate on the resolved
// path it returns, and where a final component is created or opened they
// also refuse to follow a symlink there (O_NOFOLLOW, Lstat).
//
// It imports nothing of Drover's; anyone may import it (the task drivers,
// the client's allocation runner).
package pathguard
