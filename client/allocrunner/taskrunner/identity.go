package taskrunner

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/drover-project/drover/helper/pathguard"
	"github.com/drover-project/drover/nomad/structs"
)

// Token file modes. As in Nomad a token file is 0600 and owned by the
// task's user: root's when the task names no user, the named user's when
// the host knows it. A user the host does not know (a Docker image's own)
// cannot be given the file, so it stays readable to all (0644) and the
// task dir's permissions protect it.
const (
	identityFileMode        = 0o600
	identityFileModeForeign = 0o644
)

// fileOwner is who a token file is written for: uid/gid -1 keep the
// agent's, and mode is the file's mode.
type fileOwner struct {
	uid, gid int
	mode     os.FileMode
}

// identityOwner resolves the task's user on the host (lookup is
// user.Lookup in production).
func identityOwner(taskUser string, lookup func(string) (*user.User, error)) fileOwner {
	if taskUser == "" {
		return fileOwner{uid: -1, gid: -1, mode: identityFileMode}
	}
	u, err := lookup(taskUser)
	if err != nil {
		return fileOwner{uid: -1, gid: -1, mode: identityFileModeForeign}
	}
	uid, uerr := strconv.Atoi(u.Uid)
	gid, gerr := strconv.Atoi(u.Gid)
	if uerr != nil || gerr != nil {
		return fileOwner{uid: -1, gid: -1, mode: identityFileModeForeign}
	}
	return fileOwner{uid: uid, gid: gid, mode: identityFileMode}
}

// writeIdentities writes the task's signed workload identities that ask
// for a file (file = true) under taskDir: secrets/nomad_token for the
// default identity, secrets/nomad_<name>.jwt for named ones, or the
// identity's filepath. It runs before every start, so a restarted task
// finds them too. An identity the server did not sign is an error: the
// task would start without the token its job asked for.
func writeIdentities(taskDir string, alloc *structs.Allocation, task *structs.Task) error {
	return writeIdentityFiles(taskDir, alloc, task, nil)
}

// writeIdentityFiles is writeIdentities for the identities named in only
// (all when only is nil): a renewal rewrites the renewed ones alone.
func writeIdentityFiles(taskDir string, alloc *structs.Allocation, task *structs.Task, only []string) error {
	owner := identityOwner(task.User, user.Lookup)
	for _, wi := range task.AllIdentities() {
		if !wi.Env && !wi.File || only != nil && !slices.Contains(only, wi.Name) {
			continue
		}
		tok := alloc.SignedIdentities[structs.IdentityKey(task.Name, wi)]
		if tok == "" {
			return fmt.Errorf("identity %q of task %q was not signed by the server", wi.Name, task.Name)
		}
		if !wi.File {
			continue
		}
		path := filepath.Join(taskDir, wi.FilePath())
		if rel, err := filepath.Rel(taskDir, path); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return fmt.Errorf("identity %q: file %q is outside the task directory", wi.Name, wi.FilePath())
		}
		// secrets/ may have been replaced by a symlink by an earlier run
		// of the task: the token is written only inside the task dir.
		dir, err := pathguard.Within(taskDir, filepath.Dir(path))
		if err != nil {
			return fmt.Errorf("identity %q: %w", wi.Name, err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("identity %q: %w", wi.Name, err)
		}
		path = filepath.Join(dir, filepath.Base(path))
		if err := writeFileAtomic(path, []byte(tok), owner); err != nil {
			return fmt.Errorf("identity %q: %w", wi.Name, err)
		}
	}
	return nil
}

// writeFileAtomic replaces path with data, owned and moded as owner says,
// so that a reader never sees a partly written token.
func writeFileAtomic(path string, data []byte, owner fileOwner) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".identity-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename there is nothing to remove
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(owner.mode); err != nil {
		tmp.Close()
		return err
	}
	if owner.uid >= 0 {
		if err := tmp.Chown(owner.uid, owner.gid); err != nil {
			tmp.Close()
			return err
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
