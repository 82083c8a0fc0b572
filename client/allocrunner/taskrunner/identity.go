package taskrunner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/drover-project/drover/helper/pathguard"
	"github.com/drover-project/drover/nomad/structs"
)

// identityFileMode is the mode of token files: readable by the task
// whatever user it runs as; the task dir's permissions protect them, as in
// Nomad.
const identityFileMode = 0o644

// writeIdentities writes the task's signed workload identities that ask
// for a file (file = true) under taskDir: secrets/nomad_token for the
// default identity, secrets/nomad_<name>.jwt for named ones, or the
// identity's filepath. It runs before every start, so a restarted task
// finds them too. An identity the server did not sign is an error: the
// task would start without the token its job asked for.
func writeIdentities(taskDir string, alloc *structs.Allocation, task *structs.Task) error {
	for _, wi := range task.AllIdentities() {
		if !wi.Env && !wi.File {
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
		if err := writeFileAtomic(path, []byte(tok)); err != nil {
			return fmt.Errorf("identity %q: %w", wi.Name, err)
		}
	}
	return nil
}

// writeFileAtomic replaces path with data so that a reader never sees a
// partly written token.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".identity-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename there is nothing to remove
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(identityFileMode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
