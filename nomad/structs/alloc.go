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
	// DesiredTransition records what an operator asked of the allocation
	// beyond its desired status (alloc stop, job stop -no-shutdown-delay).
	DesiredTransition DesiredTransition
	// NetworkStatus is the allocation's network as its client set it up,
	// or nil before the client reported it.
	NetworkStatus *AllocNetworkStatus
	// DisconnectedAt is when (unix nanoseconds) a plan last marked the
	// allocation unknown or lost because its node stopped heartbeating; 0
	// when none did. Set by the state store on commit; not part of the
	// public API.
	DisconnectedAt   int64
	CreateIndex      uint64
	ModifyIndex      uint64
	AllocModifyIndex uint64
	CreateTime       int64 // unix nanoseconds
	ModifyTime       int64 // unix nanoseconds
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
	if a.NetworkStatus != nil {
		ns := *a.NetworkStatus
		c.NetworkStatus = &ns
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

// DesiredTransition is what an operator asked of an allocation besides
// stopping it. The flags only ever get set (Merge), never cleared.
type DesiredTransition struct {
	// Migrate: the allocation was stopped to be replaced (alloc stop); the
	// scheduler places its replacement, preferring another node.
	Migrate bool
	// Reschedule: the replacement counts as a reschedule of the
	// allocation (it extends its reschedule history).
	Reschedule bool
	// ForceReschedule: replace the allocation even if its reschedule
	// policy is exhausted.
	ForceReschedule bool
	// NoShutdownDelay: the client kills the tasks without waiting for the
	// group's and tasks' shutdown_delay.
	NoShutdownDelay bool
	// MigrateDisablePlacement: migrate without placing a replacement.
	MigrateDisablePlacement bool
}

// Merge returns t with every flag set in o also set.
func (t DesiredTransition) Merge(o DesiredTransition) DesiredTransition {
	t.Migrate = t.Migrate || o.Migrate
	t.Reschedule = t.Reschedule || o.Reschedule
	t.ForceReschedule = t.ForceReschedule || o.ForceReschedule
	t.NoShutdownDelay = t.NoShutdownDelay || o.NoShutdownDelay
	t.MigrateDisablePlacement = t.MigrateDisablePlacement || o.MigrateDisablePlacement
	return t
}

// AllocNetworkStatus is an allocation's network as its client set it up.
// With host networking (the only mode Drover's clients run) InterfaceName
// is empty and Address is the node's address the allocation's ports are on.
type AllocNetworkStatus struct {
	InterfaceName string
	Address       string
	AddressIPv6   string
}

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
	DownloadError  string // "Failed Artifact Download": why
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
	// ScoreMetaData holds the score of the node the allocation was placed
	// on (the generic scheduler's; a disconnect block's best_score compares
	// it); empty when none was recorded.
	ScoreMetaData []*NodeScoreMeta
}

// NodeScoreMeta is the score a node got for a placement.
type NodeScoreMeta struct {
	NodeID    string
	Scores    map[string]float64
	NormScore float64
}

// PlacementScore is the normalized score of the node m's allocation was
// placed on, and whether one was recorded.
func (m *AllocationMetric) PlacementScore() (float64, bool) {
	if m == nil || len(m.ScoreMetaData) == 0 || m.ScoreMetaData[0] == nil {
		return 0, false
	}
	best := m.ScoreMetaData[0].NormScore
	for _, s := range m.ScoreMetaData[1:] {
		if s != nil {
			best = max(best, s.NormScore)
		}
	}
	return best, true
}
