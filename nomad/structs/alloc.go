package structs

import "time"

// Allocation is one placement of a task group on a node.
//
// Job is the job version the allocation runs. The state store fills it in on
// insert from the job versions table; plans and raft messages carry it once per
// plan, not per allocation.
type Allocation struct {
	ID                 string
	Namespace          string
	EvalID             string
	Name               string // "<job>.<group>[<index>]"
	NodeID             string
	NodeName           string
	JobID              string
	JobVersion         uint64
	Job                *Job `codec:"-"`
	TaskGroup          string
	AllocatedResources *AllocatedResources
	Metrics            *AllocationMetric
	DesiredStatus      string
	DesiredDescription string
	ClientStatus       string
	ClientDescription  string
	TaskStates         map[string]*TaskState
	DeploymentID       string
	DeploymentStatus   *AllocDeploymentStatus
	PreviousAllocation string
	NextAllocation     string
	FollowupEvalID     string
	RescheduleTracker  *RescheduleTracker
	CreateIndex        uint64
	ModifyIndex        uint64
	AllocModifyIndex   uint64
	CreateTime         int64 // unix nanoseconds
	ModifyTime         int64 // unix nanoseconds
	// SignedIdentities are the workload identity JWTs of the tasks that
	// have an identity block, by IdentityKey, signed by the leader when
	// the plan placing the allocation is committed. Never part of the
	// public API (api.Allocation has no such field); only the node that
	// runs the allocation receives them.
	SignedIdentities map[string]string
}

// Copy returns a copy whose top-level fields and maps may be changed freely.
func (a *Allocation) Copy() *Allocation {
	if a == nil {
		return nil
	}
	c := *a
	if a.TaskStates != nil {
		c.TaskStates = make(map[string]*TaskState, len(a.TaskStates))
		for k, v := range a.TaskStates {
			c.TaskStates[k] = v
		}
	}
	if a.DeploymentStatus != nil {
		ds := *a.DeploymentStatus
		c.DeploymentStatus = &ds
	}
	return &c
}

// ServerTerminal reports whether the server has asked the allocation to stop.
func (a *Allocation) ServerTerminal() bool {
	return a.DesiredStatus == AllocDesiredStatusStop || a.DesiredStatus == AllocDesiredStatusEvict
}

// ClientTerminal reports whether the client reports the allocation finished.
func (a *Allocation) ClientTerminal() bool {
	switch a.ClientStatus {
	case AllocClientStatusComplete, AllocClientStatusFailed, AllocClientStatusLost:
		return true
	}
	return false
}

// Terminal reports whether the allocation is stopped or finished.
func (a *Allocation) Terminal() bool { return a.ServerTerminal() || a.ClientTerminal() }

// RescheduleTracker lists the reschedules that led to an allocation, oldest
// first: each replacement of a failed allocation carries its predecessor's
// events plus one. It is never mutated once stored; replace it.
type RescheduleTracker struct {
	Events []*RescheduleEvent
}

// RescheduleEvent is one reschedule of a failed allocation.
type RescheduleEvent struct {
	RescheduleTime int64 // unix nanoseconds
	PrevAllocID    string
	PrevNodeID     string
}

// AllocDeploymentStatus is an allocation's health within its deployment.
type AllocDeploymentStatus struct {
	Healthy     *bool // nil until health is decided
	Timestamp   time.Time
	Canary      bool
	ModifyIndex uint64
}

// IsHealthy reports whether the allocation was marked healthy.
func (s *AllocDeploymentStatus) IsHealthy() bool { return s != nil && s.Healthy != nil && *s.Healthy }

// IsUnhealthy reports whether the allocation was marked unhealthy.
func (s *AllocDeploymentStatus) IsUnhealthy() bool {
	return s != nil && s.Healthy != nil && !*s.Healthy
}

// TaskState is a task's state on the client.
type TaskState struct {
	State       string // pending, running, dead
	Failed      bool
	Restarts    uint64
	LastRestart time.Time
	StartedAt   time.Time
	FinishedAt  time.Time
	Events      []*TaskEvent
}

// TaskEvent is one event in a task's history.
type TaskEvent struct {
	Type           string
	Time           int64 // unix nanoseconds
	DisplayMessage string
	Details        map[string]string
	Message        string
	FailsTask      bool
	ExitCode       int
	Signal         int
	KillTimeout    time.Duration
	DriverError    string
	SetupError     string
}

// AllocationMetric explains how the scheduler chose (or failed to choose) nodes.
type AllocationMetric struct {
	NodesEvaluated     int
	NodesFiltered      int
	NodesInPool        int
	NodePool           string
	NodesAvailable     map[string]int
	ClassFiltered      map[string]int
	ConstraintFiltered map[string]int
	NodesExhausted     int
	ClassExhausted     map[string]int
	DimensionExhausted map[string]int
	QuotaExhausted     []string
	AllocationTime     time.Duration
	CoalescedFailures  int
}
