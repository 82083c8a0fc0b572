package scheduler

import (
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/nomad/structs"
)

// State is the read-only view of the cluster a scheduler plans against.
// *state.Snapshot implements it.
type State interface {
	JobByID(ws memdb.WatchSet, namespace, id string) (*structs.Job, error)
	Nodes(ws memdb.WatchSet) ([]*structs.Node, error)
	AllocsByJob(ws memdb.WatchSet, namespace, jobID string, all bool) ([]*structs.Allocation, error)
	// AllocsByNode returns every allocation on the node, of any job,
	// terminal ones included.
	AllocsByNode(ws memdb.WatchSet, nodeID string) ([]*structs.Allocation, error)
	LatestDeploymentByJobID(ws memdb.WatchSet, namespace, jobID string) (*structs.Deployment, error)
	// JobVersionsByID returns the job's stored versions, newest first.
	JobVersionsByID(ws memdb.WatchSet, namespace, id string) ([]*structs.Job, error)
	LatestIndex() uint64
}

// Planner carries out a scheduler's decisions.
type Planner interface {
	// SubmitPlan submits plan to the applier. The result says what committed;
	// when the result's RefreshIndex is non-zero, newState is a fresher
	// snapshot the scheduler must re-plan against.
	SubmitPlan(plan *structs.Plan) (result *structs.PlanResult, newState State, err error)
	// UpdateEval records the evaluation's outcome.
	UpdateEval(eval *structs.Evaluation) error
	// CreateEval creates a follow-up evaluation.
	CreateEval(eval *structs.Evaluation) error
}

// Scheduler processes one evaluation.
type Scheduler interface {
	Process(eval *structs.Evaluation) error
}

// Factory builds a scheduler for one evaluation. now is the clock the
// scheduler's pure decision code receives.
type Factory func(logger hclog.Logger, state State, planner Planner, now func() time.Time) Scheduler

// BuiltinSchedulers maps a job type to its scheduler factory.
var BuiltinSchedulers = map[string]Factory{
	structs.JobTypeSystem:   NewSystemScheduler,
	structs.JobTypeSysBatch: NewSysBatchScheduler,
	structs.JobTypeService:  NewServiceScheduler,
	structs.JobTypeBatch:    NewBatchScheduler,
}

// New returns the scheduler for jobType.
func New(jobType string, logger hclog.Logger, state State, planner Planner, now func() time.Time) (Scheduler, error) {
	f, ok := BuiltinSchedulers[jobType]
	if !ok {
		return nil, fmt.Errorf("scheduler: unknown scheduler type %q", jobType)
	}
	return f(logger, state, planner, now), nil
}
