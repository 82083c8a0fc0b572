package scheduler

import (
	"fmt"

	"github.com/drover-project/drover/nomad/structs"
)

// jobState is what both schedulers read of an evaluation's job.
type jobState struct {
	index           uint64
	job             *structs.Job // nil when the job is gone or not runnable
	allocs          []*structs.Allocation
	nodes           []*structs.Node
	deployment      *structs.Deployment // the job's latest
	revertsToStable bool
}

// readJobState reads the job of eval (runnable or nil), its allocations of
// every incarnation, every node, its latest deployment, and whether its
// current version is a revert to a stable one.
func readJobState(state State, eval *structs.Evaluation) (jobState, error) {
	js := jobState{index: state.LatestIndex()}
	job, err := state.JobByID(nil, eval.Namespace, eval.JobID)
	if err != nil {
		return js, fmt.Errorf("scheduler: read job %q: %w", eval.JobID, err)
	}
	js.job = runnable(job)
	if js.allocs, err = state.AllocsByJob(nil, eval.Namespace, eval.JobID, true); err != nil {
		return js, fmt.Errorf("scheduler: read allocs of job %q: %w", eval.JobID, err)
	}
	if js.nodes, err = state.Nodes(nil); err != nil {
		return js, fmt.Errorf("scheduler: read nodes: %w", err)
	}
	if js.deployment, err = state.LatestDeploymentByJobID(nil, eval.Namespace, eval.JobID); err != nil {
		return js, fmt.Errorf("scheduler: read deployment of job %q: %w", eval.JobID, err)
	}
	if js.job != nil {
		versions, err := state.JobVersionsByID(nil, eval.Namespace, eval.JobID)
		if err != nil {
			return js, fmt.Errorf("scheduler: read versions of job %q: %w", eval.JobID, err)
		}
		js.revertsToStable = revertsToStable(js.job, versions)
	}
	return js, nil
}

// revertsToStable reports whether job's spec equals an earlier stable
// version's.
func revertsToStable(job *structs.Job, versions []*structs.Job) bool {
	for _, v := range versions {
		if v.Version < job.Version && v.Stable && !v.SpecChanged(job) {
			return true
		}
	}
	return false
}
