package client

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/client/allocrunner"
	"github.com/drover-project/drover/client/allocrunner/allocdir"
	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/wire"
)

// allocEntry is an allocation the client knows of.
type allocEntry struct {
	// runner runs the allocation; nil for an allocation the client only
	// remembers (it was terminal when the client first saw it, or when the
	// client restarted) so that it is neither started nor forgotten.
	runner *allocrunner.AllocRunner
	// modifyIndex is the AllocModifyIndex last applied.
	modifyIndex uint64
	// held is a desired-stop version not yet handed to the runner because
	// a replacement is preparing (see computeStopHolds); or nil. It is not
	// persisted: after a restart the server's list brings it again.
	held *structs.Allocation
}

// allocDiff is what to do with the server's list of the node's
// allocations.
type allocDiff struct {
	added   []*structs.Allocation // unknown and not terminal: start a runner
	ignored []*structs.Allocation // unknown and terminal: remember (and settle, see neverRanUpdate)
	updated []*structs.Allocation // known, with a newer AllocModifyIndex
	removed []string              // known, gone from the list (collected): destroy; sorted
}

// computeAllocDiff compares the server's list with the allocations known
// (ID → AllocModifyIndex applied). keep names allocations that were in the
// list but could not be decoded: they are neither added nor removed.
//
// Invariants: an allocation is in at most one of the four sets; a known
// allocation is removed only when the server no longer lists it.
func computeAllocDiff(known map[string]uint64, incoming []*structs.Allocation, keep []string) allocDiff {
	var d allocDiff
	seen := make(map[string]bool, len(incoming)+len(keep))
	for _, id := range keep {
		seen[id] = true
	}
	for _, a := range incoming {
		if seen[a.ID] {
			continue
		}
		seen[a.ID] = true
		idx, ok := known[a.ID]
		switch {
		case !ok && (a.ServerTerminal() || a.ClientTerminal()):
			d.ignored = append(d.ignored, a)
		case !ok:
			d.added = append(d.added, a)
		case a.AllocModifyIndex > idx:
			d.updated = append(d.updated, a)
		}
	}
	for id := range known {
		if !seen[id] {
			d.removed = append(d.removed, id)
		}
	}
	sort.Strings(d.removed)
	return d
}

// errServerBehind is a node alloc answer older than the one applied.
var errServerBehind = errors.New("the server answered with an older view of the node's allocations than the client has applied")

// behindVerdict decides about an answer of the node's alloc query at
// index answered when the client has applied one at applied. An answer
// at a lower index comes from a server behind the one that answered
// before (the node's allocations are read stale, from whichever server
// the client reaches: a follower still catching up, a deposed leader, a
// new leader that has not applied what its predecessor committed). Its
// list lacks allocations placed since: applying it would collect live
// allocations and start again those the client knows are gone. So it is
// not applied (the client asks another server), unless the node has
// registered again since (servers that lost the node, a cluster rebuilt,
// start their indexes over) or the servers have stayed behind for
// patience (a snapshot restored): then the answer is the truth.
// behindSince is when answers started to be behind (zero: they are not);
// the verdict returns the new value.
func behindVerdict(applied, answered uint64, registeredAgain bool, behindSince, now time.Time, patience time.Duration) (apply bool, since time.Time) {
	switch {
	case answered >= applied, registeredAgain:
		return true, time.Time{}
	case behindSince.IsZero():
		return false, now
	case now.Sub(behindSince) >= patience:
		return true, time.Time{}
	default:
		return false, behindSince
	}
}

// watchAllocs long-polls the node's allocations once the node is
// registered and applies each new list, until ctx ends. An answer behind
// the one applied is refused as behindVerdict says: the poll moves to
// the next server and retries after the loop's backoff.
//
// The allocations restored from the client's state count as applied: a
// first answer older than the newest of them is behind too.
func (c *Client) watchAllocs(ctx context.Context) {
	var behindSince time.Time
	restored := c.restoredIndex()
	// regs is the node's registrations when the list at index was applied
	// (for the restored allocations, those of the first poll).
	var regs uint64
	first := true
	c.pollLoop(ctx, hclog.Warn, "failed to fetch allocations; retrying", func(ctx context.Context, index uint64) (uint64, error) {
		list, newIndex, from, err := c.rpc.nodeAllocs(ctx, c.NodeID(), index, c.cfg.timing.allocWait)
		if err != nil {
			return 0, err
		}
		now := c.registrations.Load()
		if first {
			regs, first = now, false
		}
		applied := max(index, restored)
		apply, since := behindVerdict(applied, newIndex, now != regs, behindSince, c.cfg.Now(), c.cfg.timing.behindPatience)
		wasBehind := !behindSince.IsZero()
		behindSince = since
		if !apply {
			c.rpc.rotate(from)
			return 0, fmt.Errorf("%w (server %s: index %d, applied %d)", errServerBehind, from, newIndex, applied)
		}
		if newIndex < applied {
			c.logger.Warn("taking an older view of the node's allocations", "applied", applied, "servers", newIndex, "registered_again", now != regs, "stayed_behind", wasBehind)
		}
		restored = 0 // applied: index carries it from now on
		c.applyAllocs(list)
		regs = now
		return newIndex, nil
	})
}

// restoredIndex is the newest AllocModifyIndex of the allocations the
// client knows before its first answer (restored from its state).
func (c *Client) restoredIndex() uint64 {
	c.allocsMu.Lock()
	defer c.allocsMu.Unlock()
	var idx uint64
	for _, e := range c.allocs {
		idx = max(idx, e.modifyIndex)
	}
	return idx
}

// applyAllocs decodes the server's list and carries out the diff.
func (c *Client) applyAllocs(list []*wire.NodeAlloc) {
	incoming := make([]*structs.Allocation, 0, len(list))
	var keep []string
	peers := map[string]prevPeer{}
	for _, na := range list {
		var a *api.Allocation
		if na != nil {
			a = na.Allocation
		}
		sa, err := allocFromAPI(a)
		if err != nil {
			c.logger.Error("ignoring an allocation the client cannot decode", "error", err)
			if a != nil {
				keep = append(keep, a.ID)
			}
			continue
		}
		sa.SignedIdentities = na.SignedIdentities
		if na.PreviousNodeAddr != "" && na.MigrateToken != "" {
			peers[sa.ID] = prevPeer{addr: na.PreviousNodeAddr, token: na.MigrateToken}
		}
		incoming = append(incoming, sa)
	}
	// Decide and book-keep under the lock; hand updates to runners after
	// releasing it, since a runner may take its time with an update.
	c.allocsMu.Lock()
	if c.closing {
		c.allocsMu.Unlock()
		return
	}
	known := make(map[string]uint64, len(c.allocs))
	for id, e := range c.allocs {
		known[id] = e.modifyIndex
	}
	d := computeAllocDiff(known, incoming, keep)
	for _, id := range d.removed {
		c.removeAllocLocked(id)
	}
	for _, a := range d.ignored {
		c.allocs[a.ID] = &allocEntry{modifyIndex: a.AllocModifyIndex}
		if u := neverRanUpdate(a); u != nil {
			c.updates.add(u)
		}
	}
	for _, a := range d.added {
		if p, ok := peers[a.ID]; ok {
			c.prevPeers[a.ID] = p
		}
		c.addAllocLocked(a)
	}
	holds := computeStopHolds(incoming, func(id string) bool { e := c.allocs[id]; return e != nil && e.runner != nil })
	var deliver []func()
	for _, a := range d.updated {
		if fn := c.updateAllocLocked(a, holds[a.ID]); fn != nil {
			deliver = append(deliver, fn)
		}
	}
	var release []string
	for id, e := range c.allocs {
		if e.held != nil && !holds[id] {
			release = append(release, id)
		}
	}
	sort.Strings(release)
	for _, id := range release {
		c.logger.Debug("no replacement waits any more; delivering the held stop", "alloc_id", id)
		e := c.allocs[id]
		deliver = append(deliver, c.deliverLocked(e, e.held))
	}
	c.allocsMu.Unlock()
	for _, fn := range deliver {
		fn()
	}
	c.kickImages()
}

// computeStopHolds returns the allocations whose desired stop the client
// holds back ("prefetch before kill"): those named as PreviousAllocation by
// a replacement that the server still wants running and that has a runner
// on this node (hasRunner). The replacement's runner stops its previous
// allocation itself once it is prepared; if its prepare fails, the previous
// allocation keeps running until the server stops or collects the
// replacement.
func computeStopHolds(incoming []*structs.Allocation, hasRunner func(allocID string) bool) map[string]bool {
	holds := map[string]bool{}
	for _, r := range incoming {
		if r.PreviousAllocation != "" && !r.ServerTerminal() && hasRunner(r.ID) {
			holds[r.PreviousAllocation] = true
		}
	}
	return holds
}

// removeAllocLocked forgets a collected allocation: its runner destroys it
// (stops tasks, deletes its state and directory) in the background.
func (c *Client) removeAllocLocked(id string) {
	e := c.allocs[id]
	delete(c.allocs, id)
	c.services.forget(id)
	c.logger.Debug("allocation collected by the server", "alloc_id", id)
	if e.runner == nil {
		c.forgetAlloc(id)
		return
	}
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		e.runner.Destroy()
		c.kickImages()
	}()
}

// forgetAlloc deletes the state and directory of an allocation without a
// runner.
func (c *Client) forgetAlloc(id string) {
	if err := c.db.DeleteAlloc(id); err != nil {
		c.logger.Warn("failed to delete allocation state", "alloc_id", id, "error", err)
	}
	dir, err := allocdir.New(c.cfg.AllocDir(), id)
	if err == nil {
		err = dir.Destroy() // the tree and its tasks' private dirs
	}
	if err != nil {
		c.logger.Warn("failed to delete allocation directory", "alloc_id", id, "error", err)
	}
}

// updateAllocLocked records a newer version of a known allocation and
// returns the call that hands it to its runner (nil when it has none). A
// desired stop is held back instead when hold is set (see
// computeStopHolds).
func (c *Client) updateAllocLocked(a *structs.Allocation, hold bool) func() {
	e := c.allocs[a.ID]
	e.modifyIndex = a.AllocModifyIndex
	if e.runner == nil {
		return nil
	}
	if hold && a.ServerTerminal() {
		c.logger.Debug("holding a desired stop while the replacement prepares", "alloc_id", a.ID)
		e.held = a
		return nil
	}
	return c.deliverLocked(e, a)
}

// deliverLocked persists a, the newest server version the runner of e is
// to run, clears any held stop, and returns the call that hands a to the
// runner.
func (c *Client) deliverLocked(e *allocEntry, a *structs.Allocation) func() {
	e.held = nil
	if err := c.db.PutAlloc(a); err != nil {
		c.logger.Error("failed to persist allocation", "alloc_id", a.ID, "error", err)
	}
	ar := e.runner
	return func() { ar.Update(a) }
}

// addAllocLocked persists a new allocation and starts its runner.
func (c *Client) addAllocLocked(a *structs.Allocation) {
	if err := c.db.PutAlloc(a); err != nil {
		c.logger.Error("failed to persist allocation", "alloc_id", a.ID, "error", err)
	}
	if ar := c.newRunnerLocked(a); ar != nil {
		go ar.Run()
	}
}

// newRunnerLocked records a and builds its runner, linked to the runner of
// the allocation it replaces on this node if there is one. A runner that
// cannot be built is reported failed to the server; nil is returned then.
func (c *Client) newRunnerLocked(a *structs.Allocation) *allocrunner.AllocRunner {
	entry := &allocEntry{modifyIndex: a.AllocModifyIndex}
	c.allocs[a.ID] = entry
	cfg := &allocrunner.Config{
		Alloc:           a,
		Node:            c.Node(),
		AllocRootDir:    c.cfg.AllocDir(),
		Drivers:         c.drivers,
		StateDB:         c.db,
		Logger:          c.logger.Named("alloc_runner"),
		StateUpdater:    c.runnerUpdated,
		Now:             c.cfg.Now,
		HostEnv:         c.cfg.HostEnv,
		TaskAPI:         c.listenTaskAPI,
		RenewIdentities: c.renewIdentities,
		Templates:       c.templates,
		Artifact:        c.cfg.Artifact,
		ServicesUpdater: func(a *structs.Allocation) {
			c.services.set(a.ID, serviceRegistrations(a, c.Node()), definesServices(a))
		},
	}
	if c.network != nil {
		cfg.Network = c.network
	}
	if prev := c.allocs[a.PreviousAllocation]; a.PreviousAllocation != "" && prev != nil && prev.runner != nil {
		cfg.PrevAlloc = allocrunner.LocalPrevAlloc(prev.runner)
	} else if peer, ok := c.prevPeers[a.ID]; ok {
		cfg.PrevData = c.newPeerFetcher(a.PreviousAllocation, peer)
	}
	delete(c.prevPeers, a.ID)
	ar, err := allocrunner.NewAllocRunner(cfg)
	if err != nil {
		c.logger.Error("failed to create alloc runner", "alloc_id", a.ID, "error", err)
		c.updates.add(failedUpdate(a, fmt.Sprintf("failed to create alloc runner: %v", err)))
		return nil
	}
	entry.runner = ar
	return ar
}

// neverRanDescription is the client description of an allocation the
// server stopped before this client ever ran it.
const neverRanDescription = "allocation was stopped before the client ran it"

// neverRanUpdate is the client update that settles an allocation the client
// first sees already stopped by the server and never runs: without it the
// server would count it as starting forever. It is nil when the allocation
// needs no report (the server already has a final client status for it).
func neverRanUpdate(a *structs.Allocation) *structs.Allocation {
	if !a.ServerTerminal() || a.ClientStatus != structs.AllocClientStatusPending {
		return nil
	}
	return &structs.Allocation{ID: a.ID, ClientStatus: structs.AllocClientStatusComplete, ClientDescription: neverRanDescription}
}

// failedUpdate is the client update of an allocation that could not run.
func failedUpdate(a *structs.Allocation, desc string) *structs.Allocation {
	return &structs.Allocation{ID: a.ID, ClientStatus: structs.AllocClientStatusFailed, ClientDescription: desc}
}

// tracks reports whether the client still knows allocID (the server has
// not collected it).
func (c *Client) tracks(allocID string) bool {
	c.allocsMu.Lock()
	defer c.allocsMu.Unlock()
	_, ok := c.allocs[allocID]
	return ok
}

// runner returns the runner of allocID, or nil.
func (c *Client) runner(allocID string) *allocrunner.AllocRunner {
	c.allocsMu.Lock()
	defer c.allocsMu.Unlock()
	if e := c.allocs[allocID]; e != nil {
		return e.runner
	}
	return nil
}
