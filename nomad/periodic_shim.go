package nomad

import (
	"context"
	"time"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/periodic"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// periodicBackend is the server side of periodic.Backend.
type periodicBackend struct{ s *Server }

var _ periodic.Backend = periodicBackend{}

func (b periodicBackend) State() *state.StateStore { return b.s.State() }

func (b periodicBackend) Now() time.Time { return b.s.now() }

func (b periodicBackend) Launch(job *structs.Job, at time.Time, skip bool) error {
	_, _, err := b.s.launchPeriodic(job, at, skip)
	return err
}

// runPeriodicDispatcher launches periodic children until ctx ends
// (leadership lost). The launch records are in raft, so a new leader
// continues where the old one stopped.
func (s *Server) runPeriodicDispatcher(ctx context.Context) {
	periodic.New(periodicBackend{s}, s.logger).Run(ctx)
}

// launchPeriodic records the launch of periodic job at time at and, unless
// skip, registers the child "<job>/periodic-<unix seconds>" with an
// evaluation, in one raft entry. A child of that ID that exists already
// (launched by an earlier leader whose record is older) is not registered
// again. It returns the evaluation (nil when none was created) and the
// raft index of the entry.
func (s *Server) launchPeriodic(job *structs.Job, at time.Time, skip bool) (*structs.Evaluation, uint64, error) {
	req := &structs.PeriodicLaunchRequest{
		Launch:     &structs.PeriodicLaunch{Namespace: job.Namespace, ID: job.ID, Launch: at.UTC()},
		SubmitTime: s.now().UnixNano(),
	}
	if !skip {
		id := structs.PeriodicChildID(job.ID, at)
		existing, err := s.State().JobByID(nil, job.Namespace, id)
		if err != nil {
			return nil, 0, err
		}
		if existing == nil {
			req.Child = job.DeriveChild(id)
			req.Eval = s.newEval(req.Child, structs.EvalTriggerPeriodicJob)
		}
	}
	_, index, err := s.raftApply(structs.PeriodicLaunchRequestType, req)
	if err != nil {
		return nil, 0, err
	}
	return req.Eval, index, nil
}

// maxForceSeconds bounds how far a forced launch steps past taken seconds.
const maxForceSeconds = 10

// PeriodicForceReply reports a forced periodic launch.
type PeriodicForceReply struct {
	EvalID          string
	EvalCreateIndex uint64
	Index           uint64
}

// PeriodicForce launches a child of periodic job (namespace, jobID) now,
// whatever its schedule and prohibit_overlap. Nomad's wording for refusals.
// caller needs submit-job in namespace (nil: ACLs disabled, or an internal
// caller).
func (s *Server) PeriodicForce(caller *acl.ACL, namespace, jobID string) (*PeriodicForceReply, error) {
	if err := requireNamespace(caller, namespace, acl.NamespaceCapabilitySubmitJob); err != nil {
		return nil, err
	}
	job, err := s.State().JobByID(nil, namespace, jobID)
	if err != nil {
		return nil, err
	}
	switch {
	case job == nil:
		return nil, structs.NotFoundf("job not found")
	case !job.IsPeriodic() || job.IsParameterized():
		return nil, structs.BadRequestf("can't force launch non-periodic job")
	case !job.Periodic.Enabled:
		return nil, structs.BadRequestf("can't force launch disabled periodic job")
	case job.Stop:
		return nil, structs.BadRequestf("can't force launch stopped periodic job")
	}
	// Child IDs carry the launch second: a force in the same second as a
	// scheduled launch (or another force) takes the next free second.
	at := s.now().UTC().Truncate(time.Second)
	for i := 0; ; i++ {
		existing, err := s.State().JobByID(nil, namespace, structs.PeriodicChildID(jobID, at))
		if err != nil {
			return nil, err
		}
		if existing == nil {
			break
		}
		if i == maxForceSeconds {
			return nil, structs.BadRequestf("periodic job %q was already launched at %s", jobID, at.Format(time.RFC3339))
		}
		at = at.Add(time.Second)
	}
	eval, index, err := s.launchPeriodic(job, at, false)
	if err != nil {
		return nil, err
	}
	return &PeriodicForceReply{EvalID: eval.ID, EvalCreateIndex: index, Index: index}, nil
}
