package allocrunner

import (
	"context"
	"fmt"
	"sync"

	"github.com/drover-project/drover/client/allocrunner/taskrunner"
)

// prepareHook implements "prefetch before kill": it prepares the tasks
// (Docker: pulls their images) while the previous allocation on the node
// keeps running, and stops the previous allocation only once every task is
// prepared. A failed or timed-out prepare never stops the previous
// allocation: the task fails (Driver Failure) and so does this allocation.
//
// Order, with a previous allocation:
//
//	prepare tasks (prefetch on, or no prepare step: validation only)
//	  → prev.Stop() → prev.Wait() → prepare tasks with prefetch = false
//	  → (the runner starts the tasks)
//
// Without one, every task is prepared; the runner then starts them. A
// runner restored with started tasks skips all this: the previous
// allocation already stopped, and task runners prepare what they restart.
type prepareHook struct {
	prevID      string // Alloc.PreviousAllocation, for events
	tasks       []*taskrunner.TaskRunner
	releasePrev func() // ends this runner's hold on the previous alloc's stop

	mu   sync.Mutex
	prev PrevAllocController // or nil; dropped by Postrun
}

var (
	_ Prerunner  = (*prepareHook)(nil)
	_ Postrunner = (*prepareHook)(nil)
)

func newPrepareHook(ar *AllocRunner) *prepareHook {
	return &prepareHook{prevID: ar.alloc.PreviousAllocation, tasks: ar.tasks, prev: ar.prevAlloc, releasePrev: ar.releasePrev}
}

func (*prepareHook) Name() string { return "prepare" }

// Prerun prepares the tasks and stops the previous allocation in the order
// above. Its error names the task whose prepare failed (already marked
// failed) or says the runner was interrupted.
func (h *prepareHook) Prerun(ctx context.Context, req *PrerunRequest) error {
	if req.Restored {
		// Invariants: the previous allocation stopped before any task of
		// this one started; if it still holds a deferred stop, carry it out.
		h.releasePrev()
		return nil
	}
	h.mu.Lock()
	prev := h.prev
	h.mu.Unlock()

	var early, late []*taskrunner.TaskRunner
	for _, tr := range h.tasks {
		if prev != nil && tr.NeedsPrepare() && !tr.Prefetch() {
			late = append(late, tr)
		} else {
			early = append(early, tr)
		}
	}
	if err := prepareAll(ctx, early); err != nil {
		return err // Invariants: the previous allocation was not touched.
	}
	if prev != nil {
		if err := ctx.Err(); err != nil {
			return err // killed while preparing: the previous alloc follows its own desired status
		}
		for _, tr := range h.tasks {
			tr.Note(fmt.Sprintf("Stopping previous allocation %s", shortID(h.prevID)))
		}
		prev.Stop()
		if err := prev.Wait(ctx); err != nil {
			return fmt.Errorf("waiting for the previous allocation to stop: %w", err)
		}
	}
	return prepareAll(ctx, late)
}

// prepareAll prepares tasks one after the other, stopping at the first
// failure.
func prepareAll(ctx context.Context, tasks []*taskrunner.TaskRunner) error {
	for _, tr := range tasks {
		if err := tr.Prepare(ctx); err != nil {
			return fmt.Errorf("task %s: %w", tr.Name(), err)
		}
	}
	return nil
}

// Postrun drops the previous allocation so it can be collected.
func (h *prepareHook) Postrun() error {
	h.mu.Lock()
	h.prev = nil
	h.mu.Unlock()
	return nil
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
