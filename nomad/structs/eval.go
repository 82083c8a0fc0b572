package structs

import "time"

// Evaluation is a request to reconcile a job with the cluster.
type Evaluation struct {
	ID                string
	Namespace         string
	Priority          int
	Type              string
	TriggeredBy       string
	JobID             string
	JobModifyIndex    uint64
	NodeID            string
	NodeModifyIndex   uint64
	DeploymentID      string
	Status            string
	StatusDescription string
	Wait              time.Duration
	WaitUntil         time.Time
	NextEval          string
	PreviousEval      string
	BlockedEval       string
	FailedTGAllocs    map[string]*AllocationMetric
	PlanAnnotations   *PlanAnnotations
	QueuedAllocations map[string]int
	SnapshotIndex     uint64
	CreateIndex       uint64
	ModifyIndex       uint64
	CreateTime        int64 // unix nanoseconds
	ModifyTime        int64 // unix nanoseconds
}

// Copy returns a shallow copy; maps are shared and must be replaced, not mutated.
func (e *Evaluation) Copy() *Evaluation {
	if e == nil {
		return nil
	}
	c := *e
	return &c
}

// Terminal reports whether the evaluation has finished.
func (e *Evaluation) Terminal() bool {
	switch e.Status {
	case EvalStatusComplete, EvalStatusFailed, EvalStatusCancelled:
		return true
	}
	return false
}

// PlanAnnotations describe what a plan would do, for `job plan` and `eval status`.
type PlanAnnotations struct {
	DesiredTGUpdates map[string]*DesiredUpdates
}

// DesiredUpdates counts the scheduler's intended changes to one task group.
type DesiredUpdates struct {
	Ignore            uint64
	Place             uint64
	Migrate           uint64
	Stop              uint64
	InPlaceUpdate     uint64
	DestructiveUpdate uint64
	Canary            uint64
	Preemptions       uint64
}
