package structs

import "time"

// Reconcile strategies of a disconnect block: which of an allocation that
// reconnects and its replacement is kept.
const (
	// ReconcileKeepOriginal keeps the allocation that reconnected.
	ReconcileKeepOriginal = "keep_original"
	// ReconcileKeepReplacement keeps the replacement.
	ReconcileKeepReplacement = "keep_replacement"
	// ReconcileBestScore keeps the one placed with the better score (the
	// original on a tie), the default.
	ReconcileBestScore = "best_score"
	// ReconcileLongestRunning keeps the one whose tasks have been running
	// without a restart the longest.
	ReconcileLongestRunning = "longest_running"
)

// DisconnectStrategy is a group's disconnect block: what happens to its
// allocations when their node misses its heartbeats.
type DisconnectStrategy struct {
	// LostAfter: for this long after the node missed its heartbeat, the
	// allocations are "unknown" instead of lost, and are taken back when
	// the node reconnects in time. Nil or 0: lost at once.
	LostAfter *time.Duration
	// StopOnClientAfter: a client cut off from the servers this long stops
	// the allocations itself; the server replaces them only then. Nil: the
	// client keeps running them.
	StopOnClientAfter *time.Duration
	// Replace: an unknown allocation is replaced on another node while its
	// node is disconnected (nil: true, as Nomad's default). False: the
	// allocations of a disconnected or down node are never replaced and
	// stay unknown until it reconnects (or they are stopped), whatever
	// LostAfter says.
	Replace *bool
	// Reconcile is the Reconcile* strategy for a reconnecting allocation
	// that was replaced (nil or "": best_score).
	Reconcile *string
}

// LostAfter is how long the group's allocations stay "unknown" after their
// node missed its heartbeat (disconnect.lost_after, or the older
// max_client_disconnect); 0 when they are lost at once.
func (tg *TaskGroup) LostAfter() time.Duration {
	if tg == nil {
		return 0
	}
	if d := tg.Disconnect; d != nil && d.LostAfter != nil {
		return max(0, *d.LostAfter)
	}
	if tg.MaxClientDisconnect != nil {
		return max(0, *tg.MaxClientDisconnect)
	}
	return 0
}

// StopOnClientAfter is how long a client cut off from the servers keeps
// the group's allocations running before stopping them
// (disconnect.stop_on_client_after, or the older
// stop_after_client_disconnect); 0 when it keeps them running.
func (tg *TaskGroup) StopOnClientAfter() time.Duration {
	if tg == nil {
		return 0
	}
	if d := tg.Disconnect; d != nil && d.StopOnClientAfter != nil {
		return max(0, *d.StopOnClientAfter)
	}
	if tg.StopAfterClientDisconnect != nil {
		return max(0, *tg.StopAfterClientDisconnect)
	}
	return 0
}

// ReplaceDisconnected reports whether the allocations of the group on a
// node that stopped heartbeating are replaced (disconnect.replace, default
// true; the older prevent_reschedule_on_lost = true is false). When not,
// they stay unknown until their node reconnects.
func (tg *TaskGroup) ReplaceDisconnected() bool {
	if tg == nil {
		return true
	}
	if tg.Disconnect != nil && tg.Disconnect.Replace != nil {
		return *tg.Disconnect.Replace
	}
	return !tg.PreventRescheduleOnLost
}

// ReconcileStrategy is the group's Reconcile* strategy (default best_score).
func (tg *TaskGroup) ReconcileStrategy() string {
	if tg == nil || tg.Disconnect == nil || tg.Disconnect.Reconcile == nil || *tg.Disconnect.Reconcile == "" {
		return ReconcileBestScore
	}
	return *tg.Disconnect.Reconcile
}

// validateDisconnect adds the problems of the group's disconnect settings.
func (tg *TaskGroup) validateDisconnect(p *problems) {
	if tg.MaxClientDisconnect != nil && *tg.MaxClientDisconnect < 0 {
		p.addf("max_client_disconnect must not be negative, got %s", *tg.MaxClientDisconnect)
	}
	if tg.StopAfterClientDisconnect != nil && *tg.StopAfterClientDisconnect < 0 {
		p.addf("stop_after_client_disconnect must not be negative, got %s", *tg.StopAfterClientDisconnect)
	}
	d := tg.Disconnect
	if d == nil {
		return
	}
	if tg.MaxClientDisconnect != nil {
		p.addf("disconnect: max_client_disconnect cannot be used with a disconnect block; use disconnect.lost_after")
	}
	if tg.StopAfterClientDisconnect != nil {
		p.addf("disconnect: stop_after_client_disconnect cannot be used with a disconnect block; use disconnect.stop_on_client_after")
	}
	if tg.PreventRescheduleOnLost {
		p.addf("disconnect: prevent_reschedule_on_lost cannot be used with a disconnect block; use disconnect.replace")
	}
	if d.LostAfter != nil && *d.LostAfter < 0 {
		p.addf("disconnect: lost_after must not be negative, got %s", *d.LostAfter)
	}
	if d.StopOnClientAfter != nil && *d.StopOnClientAfter < 0 {
		p.addf("disconnect: stop_on_client_after must not be negative, got %s", *d.StopOnClientAfter)
	}
	if d.LostAfter != nil && *d.LostAfter > 0 && d.StopOnClientAfter != nil && *d.StopOnClientAfter > 0 {
		p.addf("disconnect: lost_after and stop_on_client_after cannot both be set")
	}
	if d.Reconcile != nil {
		switch *d.Reconcile {
		case "", ReconcileKeepOriginal, ReconcileKeepReplacement, ReconcileBestScore, ReconcileLongestRunning:
		default:
			p.addf("disconnect: reconcile must be one of %s, %s, %s or %s, got %q",
				ReconcileBestScore, ReconcileKeepOriginal, ReconcileKeepReplacement, ReconcileLongestRunning, *d.Reconcile)
		}
	}
}

// UnknownDeadline is when a, marked unknown at DisconnectedAt, becomes lost
// per its group tg; zero when a is not unknown, tg has no lost_after or
// does not replace disconnected allocations (they stay unknown).
func (a *Allocation) UnknownDeadline(tg *TaskGroup) time.Time {
	if a.ClientStatus != AllocClientStatusUnknown || a.DisconnectedAt == 0 || tg.LostAfter() == 0 || !tg.ReplaceDisconnected() {
		return time.Time{}
	}
	return time.Unix(0, a.DisconnectedAt).Add(tg.LostAfter())
}
