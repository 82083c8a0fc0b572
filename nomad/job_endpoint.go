package nomad

import (
	"context"
	"errors"
	"github.com/google/uuid"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/fsm"
	"github.com/drover-project/drover/nomad/structs"
)

func generateUUID() string { return uuid.NewString() }

// JobRegisterArgs is a job registration after decoding and canonicalization.
type JobRegisterArgs struct {
	Job            *structs.Job
	Submission     *structs.JobSubmission
	EnforceIndex   bool
	JobModifyIndex uint64
	EvalPriority   int
	// PreserveCounts keeps the count of every group the registered job
	// already has; new groups take the count given.
	PreserveCounts bool
	// PreserveResources keeps the cpu, cores, memory and memory_max of
	// every task the registered job already has.
	PreserveResources bool
	// VersionTag is recorded with the version (set by the image watcher);
	// a VersionTag on Job itself is dropped.
	VersionTag *structs.JobVersionTag
	// KeepImages registers the images as given, resolving no tag (the
	// image watcher, which sets the pins itself).
	KeepImages bool
	// ACL is the submitter's: submit-job in the job's namespace is
	// required (nil: ACLs disabled, or an internal caller).
	ACL *acl.ACL
}

// JobRegisterReply reports a registration.
type JobRegisterReply struct {
	EvalID          string
	EvalCreateIndex uint64
	JobModifyIndex  uint64
	Version         uint64
	Index           uint64
	// Warnings are for the submitter (an image left unpinned).
	Warnings []string
}

// JobRegister validates and registers a job version with an evaluation. It
// must run on the leader. Invalid jobs are refused with every problem listed
// and nothing is written. Docker images given by tag are pinned to their
// digest first (see pinImages): a tag the registry refuses (no such tag,
// credentials) refuses the registration, a registry that cannot be reached
// leaves the image unpinned (or with the current version's pin of the same
// tag) with a warning.
func (s *Server) JobRegister(args *JobRegisterArgs) (*JobRegisterReply, error) {
	if err := s.CheckJobSubmit(args.ACL, args.Job); err != nil {
		return nil, err
	}
	if len(args.Job.Payload) > 0 && !args.Job.Dispatched {
		return nil, structs.BadRequestf("Job can't be submitted with a payload, only dispatched")
	}
	if args.EnforceIndex {
		// The index is checked against this server's state below: it must
		// hold every acknowledged write, or a deposed leader would refuse
		// for certain what the cluster would accept (the FSM checks again).
		if err := s.WaitConsistentRead(context.Background()); err != nil {
			return nil, err
		}
	}
	current, err := s.State().JobByID(nil, args.Job.Namespace, args.Job.ID)
	if err != nil {
		return nil, err
	}
	if current != nil {
		preserve(args.Job, current, args.PreserveCounts, args.PreserveResources)
	}
	if err := validateSubmitted(args.Job); err != nil {
		return nil, err
	}
	if err := s.checkGateConfig(args.Job); err != nil {
		return nil, err
	}
	job, pin := args.Job.Copy(), &pinOutcome{}
	if !args.KeepImages {
		if job, pin, err = s.pinImages(args.Job, true); err != nil {
			return nil, err
		}
	}
	job.VersionTag = args.VersionTag
	enforce := (*uint64)(nil)
	if args.EnforceIndex {
		// Checked here to refuse early, and again by the FSM when the entry
		// applies: two registers against one index cannot both win.
		if err := structs.CheckJobModifyIndex(current, args.JobModifyIndex); err != nil {
			return nil, err
		}
		enforce = &args.JobModifyIndex
	}
	// The resolutions are checks of their tags: recorded just before the
	// version, so the image watcher never sees the version without them.
	if err := s.recordObservations(pin.observations); err != nil {
		return nil, err
	}
	var eval *structs.Evaluation
	if !job.IsTemplate() || (current != nil && !current.IsTemplate()) {
		// (A periodic or parameterized parent runs nothing: no evaluation;
		// its children get theirs when they are launched.)
		eval = s.newEval(job, structs.EvalTriggerJobRegister)
		if args.EvalPriority > 0 {
			eval.Priority = args.EvalPriority
		}
	}
	reply, err := s.applyJobRegister(job, args.Submission, eval, enforce)
	if err != nil {
		return nil, err
	}
	pin.count(s.imageMetrics)
	reply.Warnings = pin.warnings
	return reply, nil
}

// preserve copies into job, for the groups and tasks that current already
// has, their counts (counts) and their cpu, cores, memory and memory_max
// (resources).
func preserve(job, current *structs.Job, counts, resources bool) {
	if !counts && !resources {
		return
	}
	for _, tg := range job.TaskGroups {
		old := current.LookupTaskGroup(tg.Name)
		if old == nil {
			continue
		}
		if counts {
			tg.Count = old.Count
		}
		if !resources {
			continue
		}
		for _, t := range tg.Tasks {
			ot := old.LookupTask(t.Name)
			if ot == nil || ot.Resources == nil {
				continue
			}
			if t.Resources == nil {
				t.Resources = &structs.Resources{}
			}
			t.Resources.CPU, t.Resources.Cores = ot.Resources.CPU, ot.Resources.Cores
			t.Resources.MemoryMB, t.Resources.MemoryMaxMB = ot.Resources.MemoryMB, ot.Resources.MemoryMaxMB
		}
	}
}

// applyJobRegister commits job (and eval, when non-nil) through raft; with
// enforce, only if the job's JobModifyIndex is still *enforce when the
// entry applies (the FSM's refusal is returned as it is: a 400 in Nomad's
// words).
func (s *Server) applyJobRegister(job *structs.Job, sub *structs.JobSubmission, eval *structs.Evaluation, enforce *uint64) (*JobRegisterReply, error) {
	req := &structs.JobRegisterRequest{Job: job, Submission: sub, Eval: eval, SubmitTime: s.now().UnixNano()}
	if enforce != nil {
		req.EnforceIndex, req.JobModifyIndex = true, *enforce
	}
	resp, index, err := s.raftApply(structs.JobRegisterRequestType, req)
	var refused *structs.RequestError
	if errors.As(err, &refused) {
		return nil, refused
	}
	if err != nil {
		return nil, err
	}
	reply := &JobRegisterReply{Index: index, JobModifyIndex: index}
	if r, ok := resp.(*fsm.RegisterResult); ok && r != nil {
		reply.JobModifyIndex, reply.Version = r.JobModifyIndex, r.Version
	}
	if eval != nil {
		reply.EvalID, reply.EvalCreateIndex = eval.ID, index
	}
	return reply, nil
}

// JobDeregisterReply reports a stop or purge.
type JobDeregisterReply struct {
	EvalID          string
	EvalCreateIndex uint64
	JobModifyIndex  uint64
	Index           uint64
}

// JobDeregister stops a job (its allocations are stopped by the evaluation it
// creates) or, with purge, also deletes it.
func (s *Server) JobDeregister(namespace, jobID string, opts JobDeregisterOptions) (*JobDeregisterReply, error) {
	if err := requireNamespace(opts.ACL, namespace, acl.NamespaceCapabilitySubmitJob); err != nil {
		return nil, err
	}
	if opts.EvalPriority != 0 && (opts.EvalPriority < structs.JobMinPriority || opts.EvalPriority > structs.JobMaxPriority) {
		return nil, structs.BadRequestf("eval_priority must be between %d and %d, got %d", structs.JobMinPriority, structs.JobMaxPriority, opts.EvalPriority)
	}
	job, err := s.State().JobByID(nil, namespace, jobID)
	if err != nil {
		return nil, err
	}
	if job == nil {
		// Nothing to stop: the evaluation (default priority, service type)
		// lets the scheduler clean up whatever the job may have left.
		gone := &structs.Job{Namespace: namespace, ID: jobID, Priority: structs.JobDefaultPriority, Type: structs.JobTypeService}
		eval := s.newEval(gone, structs.EvalTriggerJobDeregister)
		if opts.EvalPriority > 0 {
			eval.Priority = opts.EvalPriority
		}
		_, index, err := s.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{eval}})
		if err != nil {
			return nil, err
		}
		return &JobDeregisterReply{EvalID: eval.ID, EvalCreateIndex: index, Index: index}, nil
	}
	eval := s.newEval(job, structs.EvalTriggerJobDeregister)
	if opts.EvalPriority > 0 {
		eval.Priority = opts.EvalPriority
	}
	req := &structs.JobDeregisterRequest{Namespace: namespace, JobID: jobID, Purge: opts.Purge, Eval: eval,
		SubmitTime: s.now().UnixNano(), NoShutdownDelay: opts.NoShutdownDelay}
	_, index, err := s.raftApply(structs.JobDeregisterRequestType, req)
	if err != nil {
		return nil, err
	}
	return &JobDeregisterReply{EvalID: eval.ID, EvalCreateIndex: index, JobModifyIndex: index, Index: index}, nil
}

// JobDeregisterOptions are the options of a job stop.
type JobDeregisterOptions struct {
	// Purge deletes the job and its versions instead of marking it stopped.
	Purge bool
	// EvalPriority (1..100; 0: the job's priority) is the priority of the
	// evaluation that stops the allocations.
	EvalPriority int
	// NoShutdownDelay kills the job's allocations without waiting for
	// their shutdown_delay.
	NoShutdownDelay bool
	// ACL is the caller's: submit-job in namespace is required (nil:
	// ACLs disabled, or an internal caller).
	ACL *acl.ACL
}

// JobRevert registers a copy of version of the job as its newest version.
// enforcePrior, when non-nil, must equal the current version. caller needs
// submit-job in namespace (nil: ACLs disabled, or an internal caller).
func (s *Server) JobRevert(caller *acl.ACL, namespace, jobID string, version uint64, enforcePrior *uint64) (*JobRegisterReply, error) {
	if err := requireNamespace(caller, namespace, acl.NamespaceCapabilitySubmitJob); err != nil {
		return nil, err
	}
	if enforcePrior != nil { // checked on this server's state: it must be current (see JobRegister)
		if err := s.WaitConsistentRead(context.Background()); err != nil {
			return nil, err
		}
	}
	current, err := s.State().JobByID(nil, namespace, jobID)
	if err != nil {
		return nil, err
	}
	if current == nil {
		return nil, structs.NotFoundf("job not found")
	}
	if enforcePrior != nil && *enforcePrior != current.Version {
		return nil, structs.BadRequestf("Current job has version %d; enforcing version %d", current.Version, *enforcePrior)
	}
	if version == current.Version {
		return nil, structs.BadRequestf("can't revert to current version")
	}
	old, err := s.State().JobByIDAndVersion(nil, namespace, jobID, version)
	if err != nil {
		return nil, err
	}
	if old == nil {
		return nil, structs.NotFoundf("job %q in namespace %q at version %d not found", jobID, namespace, version)
	}
	// The old version is copied as stored: its pinned digests come back,
	// never what its tags point at now.
	revert := old.Copy()
	revert.Stop = false
	revert.VersionTag = nil
	if enforcePrior == nil {
		return s.applyJobRegister(revert, nil, s.newEval(revert, structs.EvalTriggerJobRegister), nil)
	}
	// The prior version is enforced when the entry applies too: it is
	// still current exactly when the job's modify index is unchanged.
	reply, err := s.applyJobRegister(revert, nil, s.newEval(revert, structs.EvalTriggerJobRegister), &current.JobModifyIndex)
	var refused *structs.RequestError
	if errors.As(err, &refused) {
		if now, rerr := s.State().JobByID(nil, namespace, jobID); rerr == nil && now != nil {
			return nil, structs.BadRequestf("Current job has version %d; enforcing version %d", now.Version, *enforcePrior)
		}
	}
	return reply, err
}

// JobStability marks a job version stable or unstable; caller needs
// submit-job in namespace.
func (s *Server) JobStability(caller *acl.ACL, namespace, jobID string, version uint64, stable bool) (uint64, error) {
	if err := requireNamespace(caller, namespace, acl.NamespaceCapabilitySubmitJob); err != nil {
		return 0, err
	}
	job, err := s.State().JobByIDAndVersion(nil, namespace, jobID, version)
	if err != nil {
		return 0, err
	}
	if job == nil {
		return 0, structs.NotFoundf("job %q at version %d not found", jobID, version)
	}
	_, index, err := s.raftApply(structs.JobStabilityRequestType,
		&structs.JobStabilityRequest{Namespace: namespace, JobID: jobID, Version: version, Stable: stable})
	return index, err
}

// JobEvaluate creates a new evaluation of a job (forcing a reschedule
// check); caller needs submit-job in namespace.
func (s *Server) JobEvaluate(caller *acl.ACL, namespace, jobID string) (string, uint64, error) {
	if err := requireNamespace(caller, namespace, acl.NamespaceCapabilitySubmitJob); err != nil {
		return "", 0, err
	}
	job, err := s.State().JobByID(nil, namespace, jobID)
	if err != nil {
		return "", 0, err
	}
	if job == nil {
		return "", 0, structs.NotFoundf("job not found")
	}
	eval := s.newEval(job, structs.EvalTriggerJobRegister)
	eval.JobModifyIndex = job.JobModifyIndex
	_, index, err := s.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{eval}})
	return eval.ID, index, err
}

// CheckJobSubmit refuses a job caller may not submit (submit-job in the
// job's namespace, which the body may name, and the mount capability of
// each host volume it asks for: see allowHostVolumes) and a job in a
// namespace that does not exist, in that order.
func (s *Server) CheckJobSubmit(caller *acl.ACL, job *structs.Job) error {
	if !caller.AllowNamespaceOperation(job.Namespace, acl.NamespaceCapabilitySubmitJob) || !allowHostVolumes(caller, job) {
		return structs.ErrPermissionDenied
	}
	return s.CheckNamespaceExists(job)
}
