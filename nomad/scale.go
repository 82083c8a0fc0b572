package nomad

import (
	"context"
	"errors"
	"fmt"
	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/structs"
)

// JobScaleArgs is a scaling action on a job's group.
type JobScaleArgs struct {
	Namespace string
	JobID     string
	Group     string
	// Count is the new count, or nil for an event that changes nothing
	// (an error an autoscaler reports, or a note).
	Count   *int64
	Message string
	Error   bool
	Meta    map[string]any
	// EnforceIndex, when not 0, must equal the job's JobModifyIndex.
	EnforceIndex   uint64
	PolicyOverride bool
	// ACL is the caller's: scale-job or submit-job in Namespace is
	// required (nil: ACLs disabled, or an internal caller).
	ACL *acl.ACL
}

// JobScaleReply reports a scaling action: the evaluation (empty without a
// count change) and the job modify index after it.
type JobScaleReply struct {
	EvalID          string
	EvalCreateIndex uint64
	JobModifyIndex  uint64
	Index           uint64
}

// JobScale records a scaling event for a group and, when a count is given,
// registers a job version with that count and an evaluation, in one raft
// entry. The count must lie within the group's scaling bounds, and the job
// must have no active deployment. Refusals use Nomad's wording.
//
// The new version is made from the job as read; if another version lands
// before the entry applies, the FSM refuses it (ErrJobChanged) and the
// scale is made again from the new version (with EnforceIndex, it is
// refused as a conflicting index instead).
func (s *Server) JobScale(args *JobScaleArgs) (*JobScaleReply, error) {
	const attempts = 5
	for i := 1; ; i++ {
		reply, err := s.jobScaleOnce(args)
		if !errors.Is(err, structs.ErrJobChanged) {
			return reply, err
		}
		if args.EnforceIndex != 0 {
			cur, rerr := s.State().JobByID(nil, args.Namespace, args.JobID)
			if rerr != nil || cur == nil {
				return nil, err
			}
			return nil, structs.BadRequestf("Enforcing job modify index %d: job exists with conflicting job modify index: %d", args.EnforceIndex, cur.JobModifyIndex)
		}
		if i == attempts {
			return nil, fmt.Errorf("scale of job %q: %w, %d times in a row", args.JobID, structs.ErrJobChanged, attempts)
		}
	}
}

// jobScaleOnce is one attempt of JobScale.
func (s *Server) jobScaleOnce(args *JobScaleArgs) (*JobScaleReply, error) {
	if requireNamespace(args.ACL, args.Namespace, acl.NamespaceCapabilityScaleJob) != nil {
		if err := requireNamespace(args.ACL, args.Namespace, acl.NamespaceCapabilitySubmitJob); err != nil {
			return nil, err
		}
	}
	if args.Group == "" {
		return nil, structs.BadRequestf("missing task group name for scaling action")
	}
	if args.Count != nil {
		if *args.Count < 0 {
			return nil, structs.BadRequestf("scaling action count can't be negative")
		}
		if args.Error {
			return nil, structs.BadRequestf("scaling action should not contain count if error is true")
		}
	}
	if args.EnforceIndex != 0 { // checked on this server's state: it must be current (see JobRegister)
		if err := s.WaitConsistentRead(context.Background()); err != nil {
			return nil, err
		}
	}
	job, err := s.State().JobByID(nil, args.Namespace, args.JobID)
	if err != nil {
		return nil, err
	}
	if job == nil {
		return nil, structs.NotFoundf("job %q not found", args.JobID)
	}
	if args.EnforceIndex != 0 && args.EnforceIndex != job.JobModifyIndex {
		return nil, structs.BadRequestf("Enforcing job modify index %d: job exists with conflicting job modify index: %d", args.EnforceIndex, job.JobModifyIndex)
	}
	tg := job.LookupTaskGroup(args.Group)
	if tg == nil {
		return nil, structs.BadRequestf("task group %q specified for scaling does not exist in job", args.Group)
	}
	ev := &structs.ScalingEvent{
		Time: uint64(s.now().UnixNano()), PreviousCount: int64(tg.Count),
		Error: args.Error, Message: args.Message, Meta: args.Meta,
	}
	req := &structs.ScalingEventRequest{Namespace: job.Namespace, JobID: job.ID, Group: tg.Name, Event: ev, SubmitTime: s.now().UnixNano()}
	if args.Count != nil {
		if p := tg.Scaling; p != nil {
			if p.Max != nil && *args.Count > *p.Max {
				return nil, structs.BadRequestf("group count was greater than scaling policy maximum: %d > %d", *args.Count, *p.Max)
			}
			if *args.Count < p.Min {
				return nil, structs.BadRequestf("group count was less than scaling policy minimum: %d < %d", *args.Count, p.Min)
			}
		}
		if job.IsTemplate() {
			return nil, structs.BadRequestf("cannot scale a periodic or parameterized job")
		}
		// A new version would cancel the rollout in flight; an autoscaler
		// retries once it is over. Events without a count still record.
		d, err := s.State().LatestDeploymentByJobID(nil, job.Namespace, job.ID)
		if err != nil {
			return nil, err
		}
		if d != nil && d.Active() {
			return nil, structs.BadRequestf("job scaling blocked due to active deployment")
		}
		scaled := job.Copy()
		for i, g := range scaled.TaskGroups {
			if g.Name == tg.Name {
				c := *g
				c.Count = int(*args.Count)
				scaled.TaskGroups[i] = &c
			}
		}
		scaled.VersionTag = nil
		if err := scaled.Validate(); err != nil {
			return nil, &structs.RequestError{Kind: structs.ErrBadRequest, Msg: err.Error()}
		}
		count := *args.Count
		ev.Count = &count
		req.Job, req.BaseJobModifyIndex = scaled, job.JobModifyIndex
		req.Eval = s.newEval(scaled, structs.EvalTriggerScaling)
		evalID := req.Eval.ID
		ev.EvalID = &evalID
	}
	_, index, err := s.raftApply(structs.ScalingEventRequestType, req)
	if err != nil {
		return nil, err
	}
	reply := &JobScaleReply{JobModifyIndex: job.JobModifyIndex, Index: index}
	if req.Eval != nil {
		reply.EvalID, reply.EvalCreateIndex = req.Eval.ID, index
		if cur, err := s.State().JobByID(nil, job.Namespace, job.ID); err == nil && cur != nil {
			reply.JobModifyIndex = cur.JobModifyIndex
		}
	}
	return reply, nil
}
