package structs

// Plan is a scheduler's proposed change to the cluster for one evaluation.
// The plan applier re-checks it against the newest state before committing.
type Plan struct {
	EvalID   string
	Priority int
	Job      *Job // the job version new allocations run
	// NodeUpdate lists allocations to stop, by node.
	NodeUpdate map[string][]*Allocation
	// NodeAllocation lists allocations to create or update in place, by node.
	NodeAllocation map[string][]*Allocation
	// Deployment is created or updated with the plan, or nil.
	Deployment *Deployment
	// DeploymentUpdates change the status of other deployments (for example
	// cancelling the previous version's).
	DeploymentUpdates []*DeploymentStatusUpdate
	Annotations       *PlanAnnotations
	// SnapshotIndex is the state index the scheduler planned against.
	SnapshotIndex uint64
}

// IsNoOp reports whether the plan changes nothing.
func (p *Plan) IsNoOp() bool {
	return len(p.NodeUpdate) == 0 && len(p.NodeAllocation) == 0 &&
		p.Deployment == nil && len(p.DeploymentUpdates) == 0
}

// AppendStop adds a stop of alloc with the given description.
func (p *Plan) AppendStop(alloc *Allocation, desc string) {
	c := alloc.Copy()
	c.DesiredStatus = AllocDesiredStatusStop
	c.DesiredDescription = desc
	c.Job = nil
	if p.NodeUpdate == nil {
		p.NodeUpdate = map[string][]*Allocation{}
	}
	p.NodeUpdate[alloc.NodeID] = append(p.NodeUpdate[alloc.NodeID], c)
}

// AppendAlloc adds a new or in-place updated allocation.
func (p *Plan) AppendAlloc(alloc *Allocation) {
	if p.NodeAllocation == nil {
		p.NodeAllocation = map[string][]*Allocation{}
	}
	p.NodeAllocation[alloc.NodeID] = append(p.NodeAllocation[alloc.NodeID], alloc)
}

// PlanResult is what the applier committed.
type PlanResult struct {
	NodeUpdate        map[string][]*Allocation
	NodeAllocation    map[string][]*Allocation
	Deployment        *Deployment
	DeploymentUpdates []*DeploymentStatusUpdate
	// RefreshIndex is non-zero when part of the plan was rejected: the
	// scheduler must refresh its state to at least this index and retry.
	RefreshIndex uint64
	// AllocIndex is the raft index the plan committed at.
	AllocIndex uint64
}

// FullCommit reports whether every part of plan was committed.
func (r *PlanResult) FullCommit(plan *Plan) bool {
	count := func(m map[string][]*Allocation) int {
		n := 0
		for _, l := range m {
			n += len(l)
		}
		return n
	}
	return count(r.NodeUpdate) == count(plan.NodeUpdate) && count(r.NodeAllocation) == count(plan.NodeAllocation)
}

// DeploymentStatusUpdate changes a deployment's status.
type DeploymentStatusUpdate struct {
	DeploymentID      string
	Status            string
	StatusDescription string
	// Gates, when not nil, replace the gate records of the named groups
	// (the deployment watcher's; see DeploymentGate).
	Gates map[string]*DeploymentGate `json:",omitempty"`
}
