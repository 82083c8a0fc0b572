package nomad

import (
	"context"
	"fmt"
	"slices"

	"github.com/drover-project/drover/nomad/imageresolve"
	"github.com/drover-project/drover/nomad/imagewatcher"
	"github.com/drover-project/drover/nomad/structs"
)

// pinOutcome is what pinImages found besides the pinned job.
type pinOutcome struct {
	// warnings name each image left unpinned and why.
	warnings []string
	// unresolved lists the registries of the images whose tag could not
	// be resolved (stored by tag or with the current pin kept).
	unresolved []string
	// observations are the resolutions to record as checks of their tags.
	observations []*structs.ImageObservation
}

// count adds the images whose tag could not be resolved to the metrics.
func (p *pinOutcome) count(m *imagewatcher.Metrics) {
	for _, reg := range p.unresolved {
		m.Unresolved.WithLabels(reg).Inc()
	}
}

// pinImages returns a copy of job with its Docker images pinned to digests
// (imageresolve.PinJob; nothing is resolved with image_pinning = "off"). It
// talks to registries, so it runs before anything is proposed to raft,
// bounded by the resolver's timeout. The outcome's observations are the
// resolutions of tags the image watcher follows or may follow: with
// forRegister, those of tasks with auto_update and those of tags it
// already records; else (a plan) only the latter.
func (s *Server) pinImages(job *structs.Job, forRegister bool) (*structs.Job, *pinOutcome, error) {
	current, err := s.State().JobByID(nil, job.Namespace, job.ID)
	if err != nil {
		return nil, nil, err
	}
	res, err := imageresolve.PinJob(context.Background(), s.resolver, job, imageresolve.PinOptions{Off: s.config.ImagePinningOff, Current: current})
	if err != nil {
		return nil, nil, err
	}
	now := s.now()
	out := &pinOutcome{warnings: res.Warnings()}
	for _, u := range res.Unpinned {
		out.unresolved = append(out.unresolved, u.Registry)
	}
	bad, err := s.State().ImageBadDigests(nil)
	if err != nil {
		return nil, nil, err
	}
	byRef := imagewatcher.BadByReference(bad)
	for _, r := range res.Resolutions {
		if b := byRef[r.Ref.TagRef()][r.Digest]; r.Err == nil && b != nil && b.IsBad() {
			out.warnings = append(out.warnings, fmt.Sprintf("image %q is pinned to %s, which failed a deployment of job %q (version %d); "+
				"the image watcher rolls no job to it until it is cleared (drover job image-updates -clear-bad)",
				r.Ref.TagRef(), r.Digest, b.JobID, b.JobVersion))
		}
		chk := imagewatcher.Check{Key: imagewatcher.CheckKey(r.Ref.TagRef(), r.Auth.Key()), Ref: r.Ref, Auth: r.Auth, Registry: r.Ref.Registry}
		if !(forRegister && r.AutoUpdate) {
			if c, err := s.State().ImageCheck(nil, chk.Key); err != nil || c == nil {
				continue
			}
		}
		out.observations = append(out.observations, imagewatcher.Observation(chk, r.Digest, r.Err, now, false))
	}
	pinned := res.Job
	if pinned == job {
		pinned = job.Copy()
	}
	return pinned, out, nil
}

// recordObservations commits a registration's or plan's resolutions as
// checks of their tags (flagged IgnoreUnknownTypeFlag, as the watcher's
// records are).
func (s *Server) recordObservations(obs []*structs.ImageObservation) error {
	if len(obs) == 0 {
		return nil
	}
	_, _, err := s.raftApply(structs.ImageWatchUpdateRequestType|structs.IgnoreUnknownTypeFlag,
		&structs.ImageWatchUpdateRequest{Observations: obs})
	return err
}

// imageClearBad clears digest from the bad digests of the images of job's
// Docker tasks: the image watcher may roll it again (to every job on those
// images). It answers 400 when the digest is bad for none of them.
func (s *Server) imageClearBad(namespace, jobID, digest string) error {
	job, err := s.State().JobByID(nil, namespace, jobID)
	if err != nil {
		return err
	}
	if job == nil {
		return structs.NotFoundf("job not found")
	}
	bad, err := s.State().ImageBadDigests(nil)
	if err != nil {
		return err
	}
	byRef := imagewatcher.BadByReference(bad)
	var clear []structs.ImageBadDigestID
	for _, tg := range job.TaskGroups {
		for _, t := range tg.Tasks {
			if t.Driver != imageresolve.DockerDriver {
				continue
			}
			image, _ := t.Config["image"].(string)
			ref, err := imageresolve.Parse(image)
			if err != nil {
				continue
			}
			id := structs.ImageBadDigestID{Reference: ref.TagRef(), Digest: digest}
			if b := byRef[id.Reference][digest]; b != nil && b.IsBad() && !slices.Contains(clear, id) {
				clear = append(clear, id)
			}
		}
	}
	if len(clear) == 0 {
		return structs.BadRequestf("digest %q is not a bad digest of any image of job %q", digest, jobID)
	}
	_, _, err = s.raftApply(structs.ImageWatchUpdateRequestType|structs.IgnoreUnknownTypeFlag,
		&structs.ImageWatchUpdateRequest{ClearBad: clear})
	if err != nil {
		return fmt.Errorf("clearing bad digest: %w", err)
	}
	return nil
}
