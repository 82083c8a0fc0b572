package allocrunner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

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
	prevID     string
	dir        *allocdir.AllocDir
	tasks      []*taskrunner.TaskRunner
	prevRunner *AllocRunner       // the previous allocation's runner on this node, or nil
	local      *allocdir.AllocDir // else its tree left on this node, or nil
	remote     PrevDataFetcher    // else where to fetch it from, or nil

	ran atomic.Bool // Prerun took the data (or found none to take)
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
		h.prevRunner = l.prev
	} else if d := ranHere(ar.allocDir, h.prevID); d != nil {
		h.local = d
	} else if tg.EphemeralDisk.Migrate {
		h.remote = remote
	}
	if h.prevRunner == nil && h.local == nil && h.remote == nil {
		return nil
	}
	return h
}

// dataSource is the tree that holds the data this allocation inherits on
// this node: the previous allocation's, unless that one never took its
// own inheritance (its prepare failed, so it stopped nothing and its
// previous allocation ran on with the data); then, down the chain of local
// previous allocations, the first one that did or had none to take. An
// allocation whose tasks have not all exited is never a source.
func (h *diskMigrateHook) dataSource() *allocdir.AllocDir {
	src := h.prevRunner
	for src.migrateHook != nil && !src.migrateHook.ran.Load() && src.migrateHook.prevRunner != nil {
		next := src.migrateHook.prevRunner
		select {
		case <-next.TasksExitedCh():
			src = next
		default:
			return src.allocDir
		}
	}
	return src.allocDir
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
	defer h.ran.Store(true)
	if h.prevRunner != nil || h.local != nil {
		from := h.local
		if h.prevRunner != nil {
			from = h.dataSource()
		}
		moved, err := allocdir.MoveEphemeral(from, h.dir, names)
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
