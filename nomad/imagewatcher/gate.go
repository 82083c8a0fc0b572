package imagewatcher

import (
	"time"

	"github.com/drover-project/drover/nomad/imageresolve"
	"github.com/drover-project/drover/nomad/structs"
)

// Reasons a task's new digest does not roll yet (Gate; the status's
// Waiting and the pending metric's reason label).
const (
	// WaitSoak: the digest has not held for auto_update_soak.
	WaitSoak = "soak"
	// WaitMinAge: the image is younger than auto_update_min_age, or its
	// created time is not read yet.
	WaitMinAge = "min_age"
	// WaitNotify: auto_update = "notify" reports the digest and never
	// rolls it.
	WaitNotify = "notify"
	// WaitApproval: auto_update_approval holds it until an operator
	// approves this digest.
	WaitApproval = "approval"
	// WaitWindow: no auto_update_window is open.
	WaitWindow = "window"
)

// Policy is what an operator configured about when a task's new digests
// roll: the gates after the tag has moved.
type Policy struct {
	Soak, MinAge     time.Duration
	Notify, Approval bool
	Window           imageresolve.Windows
}

// PolicyOf returns the policy of a task's settings.
func PolicyOf(s imageresolve.Settings) Policy {
	return Policy{Soak: s.Soak, MinAge: s.MinAge, Notify: s.Notify, Approval: s.Approval, Window: s.Window}
}

// Gate decides whether c.Digest, a new digest of the task's tag (not its
// pin, not bad) that the watcher's own check has seen (c.DigestSince set),
// may roll at now. It returns "" when it may, else the first gate that
// holds it and when that gate opens (zero when no time opens it: notify,
// an approval, an unknown image age). The gates, in order: the soak (from
// DigestSince), the min age (from the image's created time), notify (never
// opens), the approval (approved must be c.Digest: an approval is of one
// digest, a later move of the tag needs another), the window (its next
// opening).
func Gate(p Policy, c *structs.ImageCheck, approved string, now time.Time) (string, time.Time) {
	if ready := time.Unix(0, c.DigestSince).Add(p.Soak); ready.After(now) {
		return WaitSoak, ready
	}
	if p.MinAge > 0 {
		if c.Created == 0 {
			return WaitMinAge, time.Time{}
		}
		if ready := time.Unix(0, c.Created).Add(p.MinAge); ready.After(now) {
			return WaitMinAge, ready
		}
	}
	if p.Notify {
		return WaitNotify, time.Time{}
	}
	if p.Approval && approved != c.Digest {
		return WaitApproval, time.Time{}
	}
	if next := p.Window.Next(now); next.After(now) {
		return WaitWindow, next
	}
	return "", time.Time{}
}
