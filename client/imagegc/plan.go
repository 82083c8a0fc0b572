package imagegc

import (
	"maps"
	"sort"
	"strings"
	"time"
)

// LeaseReasons says why an image is leased: a bit set of Lease* flags. An
// image is leased when it has an entry in Input.Leases, whatever its bits.
type LeaseReasons uint8

const (
	// LeaseRunning: used by a non-terminal allocation (its tasks run, or
	// may start again).
	LeaseRunning LeaseReasons = 1 << iota
	// LeasePrepared: pulled for an allocation whose tasks have not started
	// yet, such as a replacement waiting for its previous allocation to
	// stop (prefetch before kill).
	LeasePrepared
	// LeasePrevious: used by a previous version of an allocation whose
	// deployment is unfinished, kept so that a revert never pulls again.
	LeasePrevious
	// LeaseAhead: pulled ahead of the node's wave for a deployment that is
	// still running (nomad/prefetch); held while the server lists the
	// node's prefetch directive, that is until the deployment ends.
	LeaseAhead
)

// String renders the set as "running+prepared+previous+ahead" (in that order),
// or "none".
func (r LeaseReasons) String() string {
	var parts []string
	for _, f := range []struct {
		bit  LeaseReasons
		name string
	}{{LeaseRunning, "running"}, {LeasePrepared, "prepared"}, {LeasePrevious, "previous"}, {LeaseAhead, "ahead"}} {
		if r&f.bit != 0 {
			parts = append(parts, f.name)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "+")
}

// KnownImage is an image this client leased at some point: only known
// images are ever removed (other clients may share the Docker engine).
type KnownImage struct {
	// FirstUnleasedAt is when the image lost its last lease; zero while it
	// is leased.
	FirstUnleasedAt time.Time
	// RetryAt is set after a failed removal (such as "image in use"): the
	// image is not tried again before it. Zero when no removal failed.
	RetryAt time.Time
}

// Input is what Plan decides from.
type Input struct {
	// Leases are the images leased now, by image ID.
	Leases map[string]LeaseReasons
	// Known are the images this client leased, by image ID: the only
	// candidates for removal.
	Known map[string]KnownImage
	// Delay is how long an image stays unleased before it goes (the Docker
	// driver's image_delay); negative is 0.
	Delay time.Duration
}

// Plan returns the known images to remove at now, sorted, and wakeAt, the
// earliest later time at which another known image becomes removable (zero
// when none will without a lease change).
//
// A known image is removable when it is not leased, it has been unleased
// for at least Delay (now ≥ FirstUnleasedAt + Delay) and its RetryAt, if
// any, has passed. An unleased image whose FirstUnleasedAt is zero (not
// reconciled yet, see Reconcile) counts as unleased since now. Leased and
// unknown images are never removed. Plan is pure.
func Plan(in Input, now time.Time) (remove []string, wakeAt time.Time) {
	delay := max(in.Delay, 0)
	for id, k := range in.Known {
		if _, leased := in.Leases[id]; leased {
			continue
		}
		since := k.FirstUnleasedAt
		if since.IsZero() {
			since = now
		}
		due := since.Add(delay)
		if k.RetryAt.After(due) {
			due = k.RetryAt
		}
		if !now.Before(due) {
			remove = append(remove, id)
			continue
		}
		if wakeAt.IsZero() || due.Before(wakeAt) {
			wakeAt = due
		}
	}
	sort.Strings(remove)
	return remove, wakeAt
}

// Reconcile returns known updated for leases at now, and whether it
// changed: every leased image becomes known with a zero FirstUnleasedAt and
// RetryAt (its unleased clock restarts); a known image that lost its leases
// gets FirstUnleasedAt = now. known is not modified. Reconcile is pure.
func Reconcile(known map[string]KnownImage, leases map[string]LeaseReasons, now time.Time) (map[string]KnownImage, bool) {
	out := maps.Clone(known)
	if out == nil {
		out = map[string]KnownImage{}
	}
	changed := false
	for id := range leases {
		if k, ok := out[id]; !ok || !k.FirstUnleasedAt.IsZero() || !k.RetryAt.IsZero() {
			out[id] = KnownImage{}
			changed = true
		}
	}
	for id, k := range out {
		if _, leased := leases[id]; !leased && k.FirstUnleasedAt.IsZero() {
			k.FirstUnleasedAt = now
			out[id] = k
			changed = true
		}
	}
	return out, changed
}
