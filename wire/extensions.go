package wire

import (
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/nomad/structs"
)

// Drover's extensions of the Nomad HTTP API.

// ImageUpdates is the body of GET /v1/job/:id/image-updates and of PUT
// /v1/job/:id/image-updates/check, .../clear-bad and .../approve: the image state of
// every Docker task of the job's current version (`drover job
// image-updates`).
type ImageUpdates struct {
	Namespace string
	JobID     string
	Version   uint64
	Tasks     []structs.ImageTaskStatus
}

// ImageClearBadRequest is the body of PUT /v1/job/:id/image-updates/clear-bad.
type ImageClearBadRequest struct {
	// Digest is the bad digest to clear ("sha256:…").
	Digest string
}

// ImageApproveRequest is the body of PUT /v1/job/:id/image-updates/approve.
type ImageApproveRequest struct {
	// Digest, when set, must be the digest pending approval ("sha256:…");
	// empty approves what is pending now.
	Digest string
}

// RolloutAllocColumns and RolloutNodeColumns name the columns of the rows
// of RolloutView, in order.
var (
	RolloutAllocColumns = []string{"ID", "NodeID", "NodeName", "JobVersion", "ClientStatus", "DesiredStatus",
		"Healthy", "Canary", "CreateIndex", "CreateTime", "DeploymentID", "LastEvent", "LastEventPhase"}
	RolloutNodeColumns = []string{"ID", "Name", "Status", "SchedulingEligibility", "Datacenter", "NodePool"}
)

// RolloutView is the answer of GET /v1/job/{id}/rollout: what the web UI's
// rollout view draws, in one read. Rows are arrays (columns named by
// AllocColumns and NodeColumns) so that 10,000 nodes stay a small answer.
type RolloutView struct {
	Job          *api.Job
	Deployment   *api.Deployment
	AllocColumns []string
	Allocs       [][]any
	// NodeColumns and Nodes are present only for a token that may read
	// nodes (every node, as the view also shows nodes the job may still
	// be placed on).
	NodeColumns []string `json:",omitempty"`
	Nodes       [][]any  `json:",omitempty"`
	// Gates are the gate records of the deployment's groups that have
	// one (metric and webhook gates), by group.
	Gates map[string]*structs.DeploymentGate `json:",omitempty"`
}

// DeploymentGates is the answer of GET /v1/deployment/gates/{id}
// (RouteDeploymentGates): the gate records of the deployment's groups that
// have one, by group (`drover deployment status` shows them).
type DeploymentGates struct {
	DeploymentID string
	Gates        map[string]*structs.DeploymentGate
}

// RouteDeploymentGates is the path of DeploymentGates, with the
// deployment's ID appended.
const RouteDeploymentGates = "/v1/deployment/gates/"

// GatesOf returns the gate records of d's groups that have one (nil when
// none).
func GatesOf(d *structs.Deployment) map[string]*structs.DeploymentGate {
	var out map[string]*structs.DeploymentGate
	if d == nil {
		return nil
	}
	for name, st := range d.TaskGroups {
		if st == nil || st.Gate == nil {
			continue
		}
		if out == nil {
			out = map[string]*structs.DeploymentGate{}
		}
		out[name] = st.Gate
	}
	return out
}

// PrefetchDirectives is the answer of GET /v1/internal/node/{id}/prefetch
// (RouteNodePrefetch): the node's directives (the leader's records, see
// nomad/prefetch).
type PrefetchDirectives struct {
	Directives []*structs.PrefetchDirective
	// Index advances whenever the node's directives change; it is the
	// blocking query's index (X-Nomad-Index carries it too).
	Index uint64
}

// PrefetchReportRequest is the body of PUT /v1/internal/node/{id}/prefetch.
type PrefetchReportRequest struct {
	Reports []*structs.PrefetchReport
}
