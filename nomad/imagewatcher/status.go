package imagewatcher

import (
	"cmp"
	"slices"
	"time"

	"github.com/drover-project/drover/nomad/imageresolve"
	"github.com/drover-project/drover/nomad/structs"
)

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

// waitingText says in words what holds a pending digest.
func waitingText(reason string, until time.Time, s imageresolve.Settings) string {
	switch reason {
	case WaitSoak:
		return "waiting for the soak until " + until.UTC().Format(time.RFC3339)
	case WaitMinAge:
		if until.IsZero() {
			return "waiting for min age " + s.MinAge.String() + ": the image's created time is not read yet"
		}
		return "waiting for min age " + s.MinAge.String() + " until " + until.UTC().Format(time.RFC3339)
	case WaitNotify:
		return `not rolled: auto_update = "notify" reports it only`
	case WaitApproval:
		return "waiting for approval (drover job image-updates -approve)"
	case WaitWindow:
		return "waiting for window " + until.UTC().Format(time.RFC3339) + " (" + s.Window.String() + ")"
	case "":
		return "rolls at the watcher's next pass"
	}
	return reason
}

// Status describes the Docker tasks of job at now from the watcher's
// records.
func Status(job *structs.Job, rec Records, now time.Time) []structs.ImageTaskStatus {
	var out []structs.ImageTaskStatus
	for _, tg := range job.TaskGroups {
		for _, t := range tg.Tasks {
			if t.Driver != imageresolve.DockerDriver {
				continue
			}
			image, _ := t.Config["image"].(string)
			st := structs.ImageTaskStatus{Group: tg.Name, Task: t.Name, Image: image}
			ref, err := imageresolve.Parse(image)
			s, serr := imageresolve.ParseSettings(t.Config)
			if err != nil || serr != nil {
				out = append(out, st)
				continue
			}
			st.Reference, st.Pinned = ref.TagRef(), ref.Digest
			st.AutoUpdate, st.Interval, st.Soak = s.AutoUpdate, s.Interval, s.Soak
			if s.AutoUpdate {
				st.Mode = structs.AutoUpdateRoll
				if s.Notify {
					st.Mode = structs.AutoUpdateNotify
				}
			}
			st.Approval, st.Window, st.MinAge = s.Approval, s.Window.String(), s.MinAge
			st.Bad = BadDigestsOf(rec.Bad, ref.TagRef())
			base := ref.Digest
			w := rec.Watches[structs.ImageWatchID{Namespace: job.Namespace, JobID: job.ID, Group: tg.Name, Task: t.Name}]
			if w != nil {
				st.LastRoll, st.Approved = w.LastRoll, w.Approved
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
				if c.Created != 0 {
					st.ImageCreated = time.Unix(0, c.Created).UTC()
				}
				if s.AutoUpdate {
					st.NextCheck = NextDue(c, s.Interval).UTC()
				}
				if s.AutoUpdate && base != "" && c.Digest != "" && c.Digest != base && !slices.Contains(st.Bad, c.Digest) {
					st.Pending = c.Digest
					st.SoakLeft = s.Soak
					if c.DigestSince != 0 { // else: the watcher has not seen it yet
						st.PendingSince = time.Unix(0, c.DigestSince).UTC()
						st.SoakLeft = max(st.PendingSince.Add(s.Soak).Sub(now), 0)
						approved := ""
						if w != nil {
							approved = w.Approved
						}
						var until time.Time
						st.Waiting, until = Gate(PolicyOf(s), c, approved, now)
						st.WaitingUntil = until.UTC()
						if until.IsZero() {
							st.WaitingUntil = time.Time{}
						}
						st.WaitingFor = waitingText(st.Waiting, until, s)
					} else {
						st.Waiting, st.WaitingFor = WaitSoak, "waiting for the watcher's own check (only a registration has seen this digest)"
					}
					if s.Approval && !s.Notify {
						st.Prepared = ref.Pinned(c.Digest)
						st.PendingApproval = st.Approved != c.Digest
					}
				}
			}
			out = append(out, st)
		}
	}
	return out
}
