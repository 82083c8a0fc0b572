package wire

import (
	"encoding/json"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/nomad/structs"
)

// Routes of the internal client protocol, as the server's route table
// registers them ({id} is the node's ID). Every call is authenticated by the
// node's secret ID in X-Nomad-Token. NodePath fills in the ID.
const (
	// RouteNodeRegister (PUT NodeRegisterRequest, answer
	// NodeRegisterResponse) registers or re-registers a node.
	RouteNodeRegister = "/v1/internal/node/register"
	// RouteNodeHeartbeat (PUT NodeHeartbeatRequest, answer
	// NodeHeartbeatResponse) keeps the node alive.
	RouteNodeHeartbeat = "/v1/internal/node/{id}/heartbeat"
	// RouteNodeAllocs is, with GET, the node's blocking query for its
	// allocations (?index=&wait=, answer []*NodeAlloc, X-Nomad-Index) and,
	// with PUT (AllocUpdateRequest, answer api.WriteMeta), the node's
	// status reports.
	RouteNodeAllocs = "/v1/internal/node/{id}/allocs"
	// RouteNodePrefetch is, with GET, the node's blocking query for its
	// prefetch directives (answer PrefetchDirectives) and, with PUT
	// (PrefetchReportRequest, empty answer), its prefetch reports.
	RouteNodePrefetch = "/v1/internal/node/{id}/prefetch"
	// RouteNodeACLResolve (PUT ACLResolveRequest, answer
	// ACLResolveResponse) resolves a caller's token for the client agent's
	// own endpoints.
	RouteNodeACLResolve = "/v1/internal/node/{id}/acl/resolve"
	// RouteNodeIdentities (PUT IdentityRenewRequest, answer
	// IdentityRenewResponse) signs again workload identities of a task
	// the node runs, for identities with a ttl that near their expiry.
	RouteNodeIdentities = "/v1/internal/node/{id}/identities"

	// RouteNodeServices (PUT NodeServicesRequest, answer api.WriteMeta)
	// sets the native service catalog's registrations of the node's
	// allocations listed.
	RouteNodeServices = "/v1/internal/node/{id}/services"

	// RouteNodeHostVolumes is, with GET, the node's blocking query for the
	// dynamic host volumes placed on it (?index=&wait=, answer
	// []*structs.HostVolume, X-Nomad-Index).
	RouteNodeHostVolumes = "/v1/internal/node/{id}/host-volumes"
)

// NodePath is route with {id} replaced by the path-escaped nodeID.
func NodePath(route, nodeID string) string {
	return strings.Replace(route, "{id}", url.PathEscape(nodeID), 1)
}

// NodeRegisterRequest is the body of a node registration.
type NodeRegisterRequest struct {
	Node *api.Node
	// SecretID authenticates the node; api.Node does not carry it.
	SecretID string
	// IntroToken is the client introduction token the node was started
	// with (client intro_token, NOMAD_CLIENT_INTRO_TOKEN); see the
	// server's client_introduction enforcement.
	IntroToken string `json:",omitempty"`
	// NodeNetworks are the addresses the node's host networks resolved to
	// (Node.NodeResources.NodeNetworks), which api.NodeResources does not
	// carry.
	NodeNetworks []*structs.NodeNetworkResource `json:",omitempty"`
}

// NodeRegisterResponse answers a node registration.
type NodeRegisterResponse struct {
	EvalIDs      []string
	Index        uint64
	HeartbeatTTL time.Duration
}

// NodeHeartbeatRequest is the body of a heartbeat: the node's status.
type NodeHeartbeatRequest struct {
	Status string
}

// NodeHeartbeatResponse tells the node when to heartbeat next.
type NodeHeartbeatResponse struct {
	HeartbeatTTL time.Duration
	Index        uint64
}

// NodeAlloc is an allocation as its node receives it: the api form plus
// the workload identities signed for its tasks, which only this node
// (authenticated by its secret) ever receives. Job is the api form of the
// allocation's job (an api.Job), encoded by the server once per stored job
// version: at the outer level it stands in for the embedded
// Allocation.Job, so the JSON is api.Allocation's. A receiver decodes Job
// itself (DecodeJob), or keeps it encoded to share it between allocations.
type NodeAlloc struct {
	*api.Allocation
	Job              json.RawMessage
	SignedIdentities map[string]string `json:",omitempty"`
	// PreviousNodeAddr and MigrateToken, for an allocation whose group's
	// ephemeral disk migrates from another node: the HTTP address of the
	// node that ran the previous allocation and the token that node
	// accepts for it (structs.MigrateToken).
	PreviousNodeAddr string `json:",omitempty"`
	MigrateToken     string `json:",omitempty"`
}

// DecodeJob decodes Job into Allocation.Job (nil for an absent or null job).
func (a *NodeAlloc) DecodeJob() error {
	if a.Allocation == nil {
		a.Allocation = new(api.Allocation)
	}
	if len(a.Job) == 0 {
		a.Allocation.Job = nil
		return nil
	}
	return json.Unmarshal(a.Job, &a.Allocation.Job)
}

// AllocUpdateRequest is the body of a node's status reports: per allocation
// the fields a client reports (apiconv.AllocUpdateToAPI).
type AllocUpdateRequest struct {
	Allocs []*api.Allocation
}

// ACLResolveRequest is what a client agent asks about a caller of its own
// /v1/client/* endpoints: the caller's secret and the namespace of the
// allocation it wants.
type ACLResolveRequest struct {
	SecretID  string
	Namespace string
}

// ACLResolveResponse is the caller's rights that a client agent checks:
// whether ACLs are on at all, and the capabilities its endpoints need.
type ACLResolveResponse struct {
	ACLEnabled bool
	Management bool
	// Capabilities are those the client endpoints require (read-job,
	// read-logs, read-fs) that the token holds in the namespace.
	Capabilities []string
	NodeRead     bool
}

// IdentityRenewRequest asks for new signatures of the workload identities
// named in Identities ("default" for the default one) of task Task in
// allocation AllocID.
type IdentityRenewRequest struct {
	AllocID    string
	Task       string
	Identities []string
}

// IdentityRenewResponse holds the new tokens, keyed as
// NodeAlloc.SignedIdentities is (structs.IdentityKey).
type IdentityRenewResponse struct {
	Tokens map[string]string
}

// NodeServicesRequest is the body of a node's service registrations: for
// each allocation listed, the registrations it advertises now (an empty
// list removes them all). The server fills in the namespace, job, node and
// datacenter from its own records.
type NodeServicesRequest struct {
	Allocs []*AllocServices
}

// AllocServices is one allocation's registrations, in the api form.
type AllocServices struct {
	AllocID  string
	Services []*api.ServiceRegistration
}
