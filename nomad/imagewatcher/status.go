package imagewatcher

import (
	"cmp"
	"slices"
	"time"

	"github.com/drover-project/drover/nomad/imageresolve"
	"github.com/drover-project/drover/nomad/structs"
)

// JobStatus is the body of GET /v1/job/:id/image-updates and of
// PUT /v1/job/:id/image-updates/check: the image state of every Docker task
// of the job's current version.
type JobStatus struct {
	Namespace string
	JobID     string
	Version   uint64
	Tasks     []TaskStatus
}

// TaskStatus is the image state of one Docker task of a job, as
// GET /v1/job/:id/image-updates answers it.
type TaskStatus struct {
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
	// Bad lists the digests of the reference that failed a deployment (of
	// this job or another on the same reference) and are rolled to no job
	// until an operator clears them.
	Bad []string
	// LastRoll is the watcher's newest version for this task, or nil.
	LastRoll *structs.ImageRoll
	// Checks and Errors count the checks of the reference (shared with
	// every task that follows it).
	Checks, Errors uint64
}

// Records are the image watcher's records Status reads.
type Records struct {
	Checks  map[string]*structs.ImageCheck
	Watches map[structs.ImageWatchID]*structs.ImageWatch
	// Bad holds the bad-digest records by reference, then digest.
	Bad map[string]map[string]*structs.ImageBadDigest
	// PinningOff is the servers' image_pinning = "off".
	PinningOff bool
}

// BadByReference indexes bad-digest records by reference, then digest.
func BadByReference(recs []*structs.ImageBadDigest) map[string]map[string]*structs.ImageBadDigest {
	out := map[string]map[string]*structs.ImageBadDigest{}
	for _, b := range recs {
		if out[b.Reference] == nil {
			out[b.Reference] = map[string]*structs.ImageBadDigest{}
		}
		out[b.Reference][b.Digest] = b
	}
	return out
}

// BadDigestsOf returns the digests of ref that are bad now, oldest failure
// first.
func BadDigestsOf(bad map[string]map[string]*structs.ImageBadDigest, ref string) []string {
	var recs []*structs.ImageBadDigest
	for _, b := range bad[ref] {
		if b.IsBad() {
			recs = append(recs, b)
		}
	}
	slices.SortFunc(recs, func(a, b *structs.ImageBadDigest) int { return cmp.Compare(a.FailedIndex, b.FailedIndex) })
	var out []string
	for _, b := range recs {
		out = append(out, b.Digest)
	}
	return out
}

// Status describes the Docker tasks of job at now from the watcher's
// records.
func Status(job *structs.Job, rec Records, now time.Time) []TaskStatus {
	var out []TaskStatus
	for _, tg := range job.TaskGroups {
		for _, t := range tg.Tasks {
			if t.Driver != imageresolve.DockerDriver {
				continue
			}
			image, _ := t.Config["image"].(string)
			st := TaskStatus{Group: tg.Name, Task: t.Name, Image: image}
			ref, err := imageresolve.Parse(image)
			s, serr := imageresolve.ParseSettings(t.Config)
			if err != nil || serr != nil {
				out = append(out, st)
				continue
			}
			st.Reference, st.Pinned = ref.TagRef(), ref.Digest
			st.AutoUpdate, st.Interval, st.Soak = s.AutoUpdate, s.Interval, s.Soak
			st.Bad = BadDigestsOf(rec.Bad, ref.TagRef())
			base := ref.Digest
			w := rec.Watches[structs.ImageWatchID{Namespace: job.Namespace, JobID: job.ID, Group: tg.Name, Task: t.Name}]
			if w != nil {
				st.LastRoll = w.LastRoll
			}
			if ref.Digest == "" {
				switch {
				case !s.PinDigest:
					st.Unpinned = "pin_digest = false"
				case rec.PinningOff:
					st.Unpinned = `the servers run with image_pinning = "off"`
				default:
					st.Unpinned = "the tag was not resolved when this version was registered (its registry could not be reached, or image_pinning was off)"
				}
				if s.AutoUpdate && w != nil && w.Assumed != "" && w.AssumedVersion == job.Version {
					st.Assumed, base = w.Assumed, w.Assumed
				}
			}
			key := CheckKey(ref.TagRef(), s.Auth.Key())
			if c := rec.Checks[key]; c != nil {
				st.LastCheck = time.Unix(0, c.LastCheck).UTC()
				st.TagDigest, st.LastError = c.Digest, c.LastError
				st.Checks, st.Errors = c.Checks, c.Errors
				if s.AutoUpdate {
					st.NextCheck = NextDue(c, s.Interval).UTC()
				}
				if s.AutoUpdate && base != "" && c.Digest != "" && c.Digest != base && !slices.Contains(st.Bad, c.Digest) {
					st.Pending = c.Digest
					st.SoakLeft = s.Soak
					if c.DigestSince != 0 { // else: the watcher has not seen it yet
						st.PendingSince = time.Unix(0, c.DigestSince).UTC()
						st.SoakLeft = max(st.PendingSince.Add(s.Soak).Sub(now), 0)
					}
				}
			}
			out = append(out, st)
		}
	}
	return out
}
