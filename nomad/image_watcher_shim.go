package nomad

import (
	"context"
	"errors"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/imageresolve"
	"github.com/drover-project/drover/nomad/imagewatcher"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// imageBackend is the server side of imagewatcher.Backend: state writes go
// through raft, new versions through JobRegister (validation, check-index,
// an evaluation, and so the job's update block).
type imageBackend struct{ s *Server }

var _ imagewatcher.Backend = imageBackend{}

func (b imageBackend) State() *state.StateStore { return b.s.State() }

func (b imageBackend) Now() time.Time { return b.s.now() }

func (b imageBackend) Resolve(ctx context.Context, ref imageresolve.Ref, auth *imageresolve.Auth) (string, error) {
	return b.s.resolver.Resolve(ctx, ref, auth)
}

func (b imageBackend) Created(ctx context.Context, ref imageresolve.Ref, digest string, auth *imageresolve.Auth) (time.Time, error) {
	return b.s.resolver.Created(ctx, ref, digest, auth)
}

// ApplyImageWatch commits req flagged IgnoreUnknownTypeFlag: a server of
// an older version (during a rolling upgrade) skips the watcher's records
// instead of stopping.
func (b imageBackend) ApplyImageWatch(req *structs.ImageWatchUpdateRequest) error {
	_, _, err := b.s.raftApply(structs.ImageWatchUpdateRequestType|structs.IgnoreUnknownTypeFlag, req)
	return err
}

func (b imageBackend) RegisterJob(job *structs.Job, modifyIndex uint64, tag *structs.JobVersionTag) (uint64, error) {
	reply, err := b.s.JobRegister(&JobRegisterArgs{Job: job, EnforceIndex: true, JobModifyIndex: modifyIndex, VersionTag: tag,
		KeepImages: true})
	if err != nil {
		return 0, err
	}
	return reply.Version, nil
}

// runImageWatcher runs the image watcher until ctx ends (leadership lost).
// Its state lives in raft, so a new leader's watcher continues where the
// old one stopped.
func (s *Server) runImageWatcher(ctx context.Context) {
	if s.config.ImagePinningOff {
		s.logger.Info(`image watcher off: the server runs with image_pinning = "off"`)
		return
	}
	w := imagewatcher.New(imageBackend{s}, s.logger, s.imageMetrics, s.config.RegistryBudget)
	s.imageWatcher.Store(w)
	defer s.imageWatcher.CompareAndSwap(w, nil)
	w.Run(ctx)
}

// ErrNotLeader is returned by leader-only operations on a follower.
var ErrNotLeader = errors.New("no image watcher: this server is not the leader")

// imageCheckNow has the leader's image watcher check the images of job's
// auto-updated tasks at once, and returns when that is done (bounded by
// ctx). It reports false when the job has none.
func (s *Server) imageCheckNow(ctx context.Context, namespace, jobID string) (bool, error) {
	if s.config.ImagePinningOff {
		return false, structs.BadRequestf(`no image watcher: the servers run with image_pinning = "off"`)
	}
	w := s.imageWatcher.Load()
	if w == nil {
		return false, ErrNotLeader
	}
	return w.CheckNow(ctx, namespace, jobID)
}

// ImageStatus describes the image state of job's Docker tasks, watching
// the image watcher's records in ws (may be nil).
func (s *Server) ImageStatus(ws memdb.WatchSet, snap *state.Snapshot, job *structs.Job) ([]structs.ImageTaskStatus, error) {
	checks, err := snap.ImageChecks(ws)
	if err != nil {
		return nil, err
	}
	watches, err := snap.ImageWatchesByJob(ws, job.Namespace, job.ID)
	if err != nil {
		return nil, err
	}
	cm := map[string]*structs.ImageCheck{}
	for _, c := range checks {
		cm[c.Key] = c
	}
	wm := map[structs.ImageWatchID]*structs.ImageWatch{}
	for _, w := range watches {
		wm[w.ID()] = w
	}
	bad, err := snap.ImageBadDigests(ws)
	if err != nil {
		return nil, err
	}
	rec := imagewatcher.Records{Checks: cm, Watches: wm, Bad: imagewatcher.BadByReference(bad), PinningOff: s.config.ImagePinningOff}
	return imagewatcher.Status(job, rec, s.now()), nil
}
