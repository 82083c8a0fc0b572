package structs

import "time"

// Deployment tracks the rollout of one job version.
type Deployment struct {
	ID                 string
	Namespace          string
	JobID              string
	JobVersion         uint64
	JobModifyIndex     uint64
	JobSpecModifyIndex uint64
	JobCreateIndex     uint64
	TaskGroups         map[string]*DeploymentState
	Status             string
	StatusDescription  string
	CreateIndex        uint64
	ModifyIndex        uint64
	CreateTime         int64 // unix nanoseconds
	ModifyTime         int64 // unix nanoseconds
}

// Active reports whether the deployment is still rolling out (running or paused).
func (d *Deployment) Active() bool {
	switch d.Status {
	case DeploymentStatusRunning, DeploymentStatusPaused, DeploymentStatusPending,
		DeploymentStatusBlocked, DeploymentStatusUnblocking:
		return true
	}
	return false
}

// Copy returns a copy whose TaskGroups map and states may be changed freely.
func (d *Deployment) Copy() *Deployment {
	if d == nil {
		return nil
	}
	c := *d
	c.TaskGroups = make(map[string]*DeploymentState, len(d.TaskGroups))
	for k, v := range d.TaskGroups {
		if v == nil {
			c.TaskGroups[k] = nil
			continue
		}
		s := *v
		s.PlacedCanaries = append([]string(nil), v.PlacedCanaries...)
		s.Gate = v.Gate.Copy()
		c.TaskGroups[k] = &s
	}
	return &c
}

// DeploymentState is a task group's progress within a deployment.
type DeploymentState struct {
	PlacedCanaries    []string
	AutoRevert        bool
	AutoPromote       bool
	ProgressDeadline  time.Duration
	RequireProgressBy time.Time
	Promoted          bool
	DesiredCanaries   int
	DesiredTotal      int
	PlacedAllocs      int
	HealthyAllocs     int
	UnhealthyAllocs   int
	// SignalsAtResume are the group's rollout signal counts
	// (GroupRolloutSignals) when the deployment last resumed from a pause;
	// drover.auto_pause_on pauses again only on counts above them. Set by
	// the state store; never mutated once stored, replaced.
	SignalsAtResume map[string]int `json:",omitempty"`
	// Gate is the state of the group's metric and webhook gates
	// (drover_gates.go), written by the deployment watcher; nil until a
	// gate of the group first answered. Never mutated once stored,
	// replaced.
	Gate *DeploymentGate `json:",omitempty"`
}

// DeploymentComplete reports whether every group of d has at least
// DesiredTotal healthy allocations and, when it had canaries, was
// promoted. It does not look at d's status; the deployment watcher calls
// it to decide success, and the scheduler to know a rollout has nothing
// left to place. A nil group state counts as complete; a nil
// deployment is not.
func DeploymentComplete(d *Deployment) bool {
	if d == nil {
		return false
	}
	for _, st := range d.TaskGroups {
		if st == nil {
			continue
		}
		if st.HealthyAllocs < st.DesiredTotal || (st.DesiredCanaries > 0 && !st.Promoted) {
			return false
		}
	}
	return true
}

// CountsHealthy reports whether a counts toward its deployment group's
// HealthyAllocs: it is marked healthy and its node has not gone away
// (client status lost: the node went down or missed lost_after; unknown:
// the node is disconnected). The state store recounts by this rule
// (nomad/state/deployment_health.go).
//
// Assumptions: DesiredTotal leaves out down and disconnected nodes (the
// scheduler recounts it at every evaluation), so their allocations must
// leave HealthyAllocs too; otherwise a deployment completes before its
// last nodes are updated, and those are then updated without a
// deployment. An unknown allocation whose node reconnects runs again
// and counts again. A replaced allocation (NextAllocation set: it failed
// after it was healthy and was rescheduled, or was migrated) leaves the
// count: its replacement counts once it is healthy, so one slot is never
// counted twice (a system job whose allocation failed on a node after
// becoming healthy and was replaced there would otherwise complete its
// deployment while another node still runs the old version).
func CountsHealthy(a *Allocation) bool {
	return a.DeploymentStatus.IsHealthy() && a.NextAllocation == "" &&
		a.ClientStatus != AllocClientStatusLost && a.ClientStatus != AllocClientStatusUnknown
}
