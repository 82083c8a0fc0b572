package agent

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/wire"
)

// checkNowTimeout bounds PUT /v1/job/:id/image-updates/check.
const checkNowTimeout = time.Minute

func (h *HTTPServer) jobImageUpdates(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	return h.jobQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot, job *structs.Job) (any, uint64, error) {
		return h.imageUpdates(ws, snap, job)
	})
}

func (h *HTTPServer) imageUpdates(ws memdb.WatchSet, snap *state.Snapshot, job *structs.Job) (any, uint64, error) {
	tasks, err := h.srv.ImageStatus(ws, snap, job)
	if err != nil {
		return nil, 0, err
	}
	if tasks == nil {
		tasks = []structs.ImageTaskStatus{}
	}
	return &wire.ImageUpdates{Namespace: job.Namespace, JobID: job.ID, Version: job.Version, Tasks: tasks},
		tableIndex(snap, state.TableJobs, state.TableImageChecks, state.TableImageWatches, state.TableImageBadDigests), nil
}

// jobImageCheck has the leader's image watcher check the job's
// auto-updated images at once (a pipeline that just pushed), waits for it,
// and answers the state after the check.
func (h *HTTPServer) jobImageCheck(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	ns, id := namespace(r), r.PathValue("id")
	job, err := h.srv.State().JobByID(nil, ns, id)
	if err != nil {
		return nil, 0, err
	}
	if job == nil {
		return nil, 0, notFound("job not found")
	}
	ctx, cancel := context.WithTimeout(r.Context(), checkNowTimeout)
	defer cancel()
	ok, err := h.srv.ImageCheckNow(ctx, ns, id)
	switch {
	case errors.Is(err, nomad.ErrNotLeader):
		return nil, 0, &httpError{code: http.StatusServiceUnavailable, msg: err.Error()}
	case err != nil:
		return nil, 0, err
	case !ok:
		return nil, 0, badRequest("job %q has no docker task with auto_update = true", id)
	}
	snap := h.srv.State().Snapshot()
	job, err = snap.JobByID(nil, ns, id)
	if err != nil {
		return nil, 0, err
	}
	if job == nil {
		return nil, 0, notFound("job not found")
	}
	return h.imageUpdates(nil, snap, job)
}

// jobImageClearBad clears a bad digest of the job's images (the image
// watcher may roll it again, to every job on the image) and answers the
// job's image state after it.
func (h *HTTPServer) jobImageClearBad(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req wire.ImageClearBadRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, 0, err
	}
	if req.Digest == "" {
		return nil, 0, badRequest("Digest: the bad digest to clear is required")
	}
	ns, id := namespace(r), r.PathValue("id")
	if err := h.srv.ImageClearBad(ns, id, req.Digest); err != nil {
		return nil, 0, err
	}
	snap := h.srv.State().Snapshot()
	job, err := snap.JobByID(nil, ns, id)
	if err != nil {
		return nil, 0, err
	}
	if job == nil {
		return nil, 0, notFound("job not found")
	}
	return h.imageUpdates(nil, snap, job)
}

// jobQuery runs a blocking query on the job named in the path; fn receives
// the job (404 "job not found" when missing). It serves the job reads not
// yet moved into the server (image updates, rollout, scale status).
func (h *HTTPServer) jobQuery(r *http.Request, fn func(ws memdb.WatchSet, snap *state.Snapshot, job *structs.Job) (any, uint64, error)) (any, uint64, error) {
	ns, id := namespace(r), r.PathValue("id")
	return h.blockingQuery(r, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
		job, err := snap.JobByID(ws, ns, id)
		if err != nil {
			return nil, 0, err
		}
		if job == nil {
			return nil, tableIndex(snap, state.TableJobs), notFound("job not found")
		}
		return fn(ws, snap, job)
	})
}
