package agent

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/drover-project/drover/nomad"
	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/wire"
)

// checkNowTimeout bounds PUT /v1/job/:id/image-updates/check.
const checkNowTimeout = time.Minute

func (h *HTTPServer) jobImageUpdates(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	imgs, index, err := readByID(r, h.srv.JobImageUpdates)
	if err != nil {
		return nil, index, err
	}
	return imageUpdates(imgs), index, nil
}

// imageUpdates is the body of the image-updates endpoints.
func imageUpdates(imgs *nomad.JobImages) *wire.ImageUpdates {
	tasks := imgs.Tasks
	if tasks == nil {
		tasks = []structs.ImageTaskStatus{}
	}
	return &wire.ImageUpdates{Namespace: imgs.Job.Namespace, JobID: imgs.Job.ID, Version: imgs.Job.Version, Tasks: tasks}
}

// jobImageCheck has the leader's image watcher check the job's
// auto-updated images at once (a pipeline that just pushed), waits for it,
// and answers the state after the check.
func (h *HTTPServer) jobImageCheck(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	ctx, cancel := context.WithTimeout(r.Context(), checkNowTimeout)
	defer cancel()
	imgs, index, err := h.srv.JobImageCheck(ctx, aclOf(r), namespace(r), r.PathValue("id"))
	switch {
	case errors.Is(err, nomad.ErrNotLeader):
		return nil, 0, &httpError{code: http.StatusServiceUnavailable, msg: err.Error()}
	case err != nil:
		return nil, 0, err
	}
	return imageUpdates(imgs), index, nil
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
	imgs, index, err := h.srv.JobImageClearBad(aclOf(r), namespace(r), r.PathValue("id"), req.Digest)
	if err != nil {
		return nil, 0, err
	}
	return imageUpdates(imgs), index, nil
}

// jobImageApprove approves the digests pending approval of the job's
// auto_update_approval tasks (recorded in raft; the image watcher then
// rolls them through the update block) and answers the job's image state
// after it.
func (h *HTTPServer) jobImageApprove(w http.ResponseWriter, r *http.Request) (any, uint64, error) {
	var req wire.ImageApproveRequest
	if r.ContentLength != 0 {
		if err := decodeBody(r, &req); err != nil {
			return nil, 0, err
		}
	}
	imgs, index, err := h.srv.JobImageApprove(aclOf(r), namespace(r), r.PathValue("id"), req.Digest)
	if err != nil {
		return nil, 0, err
	}
	return imageUpdates(imgs), index, nil
}
