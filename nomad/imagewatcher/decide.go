package imagewatcher

import (
	"hash/fnv"
	"sort"
	"strconv"
	"time"

	"github.com/drover-project/drover/nomad/imageresolve"
	"github.com/drover-project/drover/nomad/structs"
)

// Defaults of the pacing rules.
const (
	// DefaultRegistryBudget is the most checks sent to one registry per
	// minute when the server configures none.
	DefaultRegistryBudget = 60
	// budgetWindow is the window the budget counts over.
	budgetWindow = time.Minute
	// jitterFraction bounds the jitter added to an interval: a check is due
	// between interval and interval*(1+jitterFraction) after the last one.
	jitterFraction = 0.1
	// defaultBackoff is how long a registry that answered 429 without a
	// Retry-After, or a job whose registration failed, is left alone.
	defaultBackoff = time.Minute
	// idleWake is the longest the driver sleeps without a reason.
	idleWake = time.Minute
	// maxBad bounds the bad digests remembered per task.
	maxBad = 16
)

// Target is one auto-updated Docker task of a job's current version, as
// the driver reads it from state.
type Target struct {
	ID             structs.ImageWatchID
	JobModifyIndex uint64
	// JobVersion is the current version, PinnedAt when it was submitted
	// (unix nanoseconds): the time its pin was resolved.
	JobVersion uint64
	PinnedAt   int64
	Ref        imageresolve.Ref
	Auth       *imageresolve.Auth
	// Pinned is the digest the current version pins ("" when unpinned).
	Pinned   string
	Interval time.Duration
	// Policy holds the gates a new digest passes before it rolls (soak,
	// min age, notify, approval, window; see Gate).
	Policy Policy
	// Failed lists the failed deployments of this task that changed its
	// digest (see FailedDigests).
	Failed []Failure
}

// Failure is a failed deployment of a job version that changed a task's
// digest to Digest.
type Failure struct {
	Digest       string
	JobVersion   uint64
	DeploymentID string
	// Index is the deployment's ModifyIndex (when it failed).
	Index uint64
}

// Key is the check key of t: its reference and credential.
func (t Target) Key() string { return CheckKey(t.Ref.TagRef(), t.Auth.Key()) }

// CheckKey joins a reference and a credential key.
func CheckKey(ref, cred string) string { return ref + "|" + cred }

// Input is everything Decide reads.
type Input struct {
	Now     time.Time
	Targets []Target
	Checks  map[string]*structs.ImageCheck
	Watches map[structs.ImageWatchID]*structs.ImageWatch
	// Bad holds the bad-digest records (cleared ones too) by reference,
	// then digest.
	Bad map[string]map[string]*structs.ImageBadDigest
	// Keep lists jobs that still exist but have no target now (stopped):
	// their watches are kept.
	Keep map[structs.NamespacedID]bool
	// Forced lists check keys to check now (a "check now" request).
	Forced map[string]bool
}

// Check asks the driver to resolve a reference once.
type Check struct {
	Key      string
	Ref      imageresolve.Ref
	Auth     *imageresolve.Auth
	Registry string
	// NeedCreated asks for the image's created time as well (a task
	// following the key has auto_update_min_age), read when the record
	// does not have it for the answered digest yet.
	NeedCreated bool
}

// Change is one task's new pin within a Roll.
type Change struct {
	Group, Task string
	Key         string // the task's check key
	Ref         imageresolve.Ref
	From, To    string
}

// Roll asks the driver to register a new version of a job with new pins,
// enforcing JobModifyIndex.
type Roll struct {
	Namespace, JobID string
	JobModifyIndex   uint64
	Changes          []Change
}

// Decision is what Decide returned.
type Decision struct {
	Checks []Check
	Rolls  []Roll
	// Update records new watches, bad digests and deletions; nil when
	// there is nothing to write.
	Update *structs.ImageWatchUpdateRequest
	// NextWake is when Decide wants to run again at the latest.
	NextWake time.Time
	// Waiting lists the tasks whose new digest a gate holds (see Gate),
	// for the pending metric.
	Waiting []Waiting
}

// Waiting is a task whose new digest Digest is held by gate Reason.
type Waiting struct {
	ID     structs.ImageWatchID
	Digest string
	Reason string
	Until  time.Time
}

// Memory is the driver's in-memory pacing state, kept for one leadership
// term: requests sent per registry in the budget window, registries held
// off by Retry-After, jobs whose registration just failed. The zero value
// is ready; Budget 0 means DefaultRegistryBudget.
type Memory struct {
	Budget       int
	sent         map[string][]time.Time
	blockedUntil map[string]time.Time
	rollHold     map[structs.NamespacedID]time.Time
}

// Sent records a request to registry at now (Decide calls it for every
// check it returns).
func (m *Memory) Sent(registry string, now time.Time) {
	if m.sent == nil {
		m.sent = map[string][]time.Time{}
	}
	m.sent[registry] = append(m.sent[registry], now)
}

// HoldRegistry leaves registry alone until now+d (Retry-After); d <= 0
// means defaultBackoff.
func (m *Memory) HoldRegistry(registry string, now time.Time, d time.Duration) {
	if d <= 0 {
		d = defaultBackoff
	}
	if m.blockedUntil == nil {
		m.blockedUntil = map[string]time.Time{}
	}
	if until := now.Add(d); until.After(m.blockedUntil[registry]) {
		m.blockedUntil[registry] = until
	}
}

// HoldJob stops rolls of job until now+defaultBackoff (its registration
// failed for a reason other than a concurrent change).
func (m *Memory) HoldJob(job structs.NamespacedID, now time.Time) {
	if m.rollHold == nil {
		m.rollHold = map[structs.NamespacedID]time.Time{}
	}
	m.rollHold[job] = now.Add(defaultBackoff)
}

// budgetFree returns whether registry may get one more request at now, and
// if not, when it may.
func (m *Memory) budgetFree(registry string, now time.Time) (bool, time.Time) {
	limit := m.Budget
	if limit <= 0 {
		limit = DefaultRegistryBudget
	}
	window := m.sent[registry]
	i := 0
	for i < len(window) && !window[i].After(now.Add(-budgetWindow)) {
		i++
	}
	window = window[i:]
	if m.sent != nil {
		m.sent[registry] = window
	}
	if len(window) < limit {
		return true, time.Time{}
	}
	return false, window[len(window)-limit].Add(budgetWindow)
}

// Jitter returns the delay added to interval after a check of key made at
// last: in [0, interval*jitterFraction), spread by a hash of both so that
// checks of different images drift apart.
func Jitter(key string, last int64, interval time.Duration) time.Duration {
	h := fnv.New64a()
	h.Write([]byte(key))
	h.Write([]byte(strconv.FormatInt(last, 10)))
	frac := float64(h.Sum64()>>11) / float64(1<<53)
	return time.Duration(frac * jitterFraction * float64(interval))
}

// NextDue is when the check after c is due for a reference followed at
// interval (c never nil).
func NextDue(c *structs.ImageCheck, interval time.Duration) time.Time {
	return time.Unix(0, c.LastCheck).Add(interval + Jitter(c.Key, c.LastCheck, interval))
}

// keyInfo aggregates the targets that share a check key.
type keyInfo struct {
	check    Check
	interval time.Duration
}

// Decide is the image watcher's pure decision: which references to check
// now (each key at most once per its shortest interval, within the
// registry's budget and Retry-After), which jobs to roll, and what to
// record (new watches, new bad digests, what an unpinned version's nodes
// are taken to run, digests held for an operator, orphans to delete). A
// task rolls when the last check succeeded after its version was pinned,
// the tag's digest differs from the pin (or, unpinned, from the digest
// assumed), is not bad for the image reference, and passes the task's
// gates (Gate: the soak since the watcher itself first saw it, the min
// age, notify, the approval, the window). mem is read and updated (the budget spent by the returned
// checks).
func Decide(in Input, mem *Memory) Decision {
	now := in.Now
	d := Decision{NextWake: now.Add(idleWake)}
	wake := func(t time.Time) {
		if t.Before(d.NextWake) {
			d.NextWake = t
		}
	}
	upd := &structs.ImageWatchUpdateRequest{}

	// Watches: create and re-key; bad digests: record new failures.
	keys := map[string]*keyInfo{}
	live := map[structs.ImageWatchID]bool{}
	watch := map[structs.ImageWatchID]*structs.ImageWatch{}
	marked := map[structs.ImageBadDigestID]*structs.ImageBadDigest{}
	for _, t := range in.Targets {
		live[t.ID] = true
		k := t.Key()
		if ki, ok := keys[k]; !ok {
			keys[k] = &keyInfo{check: Check{Key: k, Ref: t.Ref, Auth: t.Auth, Registry: t.Ref.Registry, NeedCreated: t.Policy.MinAge > 0}, interval: t.Interval}
		} else {
			ki.interval = min(ki.interval, t.Interval)
			ki.check.NeedCreated = ki.check.NeedCreated || t.Policy.MinAge > 0
		}
		w := in.Watches[t.ID]
		if w == nil {
			w = &structs.ImageWatch{Namespace: t.ID.Namespace, JobID: t.ID.JobID, Group: t.ID.Group, Task: t.ID.Task, Key: k}
			upd.Watches = append(upd.Watches, w)
		} else if w.Key != k {
			w = w.Copy()
			w.Key, w.Assumed, w.AssumedVersion = k, "", 0 // what the nodes pulled is per tag
			upd.Watches = append(upd.Watches, w)
		}
		watch[t.ID] = w
		markFailures(in.Bad, t, marked, now)
	}
	for _, b := range marked {
		upd.BadDigests = append(upd.BadDigests, b)
	}
	isBad := func(ref, digest string) bool {
		if b := marked[structs.ImageBadDigestID{Reference: ref, Digest: digest}]; b != nil {
			return true
		}
		b := in.Bad[ref][digest]
		return b != nil && b.IsBad()
	}
	keptKeys := map[string]bool{}
	for id, w := range in.Watches {
		if live[id] {
			continue
		}
		if in.Keep[structs.NamespacedID{Namespace: id.Namespace, ID: id.JobID}] {
			keptKeys[w.Key] = true
			continue
		}
		upd.DeleteWatches = append(upd.DeleteWatches, id)
	}
	for k := range in.Checks {
		if keys[k] == nil && !keptKeys[k] {
			upd.DeleteChecks = append(upd.DeleteChecks, k)
		}
	}

	// Checks: due keys, oldest due first, within budget and Retry-After.
	type due struct {
		at time.Time
		ki *keyInfo
	}
	var dues []due
	for k, ki := range keys {
		c := in.Checks[k]
		at := now
		if c != nil && !in.Forced[k] {
			at = NextDue(c, ki.interval)
		}
		if at.After(now) {
			wake(at)
			continue
		}
		dues = append(dues, due{at, ki})
	}
	sort.Slice(dues, func(i, j int) bool {
		if !dues[i].at.Equal(dues[j].at) {
			return dues[i].at.Before(dues[j].at)
		}
		return dues[i].ki.check.Key < dues[j].ki.check.Key
	})
	for _, du := range dues {
		reg := du.ki.check.Registry
		if until := mem.blockedUntil[reg]; until.After(now) {
			wake(until)
			continue
		}
		if ok, free := mem.budgetFree(reg, now); !ok {
			wake(free)
			continue
		}
		mem.Sent(reg, now)
		d.Checks = append(d.Checks, du.ki.check)
	}

	// Rolls: per job, every task whose tag moved to a good digest that has
	// held for the soak since the watcher itself saw it, checked after the
	// job's version was pinned.
	rolls := map[structs.NamespacedID]*Roll{}
	var order []structs.NamespacedID
	for _, t := range in.Targets {
		c := in.Checks[t.Key()]
		if c == nil || c.LastError != "" || c.Digest == "" || c.DigestSince == 0 || t.PinnedAt > c.LastCheck {
			continue // nothing the watcher saw after this version's pin
		}
		base := t.Pinned
		if base == "" {
			w := watch[t.ID]
			if w.Assumed == "" || w.AssumedVersion != t.JobVersion {
				// An unpinned version: the first good check after it is
				// taken as what the nodes pulled; it is not rolled.
				w = w.Copy()
				w.Assumed, w.AssumedVersion = c.Digest, t.JobVersion
				upd.Watches = replaceWatch(upd.Watches, w)
				continue
			}
			base = w.Assumed
		}
		w := watch[t.ID]
		if c.Digest == base || isBad(t.Ref.TagRef(), c.Digest) {
			if w.Held != "" && c.Digest == base {
				w = w.Copy()
				w.Held, w.HeldReason = "", ""
				upd.Watches = replaceWatch(upd.Watches, w)
			}
			continue
		}
		if reason, until := Gate(t.Policy, c, w.Approved, now); reason != "" {
			d.Waiting = append(d.Waiting, Waiting{ID: t.ID, Digest: c.Digest, Reason: reason, Until: until})
			if !until.IsZero() {
				wake(until)
			}
			if (reason == WaitNotify || reason == WaitApproval) && (w.Held != c.Digest || w.HeldReason != reason) {
				// Recorded once per digest: the change is the event
				// that tells operators.
				w = w.Copy()
				w.Held, w.HeldReason = c.Digest, reason
				upd.Watches = replaceWatch(upd.Watches, w)
			}
			continue
		}
		jid := structs.NamespacedID{Namespace: t.ID.Namespace, ID: t.ID.JobID}
		if hold := mem.rollHold[jid]; hold.After(now) {
			wake(hold)
			continue
		}
		r := rolls[jid]
		if r == nil {
			r = &Roll{Namespace: jid.Namespace, JobID: jid.ID, JobModifyIndex: t.JobModifyIndex}
			rolls[jid] = r
			order = append(order, jid)
		}
		r.Changes = append(r.Changes, Change{Group: t.ID.Group, Task: t.ID.Task, Key: t.Key(), Ref: t.Ref, From: t.Pinned, To: c.Digest})
	}
	for _, jid := range order {
		d.Rolls = append(d.Rolls, *rolls[jid])
	}

	if len(upd.Watches)+len(upd.BadDigests)+len(upd.DeleteWatches)+len(upd.DeleteChecks) > 0 {
		sortUpdate(upd)
		d.Update = upd
	}
	return d
}

// markFailures adds to marked the failures of t that in.Bad does not know
// yet (a new deployment, failed after the one recorded). Only the newest
// maxBad failures count, so that a long history costs a bounded amount of
// work on every pass.
func markFailures(bad map[string]map[string]*structs.ImageBadDigest, t Target, marked map[structs.ImageBadDigestID]*structs.ImageBadDigest, now time.Time) {
	failed := t.Failed
	if len(failed) > maxBad {
		failed = failed[len(failed)-maxBad:]
	}
	ref := t.Ref.TagRef()
	for _, f := range failed {
		id := structs.ImageBadDigestID{Reference: ref, Digest: f.Digest}
		rec := marked[id]
		if rec == nil {
			rec = bad[ref][f.Digest]
		}
		if rec != nil && (f.Index <= rec.FailedIndex || f.DeploymentID == rec.DeploymentID) {
			continue // known (and maybe cleared since)
		}
		marked[id] = &structs.ImageBadDigest{Reference: ref, Digest: f.Digest, Namespace: t.ID.Namespace, JobID: t.ID.JobID,
			JobVersion: f.JobVersion, DeploymentID: f.DeploymentID, FailedIndex: f.Index, FailedTime: now.UnixNano()}
	}
}

// Observe returns the check record after the watcher's check of key at
// now: digest on success, or err. prev (or nil) is not modified.
func Observe(prev *structs.ImageCheck, chk Check, digest string, err error, now time.Time) *structs.ImageCheck {
	return structs.Observe(prev, Observation(chk, digest, err, now, true))
}

// Observation is the record of one resolution of chk at now: the watcher's
// own check (byWatcher) or a registration's or plan's.
func Observation(chk Check, digest string, err error, now time.Time, byWatcher bool) *structs.ImageObservation {
	o := &structs.ImageObservation{Key: chk.Key, Reference: chk.Ref.TagRef(), Registry: chk.Registry, CredKey: chk.Auth.Key(),
		Time: now.UnixNano(), Digest: digest, ByWatcher: byWatcher}
	if err != nil {
		o.Digest, o.Error = "", err.Error()
	}
	return o
}

// replaceWatch returns ws with w in place of the watch of the same ID, or
// appended.
func replaceWatch(ws []*structs.ImageWatch, w *structs.ImageWatch) []*structs.ImageWatch {
	for i, o := range ws {
		if o.ID() == w.ID() {
			ws[i] = w
			return ws
		}
	}
	return append(ws, w)
}

func sortUpdate(u *structs.ImageWatchUpdateRequest) {
	less := func(a, b structs.ImageWatchID) bool {
		return a.Namespace+"\x00"+a.JobID+"\x00"+a.Group+"\x00"+a.Task < b.Namespace+"\x00"+b.JobID+"\x00"+b.Group+"\x00"+b.Task
	}
	sort.Slice(u.Watches, func(i, j int) bool { return less(u.Watches[i].ID(), u.Watches[j].ID()) })
	sort.Slice(u.DeleteWatches, func(i, j int) bool { return less(u.DeleteWatches[i], u.DeleteWatches[j]) })
	sort.Strings(u.DeleteChecks)
	sort.Slice(u.BadDigests, func(i, j int) bool {
		a, b := u.BadDigests[i], u.BadDigests[j]
		return a.Reference+"\x00"+a.Digest < b.Reference+"\x00"+b.Digest
	})
}
