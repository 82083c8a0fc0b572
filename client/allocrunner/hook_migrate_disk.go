package allocrunner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/drover-project/drover/client/allocrunner/allocdir"
	"github.com/drover-project/drover/client/allocrunner/taskrunner"
)

// diskMigrateHook hands the previous allocation's ephemeral data (alloc/data
// and each task's local/) to this one when the group's ephemeral_disk is
// sticky or migrate, as Nomad does. It runs after the prepare hook, so the
// previous allocation has stopped (prefetch before kill is unchanged), and
// before any task starts:
//
//   - previous allocation on this node (running, or ended before this
//     client process started, its directory still there): its directories
//     are moved (renamed) into this allocation's;
//   - on another node, with migrate: the data is fetched from that node's
//     client (Config.PrevData) and restored atomically.
//
// As in Nomad the move is best effort: a previous allocation already
// collected, an unreachable node or a broken transfer leaves this
// allocation with empty directories and a task event saying so. An archive
// with an entry that would leave the allocation directory is an attack,
// not a loss: the allocation fails, every task with a Setup Failure naming
// the entry.
type diskMigrateHook struct {
	prevID string
	dir    *allocdir.AllocDir
	tasks  []*taskrunner.TaskRunner
	local  *allocdir.AllocDir // the previous allocation's tree on this node, or nil
	remote PrevDataFetcher    // or nil
}

var _ Prerunner = (*diskMigrateHook)(nil)

// newDiskMigrateHook returns the hook, or nil when the allocation inherits
// nothing (no previous allocation, or a disk neither sticky nor migrate).
func newDiskMigrateHook(ar *AllocRunner, remote PrevDataFetcher) *diskMigrateHook {
	tg := ar.alloc.Job.LookupTaskGroup(ar.alloc.TaskGroup)
	if ar.alloc.PreviousAllocation == "" || tg == nil || !tg.EphemeralDisk.KeepsData() {
		return nil
	}
	h := &diskMigrateHook{prevID: ar.alloc.PreviousAllocation, dir: ar.allocDir, tasks: ar.tasks}
	if l, ok := ar.prevAlloc.(*localPrevAlloc); ok {
		h.local = l.prev.allocDir
	} else if d := ranHere(ar.allocDir, h.prevID); d != nil {
		h.local = d
	} else if tg.EphemeralDisk.Migrate {
		h.remote = remote
	}
	if h.local == nil && h.remote == nil {
		return nil
	}
	return h
}

func (*diskMigrateHook) Name() string { return "migrate_disk" }

// ranHere returns the tree of allocation prevID when it is still beside
// dir without a runner: it ran on this node and had ended before this
// client process started (the client keeps no runner for it). Nil
// otherwise.
func ranHere(dir *allocdir.AllocDir, prevID string) *allocdir.AllocDir {
	d, err := allocdir.New(filepath.Dir(dir.Dir()), prevID)
	if err != nil {
		return nil
	}
	if fi, err := os.Lstat(d.Dir()); err != nil || !fi.IsDir() {
		return nil
	}
	return d
}

// Prerun moves or fetches the data; a restored runner already has it.
func (h *diskMigrateHook) Prerun(ctx context.Context, req *PrerunRequest) error {
	if req.Restored {
		return nil
	}
	names := make([]string, len(h.tasks))
	for i, tr := range h.tasks {
		names[i] = tr.Name()
	}
	if h.local != nil {
		moved, err := allocdir.MoveEphemeral(h.local, h.dir, names)
		switch {
		case err != nil:
			h.lost(fmt.Errorf("moving its data: %w", err))
		case len(moved) > 0:
			h.note(fmt.Sprintf("Moved %s from previous allocation %s", strings.Join(moved, ", "), shortID(h.prevID)))
		}
		return nil
	}
	h.note(fmt.Sprintf("Migrating data from previous allocation %s", shortID(h.prevID)))
	rc, err := h.remote.Fetch(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		h.lost(err)
		return nil
	}
	defer rc.Close()
	err = h.dir.RestoreSnapshot(rc, names)
	switch {
	case errors.Is(err, allocdir.ErrUnsafeArchive):
		return fmt.Errorf("refusing the data of previous allocation %s: %w", shortID(h.prevID), err)
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		h.lost(err)
	default:
		h.note(fmt.Sprintf("Migrated data from previous allocation %s", shortID(h.prevID)))
	}
	return nil
}

// lost records that the data could not be had. A restore is atomic, so
// the allocation starts with empty directories; a failed local move keeps
// the directories it moved before the failure.
func (h *diskMigrateHook) lost(err error) {
	h.note(fmt.Sprintf("Could not migrate data from previous allocation %s, starting without it: %v", shortID(h.prevID), err))
}

func (h *diskMigrateHook) note(msg string) {
	for _, tr := range h.tasks {
		tr.Note(msg)
	}
}
