package imagewatcher

import (
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
	// Bad lists digests that failed their deployment and are not rolled.
	Bad []string
	// LastRoll is the watcher's newest version for this task, or nil.
	LastRoll *structs.ImageRoll
	// Checks and Errors count the checks of the reference (shared with
	// every task that follows it).
	Checks, Errors uint64
}

// Status describes the Docker tasks of job at now from the watcher's
// records (checks by key, watches by ID).
func Status(job *structs.Job, checks map[string]*structs.ImageCheck, watches map[structs.ImageWatchID]*structs.ImageWatch, now time.Time) []TaskStatus {
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
			key := CheckKey(ref.TagRef(), s.Auth.Key())
			w := watches[structs.ImageWatchID{Namespace: job.Namespace, JobID: job.ID, Group: tg.Name, Task: t.Name}]
			if w != nil {
				st.Bad, st.LastRoll = w.Bad, w.LastRoll
			}
			if c := checks[key]; c != nil {
				st.LastCheck = time.Unix(0, c.LastCheck).UTC()
				st.TagDigest, st.LastError = c.Digest, c.LastError
				st.Checks, st.Errors = c.Checks, c.Errors
				if s.AutoUpdate {
					st.NextCheck = NextDue(c, s.Interval).UTC()
				}
				if s.AutoUpdate && c.Digest != "" && c.Digest != ref.Digest && !slices.Contains(st.Bad, c.Digest) {
					st.Pending = c.Digest
					st.PendingSince = time.Unix(0, c.DigestSince).UTC()
					st.SoakLeft = max(st.PendingSince.Add(s.Soak).Sub(now), 0)
				}
			}
			out = append(out, st)
		}
	}
	return out
}
