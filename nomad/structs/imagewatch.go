package structs

// ImageCheck is the image watcher's record of one distinct image reference
// and credential: what the registry last answered for the tag. Every task
// that follows the same reference with the same credential shares it, so
// the tag is checked once per interval whatever the number of users.
type ImageCheck struct {
	// Key is Reference + "|" + CredKey.
	Key string
	// Reference is the "name:tag" checked, Registry its host.
	Reference string
	Registry  string
	// CredKey identifies the credential ("" anonymous), never revealing it.
	CredKey string
	// LastCheck is when the tag was last checked (unix nanoseconds), and
	// LastError what went wrong ("" when the check answered a digest).
	LastCheck int64
	LastError string
	// Digest is the newest digest the tag answered (to the watcher or to
	// a registration or plan), and DigestSince when the image watcher's
	// own check first saw the tag at it without a change in between: the
	// soak runs from there. DigestSince is 0 while only a registration or
	// plan has seen Digest (nothing rolls from it then).
	Digest      string
	DigestSince int64
	// Checks and Errors count checks and failed checks.
	Checks uint64
	Errors uint64
	// Created is the "created" time of Digest's image config (unix
	// nanoseconds; 0: not read yet). The watcher reads it only for tags
	// some task follows with auto_update_min_age.
	Created int64

	CreateIndex uint64
	ModifyIndex uint64
}

// ImageWatch is the image watcher's record of one auto-updated Docker task
// of a job.
type ImageWatch struct {
	Namespace string
	JobID     string
	Group     string
	Task      string
	// Key names the ImageCheck the task follows.
	Key string
	// Assumed is, for a job version that stores the task's image unpinned
	// (its registry could not be reached at registration), the digest the
	// watcher's first good check after that version found: the watcher
	// takes it as what the nodes pulled and does not roll it; a later move
	// of the tag rolls (pinned) as usual. AssumedVersion is that version.
	Assumed        string
	AssumedVersion uint64
	// LastRoll is the watcher's newest job version for this task, or nil.
	LastRoll *ImageRoll
	// Held is a new digest of the tag the watcher holds for an operator
	// (HeldReason "notify": auto_update = "notify", never rolled;
	// "approval": waits for an approval), recorded once per digest; the
	// change is the ImageUpdate event of the event stream.
	Held       string
	HeldReason string
	// Approved is the digest an operator approved for this task
	// (auto_update_approval). Only an ImageWatchUpdateRequest's Approvals
	// set it: an upsert of the whole record keeps the stored value, so a
	// watcher write racing an approval cannot undo it.
	Approved string

	CreateIndex uint64
	ModifyIndex uint64
}

// ImageRoll is a job version the image watcher registered.
type ImageRoll struct {
	From, To   string // digests
	JobVersion uint64
	Time       int64 // unix nanoseconds
}

// ImageWatchID identifies an ImageWatch.
type ImageWatchID struct {
	Namespace, JobID, Group, Task string
}

// ID returns w's identity.
func (w *ImageWatch) ID() ImageWatchID {
	return ImageWatchID{Namespace: w.Namespace, JobID: w.JobID, Group: w.Group, Task: w.Task}
}

// Copy returns a deep copy of w.
func (w *ImageWatch) Copy() *ImageWatch {
	if w == nil {
		return nil
	}
	c := *w
	if w.LastRoll != nil {
		r := *w.LastRoll
		c.LastRoll = &r
	}
	return &c
}

// ImageObservation is one answer of a registry about a tag: from the
// image watcher's check (ByWatcher) or from the resolution a registration
// or plan made. The state store folds it into the ImageCheck of Key with
// Observe.
type ImageObservation struct {
	Key, Reference, Registry, CredKey string
	// Time is when the answer came (unix nanoseconds).
	Time int64
	// Digest is the answer; Error, when not "", is why there is none.
	Digest string
	Error  string
	// ByWatcher marks the image watcher's own checks: only they start a
	// soak.
	ByWatcher bool
	// Created is the "created" time of Digest's image config (unix
	// nanoseconds), 0 when it was not read.
	Created int64
}

// Observe returns the ImageCheck after observation o, given the stored
// record prev (nil: none; never modified). An observation older than
// prev's last check changes nothing (prev is returned): records only move
// forward in time whatever order the answers are committed in. A watcher
// check that finds a new digest, or the digest a registration saw first,
// starts the soak (DigestSince); a registration's answer of a new digest
// records it with no soak started.
func Observe(prev *ImageCheck, o *ImageObservation) *ImageCheck {
	if prev != nil && o.Time < prev.LastCheck {
		return prev
	}
	c := &ImageCheck{Key: o.Key, Reference: o.Reference, Registry: o.Registry, CredKey: o.CredKey}
	if prev != nil {
		*c = *prev
	}
	c.LastCheck = o.Time
	c.Checks++
	if o.Error != "" {
		c.Errors++
		c.LastError = o.Error
		return c
	}
	c.LastError = ""
	if o.Digest != c.Digest {
		c.Created = 0 // the old digest's
	}
	switch {
	case o.Digest != c.Digest && o.ByWatcher:
		c.Digest, c.DigestSince = o.Digest, o.Time
	case o.Digest != c.Digest:
		c.Digest, c.DigestSince = o.Digest, 0
	case o.ByWatcher && c.DigestSince == 0:
		c.DigestSince = o.Time
	}
	if o.Created != 0 {
		c.Created = o.Created
	}
	return c
}

// ImageBadDigest records that a digest of an image reference ("name:tag")
// failed a deployment: the image watcher rolls it to no job on that
// reference until an operator clears it. A failure after the clear marks
// it bad again.
type ImageBadDigest struct {
	Reference string
	Digest    string
	// Namespace, JobID, JobVersion and DeploymentID name the newest failed
	// deployment that ran the digest; FailedIndex is that deployment's
	// ModifyIndex and FailedTime when the watcher recorded it.
	Namespace    string
	JobID        string
	JobVersion   uint64
	DeploymentID string
	FailedIndex  uint64
	FailedTime   int64
	// ClearedIndex is the raft index of the operator's last clear (0:
	// never cleared).
	ClearedIndex uint64

	CreateIndex uint64
	ModifyIndex uint64
}

// IsBad reports whether the digest is bad now: it failed after the last
// clear.
func (b *ImageBadDigest) IsBad() bool { return b.FailedIndex > b.ClearedIndex }

// ImageBadDigestID identifies an ImageBadDigest.
type ImageBadDigestID struct {
	Reference, Digest string
}

// ImageWatchUpdateRequest records what the image watcher checked and
// decided, and what registrations and operators told it. Upserts of
// Checks and Watches replace whole records; Observations are folded into
// the checks (Observe); BadDigests are merged (the newest failure wins, a
// clear is kept); ClearBad clears bad digests at the entry's index;
// deletes name records that no longer have a task to follow.
type ImageWatchUpdateRequest struct {
	Checks        []*ImageCheck
	Observations  []*ImageObservation
	Watches       []*ImageWatch
	BadDigests    []*ImageBadDigest
	ClearBad      []ImageBadDigestID
	DeleteChecks  []string
	DeleteWatches []ImageWatchID
	// Approvals set the Approved digest of existing watches (an
	// operator's approval); approvals of missing watches are ignored.
	Approvals []ImageApproval
}

// ImageApproval is an operator's approval of Digest for one task.
type ImageApproval struct {
	ID     ImageWatchID
	Digest string
}
