package structs

import "time"

// Values of ImageTaskStatus.Mode.
const (
	AutoUpdateRoll   = "roll"
	AutoUpdateNotify = "notify"
)

// ImageTaskStatus is the image state of one Docker task of a job, as the
// image watcher's records describe it (imagewatcher.Status) and GET
// /v1/job/:id/image-updates answers it (wire.ImageUpdates).
type ImageTaskStatus struct {
	Group, Task string
	// Image is the task's image as the current version stores it.
	Image string
	// Reference is the "name:tag" followed; Pinned the digest pinned now.
	Reference string
	Pinned    string
	// Unpinned, when the version stores the image by tag only, says why
	// (pin_digest = false, image_pinning = "off", or the registry could not
	// be reached at registration); nodes pull the tag then. Assumed is the
	// digest the watcher took to be the one the nodes pulled (auto_update
	// only: the first good check after the unpinned version).
	Unpinned string
	Assumed  string
	// AutoUpdate and its settings (durations in nanoseconds).
	AutoUpdate bool
	Interval   time.Duration
	Soak       time.Duration
	// LastCheck is when the tag was last checked (zero: never), TagDigest
	// what it answered last, LastError why the last check failed ("" when
	// it succeeded).
	LastCheck time.Time
	TagDigest string
	LastError string
	// NextCheck is when the next check is due (zero: at once).
	NextCheck time.Time
	// Pending is a new digest waiting for its soak, PendingSince since
	// when the tag has pointed at it and SoakLeft how long it still waits.
	Pending      string
	PendingSince time.Time
	SoakLeft     time.Duration
	// Mode is AutoUpdateRoll (auto_update = true), AutoUpdateNotify
	// (auto_update = "notify") or "" (not followed). Approval, Window (the
	// windows as written, "" for any time) and MinAge are the other gates.
	Mode     string
	Approval bool
	Window   string
	MinAge   time.Duration
	// ImageCreated is the created time of TagDigest's image config (zero:
	// not read; it is read only with auto_update_min_age).
	ImageCreated time.Time
	// Waiting is the gate that holds Pending now ("soak", "min_age",
	// "notify", "approval", "window"; "" when it rolls at the watcher's
	// next pass), WaitingUntil when that gate opens (zero: no time opens
	// it) and WaitingFor the same in words, e.g. "waiting for window
	// 2026-12-05T01:00:00Z (Sat 02:00-04:00 Europe/Berlin)".
	Waiting      string
	WaitingUntil time.Time
	WaitingFor   string
	// With auto_update_approval: Prepared is the image the version waiting
	// for approval pins (Reference@Pending), PendingApproval whether that
	// digest still needs an approval, Approved the digest last approved.
	Prepared        string
	PendingApproval bool
	Approved        string
	// Bad lists the digests of the reference that failed a deployment (of
	// this job or another on the same reference) and are rolled to no job
	// until an operator clears them.
	Bad []string
	// LastRoll is the watcher's newest version for this task, or nil.
	LastRoll *ImageRoll
	// Checks and Errors count the checks of the reference (shared with
	// every task that follows it).
	Checks, Errors uint64
}
