package allocrunner

import (
	"context"

	"github.com/drover-project/drover/client/allocrunner/allocdir"
)

// allocDirHook builds the alloc's directories before the tasks run and
// removes them when the runner is destroyed.
type allocDirHook struct {
	dir   *allocdir.AllocDir
	tasks []string
}

var (
	_ Prerunner = (*allocDirHook)(nil)
	_ Destroyer = (*allocDirHook)(nil)
)

func (*allocDirHook) Name() string { return "alloc_dir" }

// Prerun builds the tree; it runs on restore too (Build is idempotent).
func (h *allocDirHook) Prerun(context.Context, *PrerunRequest) error {
	return h.dir.Build(h.tasks)
}

// Destroy removes the tree.
func (h *allocDirHook) Destroy() error { return h.dir.Destroy() }
