package scheduler

import (
	"time"

	"github.com/drover-project/drover/nomad/structs"
)

// What both reconcilers decide for the allocations of a disconnected node
// (a group's disconnect block, or the older max_client_disconnect):
//
//   - on a disconnected node, within the group's lost_after (counted from
//     the allocation's DisconnectedAt, or from now when it is not marked
//     yet), a live allocation is unknown: it keeps running where it is;
//     the generic reconciler replaces it elsewhere when disconnect.replace
//     (the default), the system reconciler never does;
//   - past the deadline, or on a down node, it is lost; with
//     disconnect.replace = false (or prevent_reschedule_on_lost) it stays
//     unknown instead, on a disconnected or down node, until the node
//     reconnects; on a missing node it is lost;
//   - when the node reconnects and the client has reported the allocation
//     again, the group's disconnect.reconcile keeps either the allocation
//     or its live replacement and stops the other (pickReconnected).

// disconnectState is what a live allocation's node means for it.
type disconnectState int

const (
	connected    disconnectState = iota // node ready (or not ready, but heartbeating)
	unknownState                        // disconnected, within lost_after
	lostState                           // down, missing, or past lost_after
	// awaitingReport: the node reconnected but its client has not reported
	// the allocation since it was marked unknown (still within lost_after).
	awaitingReport
)

// classifyDisconnect says what node (nil when missing) means for a, a live
// allocation of group tg (nil when the group is gone), at now.
func classifyDisconnect(a *structs.Allocation, node *structs.Node, tg *structs.TaskGroup, now time.Time) disconnectState {
	if node == nil {
		return lostState // the node is gone for good
	}
	down := node.Status == structs.NodeStatusDown
	cutOff := down || node.Status == structs.NodeStatusDisconnected
	switch {
	case !cutOff && a.ClientStatus != structs.AllocClientStatusUnknown:
		return connected
	case tg != nil && !tg.ReplaceDisconnected() && cutOff:
		return unknownState // until the node reconnects, however long
	case tg != nil && !tg.ReplaceDisconnected():
		return awaitingReport
	case down || tg.LostAfter() == 0 || !now.Before(unknownDeadline(a, tg, now)):
		return lostState
	case cutOff:
		return unknownState
	}
	return awaitingReport
}

// lostDeadline is when a, unknown or about to be marked so at now, is lost
// per tg, and whether it ever is (not with replace = false).
func lostDeadline(a *structs.Allocation, tg *structs.TaskGroup, now time.Time) (time.Time, bool) {
	if !tg.ReplaceDisconnected() || tg.LostAfter() == 0 {
		return time.Time{}, false
	}
	return unknownDeadline(a, tg, now), true
}

// unknownDeadline is when a, unknown or about to be marked so at now, is
// lost per tg's lost_after.
func unknownDeadline(a *structs.Allocation, tg *structs.TaskGroup, now time.Time) time.Time {
	if d := a.UnknownDeadline(tg); !d.IsZero() {
		return d
	}
	return now.Add(tg.LostAfter())
}

// pickReconnected returns which of original, an allocation whose node
// reconnected and whose client reported it again, and replacement, its live
// replacement, to keep per strategy (a structs.Reconcile* value):
// keep_original and keep_replacement say it; longest_running keeps the one
// whose running tasks have been running without a restart the longest (one
// not running loses; the original on a tie); best_score, the default,
// keeps the one placed on the node with the better score (the original on
// a tie or when a score is missing), unless only the replacement is
// running.
func pickReconnected(strategy string, original, replacement *structs.Allocation) *structs.Allocation {
	switch strategy {
	case structs.ReconcileKeepOriginal:
		return original
	case structs.ReconcileKeepReplacement:
		return replacement
	case structs.ReconcileLongestRunning:
		os, oRunning := runningSince(original)
		rs, rRunning := runningSince(replacement)
		if rRunning && (!oRunning || rs.Before(os)) {
			return replacement
		}
		return original
	}
	_, oRunning := runningSince(original)
	_, rRunning := runningSince(replacement)
	if rRunning && !oRunning {
		return replacement
	}
	if !oRunning && !rRunning || oRunning && rRunning {
		o, oOK := original.Metrics.PlacementScore()
		r, rOK := replacement.Metrics.PlacementScore()
		if oOK && rOK && r > o {
			return replacement
		}
	}
	return original
}

// taskStateRunning is the State of a running task (the client's word).
const taskStateRunning = "running"

// runningSince is when the last of a's running tasks (re)started, and
// whether a is running (client status running, some task running).
func runningSince(a *structs.Allocation) (time.Time, bool) {
	if a.ClientStatus != structs.AllocClientStatusRunning {
		return time.Time{}, false
	}
	var since time.Time
	running := false
	for _, ts := range a.TaskStates {
		if ts == nil || ts.State != taskStateRunning {
			continue
		}
		running = true
		start := ts.StartedAt
		if ts.LastRestart.After(start) {
			start = ts.LastRestart
		}
		if start.After(since) {
			since = start
		}
	}
	return since, running
}

// reconnected pairs an allocation whose node reconnected with its live
// replacement.
type reconnected struct {
	original, replacement *structs.Allocation
}

// findReconnected returns, among allocs (one group's), the allocations that
// were marked unknown or lost for a disconnection, now run on a connected
// node and were reported again by their client, with a live replacement
// (liveSuccessor).
func findReconnected(allocs []*structs.Allocation, byID map[string]*structs.Allocation, nodes map[string]*structs.Node) []reconnected {
	var out []reconnected
	for _, a := range allocs {
		if a.Terminal() || a.DisconnectedAt == 0 || a.ClientStatus == structs.AllocClientStatusUnknown {
			continue
		}
		n := nodes[a.NodeID]
		if n == nil || n.Status == structs.NodeStatusDown || n.Status == structs.NodeStatusDisconnected {
			continue
		}
		if rep := liveSuccessor(a, byID); rep != nil {
			out = append(out, reconnected{original: a, replacement: rep})
		}
	}
	return out
}

// liveSuccessor follows a's NextAllocation chain through terminal
// allocations (a replacement that was itself replaced, by an update or a
// reschedule) to the first live one, or nil when the chain ends without
// one; byID indexes the group's allocations.
func liveSuccessor(a *structs.Allocation, byID map[string]*structs.Allocation) *structs.Allocation {
	seen := map[string]bool{a.ID: true}
	for id := a.NextAllocation; id != "" && !seen[id]; {
		next := byID[id]
		if next == nil {
			return nil
		}
		if !next.Terminal() {
			return next
		}
		seen[id] = true
		id = next.NextAllocation
	}
	return nil
}
