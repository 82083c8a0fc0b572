package allocrunner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/drover-project/drover/client/allocrunner/allocdir"
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
		if err := writePayload(h.dir.TaskDir(t.Name).LocalDir, t.DispatchPayload.File, job.Payload); err != nil {
			return fmt.Errorf("task %q: dispatch payload: %w", t.Name, err)
		}
	}
	return nil
}

// writePayload writes payload to file below localDir; a file that would
// land outside localDir is refused (validation refuses such jobs, this
// guards the node against an older server).
func writePayload(localDir, file string, payload []byte) error {
	path := filepath.Join(localDir, file)
	if rel, err := filepath.Rel(localDir, path); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("file %q escapes the task's local directory", file)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, payload, 0o644)
}
