package nomad

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// JobImages is the image state of a job's docker tasks (see ImageStatus).
type JobImages struct {
	Job   *structs.Job
	Tasks []structs.ImageTaskStatus
}

// imageTables are the tables the image state of a job is read from.
var imageTables = []string{state.TableJobs, state.TableImageChecks, state.TableImageWatches, state.TableImageBadDigests}

// JobImageUpdates returns the image state of job id (read-job).
func (s *Server) JobImageUpdates(ctx context.Context, opts QueryOptions, id string) (*JobImages, QueryMeta, error) {
	var out *JobImages
	meta, err := s.jobQuery(ctx, &opts, id, acl.NamespaceCapabilityReadJob, func(ws memdb.WatchSet, snap *state.Snapshot, job *structs.Job) (uint64, error) {
		tasks, err := s.ImageStatus(ws, snap, job)
		if err != nil {
			return 0, err
		}
		out = &JobImages{Job: job, Tasks: tasks}
		return tableIndex(snap, imageTables...), nil
	})
	return out, meta, err
}

// jobImagesNow returns the current image state of job id of ns.
func (s *Server) jobImagesNow(ns, id string) (*JobImages, uint64, error) {
	snap := s.State().Snapshot()
	job, err := snap.JobByID(nil, ns, id)
	if err != nil {
		return nil, 0, err
	}
	if job == nil {
		return nil, 0, structs.NotFoundf("job not found")
	}
	tasks, err := s.ImageStatus(nil, snap, job)
	if err != nil {
		return nil, 0, err
	}
	return &JobImages{Job: job, Tasks: tasks}, tableIndex(snap, imageTables...), nil
}

// JobImageCheck has the leader's image watcher check the auto-updated
// images of job id at once and wait for it (ErrNotLeader elsewhere), and
// returns the image state after the check; caller needs submit-job.
func (s *Server) JobImageCheck(ctx context.Context, caller *acl.ACL, ns, id string) (*JobImages, uint64, error) {
	if err := requireNamespace(caller, ns, acl.NamespaceCapabilitySubmitJob); err != nil {
		return nil, 0, err
	}
	job, err := s.State().JobByID(nil, ns, id)
	if err != nil {
		return nil, 0, err
	}
	if job == nil {
		return nil, 0, structs.NotFoundf("job not found")
	}
	ok, err := s.imageCheckNow(ctx, ns, id)
	if err != nil {
		return nil, 0, err
	}
	if !ok {
		return nil, 0, structs.BadRequestf("job %q has no docker task with auto_update = true", id)
	}
	return s.jobImagesNow(ns, id)
}

// JobImageClearBad clears a bad digest of the images of job id (see
// imageClearBad) and returns the image state after it; caller needs
// submit-job.
func (s *Server) JobImageClearBad(caller *acl.ACL, ns, id, digest string) (*JobImages, uint64, error) {
	if err := requireNamespace(caller, ns, acl.NamespaceCapabilitySubmitJob); err != nil {
		return nil, 0, err
	}
	if err := s.imageClearBad(ns, id, digest); err != nil {
		return nil, 0, err
	}
	return s.jobImagesNow(ns, id)
}

// JobImageApprove approves the pending digests of job id's tasks that have
// auto_update_approval (caller needs submit-job): digest, when not "",
// must be the pending digest of every task approved (a guard against a tag
// that moved again after the operator looked). The approval is committed
// through raft into the tasks' watch records, so it survives a change of
// leader; the watcher then rolls the digest through the job's update block
// once its other gates (soak, min age, window) are open. It answers 400
// when no task waits for an approval.
func (s *Server) JobImageApprove(caller *acl.ACL, ns, id, digest string) (*JobImages, uint64, error) {
	if err := requireNamespace(caller, ns, acl.NamespaceCapabilitySubmitJob); err != nil {
		return nil, 0, err
	}
	imgs, _, err := s.jobImagesNow(ns, id)
	if err != nil {
		return nil, 0, err
	}
	watches, err := s.State().ImageWatchesByJob(nil, ns, id)
	if err != nil {
		return nil, 0, err
	}
	have := map[structs.ImageWatchID]bool{}
	for _, w := range watches {
		have[w.ID()] = true
	}
	var approvals []structs.ImageApproval
	var others, unfollowed []string
	for _, t := range imgs.Tasks {
		if !t.PendingApproval {
			continue
		}
		wid := structs.ImageWatchID{Namespace: imgs.Job.Namespace, JobID: imgs.Job.ID, Group: t.Group, Task: t.Task}
		if digest != "" && t.Pending != digest {
			others = append(others, fmt.Sprintf("task %q waits with %s", t.Task, t.Pending))
			continue
		}
		if !have[wid] {
			unfollowed = append(unfollowed, t.Task) // the watcher has not recorded the task yet
			continue
		}
		approvals = append(approvals, structs.ImageApproval{ID: wid, Digest: t.Pending})
	}
	if len(approvals) == 0 {
		if len(others) > 0 {
			return nil, 0, structs.BadRequestf("digest %q is not pending approval in job %q (%s)", digest, id, strings.Join(others, "; "))
		}
		if len(unfollowed) > 0 {
			return nil, 0, structs.BadRequestf("the image watcher has not started following task(s) %s of job %q yet; retry in a moment",
				strings.Join(unfollowed, ", "), id)
		}
		return nil, 0, structs.BadRequestf("job %q has no new image digest pending approval (auto_update_approval = true, a moved tag)", id)
	}
	if _, _, err := s.raftApply(structs.ImageWatchUpdateRequestType|structs.IgnoreUnknownTypeFlag,
		&structs.ImageWatchUpdateRequest{Approvals: approvals}); err != nil {
		return nil, 0, fmt.Errorf("recording the approval: %w", err)
	}
	if w := s.imageWatcher.Load(); w != nil {
		w.Kick()
	}
	return s.jobImagesNow(ns, id)
}
