package allocrunner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/drover-project/drover/client/allocrunner/allocdir"
	"github.com/drover-project/drover/helper/pathguard"
	"github.com/drover-project/drover/nomad/structs"
)

// dispatchPayloadHook writes a dispatched job's payload into the local
// directory of every task with a `dispatch_payload { file = ... }` block,
// before any task starts. Jobs that were not dispatched have no payload and
// nothing is written.
type dispatchPayloadHook struct {
	dir   *allocdir.AllocDir
	alloc *structs.Allocation
}

var _ Prerunner = (*dispatchPayloadHook)(nil)

func (*dispatchPayloadHook) Name() string { return "dispatch_payload" }

// Prerun writes the payload files; it is idempotent, so it runs on restore
// too.
func (h *dispatchPayloadHook) Prerun(context.Context, *PrerunRequest) error {
	job := h.alloc.Job
	if job == nil || len(job.Payload) == 0 {
		return nil
	}
	tg := job.LookupTaskGroup(h.alloc.TaskGroup)
	if tg == nil {
		return nil
	}
	for _, t := range tg.Tasks {
		if t.DispatchPayload == nil || t.DispatchPayload.File == "" {
			continue
		}
		td := h.dir.TaskDir(t.Name)
		if err := writePayload(td.Dir, td.LocalDir, t.DispatchPayload.File, job.Payload); err != nil {
			return fmt.Errorf("task %q: dispatch payload: %w", t.Name, err)
		}
	}
	return nil
}

// writePayload writes payload to file below localDir, in taskDir; a file
// that would land outside localDir is refused (validation refuses such
// jobs, this guards the node against an older server), and so is one whose
// directory leads out of the task dir through a symlink a task planted. A
// symlink at the file itself is replaced, not written through.
func writePayload(taskDir, localDir, file string, payload []byte) error {
	path := filepath.Join(localDir, file)
	if rel, err := filepath.Rel(localDir, path); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("file %q escapes the task's local directory", file)
	}
	dir, err := pathguard.Within(taskDir, filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("file %q: %w", file, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	target := filepath.Join(dir, filepath.Base(path))
	if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(payload); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
