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
	// Digest is the newest digest the tag answered, and DigestSince when
	// the tag was first seen at it without a change in between (the soak
	// runs from there).
	Digest      string
	DigestSince int64
	// Checks and Errors count checks and failed checks.
	Checks uint64
	Errors uint64

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
	// Bad lists digests whose deployment failed for this job and tag; the
	// watcher never rolls them out again (oldest first, bounded).
	Bad []string
	// LastRoll is the watcher's newest job version for this task, or nil.
	LastRoll *ImageRoll

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
	c.Bad = append([]string(nil), w.Bad...)
	if w.LastRoll != nil {
		r := *w.LastRoll
		c.LastRoll = &r
	}
	return &c
}

// ImageWatchUpdateRequest records what the image watcher checked and
// decided. Upserts replace whole records; deletes name records that no
// longer have a task to follow.
type ImageWatchUpdateRequest struct {
	Checks        []*ImageCheck
	Watches       []*ImageWatch
	DeleteChecks  []string
	DeleteWatches []ImageWatchID
}
