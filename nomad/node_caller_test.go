package nomad

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/mock"
	"github.com/drover-project/drover/nomad/structs"
)

// callerOf is the client agent of node n, with its secret.
func callerOf(n *structs.Node) NodeCaller {
	return NodeCaller{NodeID: n.ID, SecretID: n.SecretID}
}

// clientProtocolCalls are the server methods a client agent calls, each as
// caller c.
func clientProtocolCalls(srv *Server, allocID string) map[string]func(c NodeCaller) error {
	ctx := context.Background()
	report := []*structs.PrefetchReport{{DeploymentID: "d", State: structs.PrefetchStateDone}}
	return map[string]func(c NodeCaller) error{
		"heartbeat": func(c NodeCaller) error { return ignore3(srv.NodeHeartbeat(c, structs.NodeStatusReady)) },
		"client allocs": func(c NodeCaller) error {
			return ignore3(srv.NodeClientAllocs(ctx, c, QueryOptions{AllowStale: true}))
		},
		"alloc update": func(c NodeCaller) error {
			return ignore2(srv.NodeAllocUpdate(c, []*structs.Allocation{{ID: allocID, ClientStatus: structs.AllocClientStatusRunning}}))
		},
		"renew identities": func(c NodeCaller) error {
			return ignore2(srv.RenewIdentities(c, allocID, "server", []string{"default"}))
		},
		"prefetch directives": func(c NodeCaller) error {
			return ignore3(srv.PrefetchDirectives(ctx, c, 0, time.Millisecond))
		},
		"prefetch report":  func(c NodeCaller) error { return srv.PrefetchReport(c, report) },
		"services sync":    func(c NodeCaller) error { return ignore2(srv.NodeServicesSync(c, []AllocServices{{AllocID: allocID}})) },
		"resolve for node": func(c NodeCaller) error { return ignore3(srv.ResolveTokenForNode(c, "")) },
		"host volumes": func(c NodeCaller) error {
			return ignore3(srv.NodeHostVolumes(ctx, c, QueryOptions{AllowStale: true}))
		},
	}
}

// TestClientProtocol_AuthenticatesTheNode: every method of the client
// protocol refuses a caller without its node's secret (403) or of an
// unknown node (404) before it reads or writes anything, and serves the
// node with its secret.
func TestClientProtocol_AuthenticatesTheNode(t *testing.T) {
	srv := queryTestServer(t)
	node := seedNode(t, srv)
	job := mock.Job("web")
	job.TaskGroups[0].Tasks[0].Identity = &structs.WorkloadIdentity{Name: "default", Env: true, TTL: time.Hour}
	seedJob(t, srv, job)
	alloc := mock.Alloc(job, node.ID)
	applyOK(t, srv, structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{Job: job, AllocsUpdated: []*structs.Allocation{alloc}})

	for name, call := range clientProtocolCalls(srv, alloc.ID) {
		t.Run(name, func(t *testing.T) {
			before := srv.State().LatestIndex()
			err := call(NodeCaller{NodeID: node.ID, SecretID: "not-the-secret"})
			require.ErrorIs(t, err, structs.ErrForbidden)
			require.EqualError(t, err, structs.ErrPermissionDenied.Error())
			err = call(NodeCaller{NodeID: node.ID})
			require.ErrorIs(t, err, structs.ErrForbidden, "no secret")
			err = call(NodeCaller{NodeID: "no-such-node", SecretID: node.SecretID})
			require.ErrorIs(t, err, structs.ErrNotFound)
			require.Equal(t, before, srv.State().LatestIndex(), "a refused caller writes nothing")

			require.NoError(t, call(callerOf(node)))
		})
	}
}

// TestNodeAllocUpdate_OnlyTheNodesAllocations: a client may report only
// its own node's allocations, with a status a client may set; nothing of a
// refused batch is written.
func TestNodeAllocUpdate_OnlyTheNodesAllocations(t *testing.T) {
	srv := queryTestServer(t)
	node, other := seedNode(t, srv), seedNode(t, srv)
	job := mock.Job("web")
	seedJob(t, srv, job)
	mine, theirs := mock.Alloc(job, node.ID), mock.Alloc(job, other.ID)
	applyOK(t, srv, structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{Job: job, AllocsUpdated: []*structs.Allocation{mine, theirs}})

	before := srv.State().LatestIndex()
	_, err := srv.NodeAllocUpdate(callerOf(node), []*structs.Allocation{
		{ID: mine.ID, ClientStatus: structs.AllocClientStatusRunning},
		{ID: theirs.ID, ClientStatus: structs.AllocClientStatusFailed},
	})
	require.ErrorIs(t, err, structs.ErrBadRequest)
	require.ErrorContains(t, err, "does not belong to node")
	_, err = srv.NodeAllocUpdate(callerOf(node), []*structs.Allocation{{ID: mine.ID, ClientStatus: "evicted"}})
	require.ErrorIs(t, err, structs.ErrBadRequest)
	require.ErrorContains(t, err, `invalid ClientStatus "evicted"`)
	require.Equal(t, before, srv.State().LatestIndex(), "nothing of a refused batch is written")

	_, err = srv.NodeAllocUpdate(callerOf(node), []*structs.Allocation{{ID: mine.ID, ClientStatus: structs.AllocClientStatusRunning}})
	require.NoError(t, err)
	got, err := srv.State().AllocByID(nil, mine.ID)
	require.NoError(t, err)
	require.Equal(t, structs.AllocClientStatusRunning, got.ClientStatus)
}
