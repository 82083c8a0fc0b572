package structs

// Records of ahead-of-wave prefetch (see nomad/prefetch): the leader
// grants nodes leave to pull a deployment's images before their wave, the
// client pulls and reports back. They travel as JSON in the bodies
// wire.PrefetchDirectives and wire.PrefetchReportRequest over the internal
// endpoints /v1/internal/node/{id}/prefetch (GET: directives, blocking;
// PUT: reports).

// Prefetch states, as the leader records them for one node of one
// deployment and as the client reports them.
const (
	PrefetchStatePulling = "pulling" // granted, not reported yet
	PrefetchStateDone    = "done"    // every image is present on the node
	PrefetchStateFailed  = "failed"  // a pull failed or timed out
)

// PrefetchTask is one image a node is to pull: a task of the deployment's
// job version whose image differs from the one the node runs.
type PrefetchTask struct {
	Group  string
	Task   string
	Driver string
	// Image is config.image as the job version has it (a tag, or a pinned
	// name:tag@sha256:... reference).
	Image string
	// Config is the task's driver config block (auth, pull timeouts), to
	// pull with; never modified.
	Config map[string]any
}

// PrefetchDirective is one grant to a node: pull Tasks' images for
// DeploymentID now. A directive stays listed while the grant is pulling or
// done and the deployment is active; the client leases a pulled image while
// its directive is listed and cancels an unfinished pull whose directive is
// gone.
type PrefetchDirective struct {
	DeploymentID string
	Namespace    string
	JobID        string
	JobVersion   uint64
	// State is the leader's record: PrefetchStatePulling until the node
	// reports, then PrefetchStateDone.
	State string
	Tasks []*PrefetchTask
}

// PrefetchReport is a node's result for one directive.
type PrefetchReport struct {
	DeploymentID string
	State        string // PrefetchStateDone or PrefetchStateFailed
	Error        string // why it failed; "" when done
}
