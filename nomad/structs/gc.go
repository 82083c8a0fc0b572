package structs

// GCRequestType deletes what the garbage collector decided to collect
// (explicit value: message types are numbered per range, see messages.go).
const GCRequestType MessageType = 70

// GCRequest deletes terminal evaluations, allocations and deployments,
// stopped jobs and down nodes in one raft entry. The FSM checks each
// object again when it applies the entry and skips one that changed since
// the decision (a job registered again, a node back up) or that is gone.
type GCRequest struct {
	Evals       []string
	Allocs      []string
	Deployments []string
	// Jobs are purged with their versions and submissions when they are
	// still stopped at the JobModifyIndex recorded here.
	Jobs  []GCJob
	Nodes []string // deleted when still down
}

// GCJob names a stopped job to purge.
type GCJob struct {
	Namespace      string
	ID             string
	JobModifyIndex uint64
}

// Empty reports whether the request deletes nothing.
func (r *GCRequest) Empty() bool {
	return r == nil || len(r.Evals)+len(r.Allocs)+len(r.Deployments)+len(r.Jobs)+len(r.Nodes) == 0
}
