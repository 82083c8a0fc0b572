package agent

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad"
	"github.com/drover-project/drover/wire"
)

// identityJob is testJob with identity blocks on its task: the default
// identity (env and file) and a named one for an outside audience.
func identityJob(id string) *api.Job {
	job := testJob(id)
	job.TaskGroups[0].Tasks[0].Identities = []*api.WorkloadIdentity{
		{Env: true, File: true},
		{Name: "vault", Audience: []string{"vault.io"}, File: true, TTL: time.Hour},
	}
	return job
}

// TestContractIdentity_SignedOnPlacement: the leader signs each task's
// identities when the plan placing the allocation commits; the node that
// runs it receives them over its internal endpoint (and nobody else: the
// public allocation API has no such field); the default identity works as
// a token for its own job only; the named one is not a Drover token.
func TestContractIdentity_SignedOnPlacement(t *testing.T) {
	ta := newACLTestAgent(t)
	c := ta.client
	nodeSecret := uuid.NewString()
	nodeID := uuid.NewString()
	node := &api.Node{
		ID: nodeID, Name: "node-1", Datacenter: "dc1", NodePool: "default", Status: "ready",
		SchedulingEligibility: "eligible",
		Attributes:            map[string]string{"kernel.name": "linux", "os.name": "debian"},
		NodeResources: &api.NodeResources{Cpu: api.NodeCpuResources{CpuShares: 4000, TotalCpuCores: 4},
			Memory: api.NodeMemoryResources{MemoryMB: 8192}, Disk: api.NodeDiskResources{DiskMB: 100000}},
		ReservedResources: &api.NodeReservedResources{},
		Drivers:           map[string]*api.DriverInfo{"raw_exec": {Detected: true, Healthy: true}},
	}
	var out wire.NodeRegisterResponse
	_, err := c.Raw().Write("/v1/internal/node/register", &wire.NodeRegisterRequest{Node: node, SecretID: nodeSecret}, &out, nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		k, err := ta.Server().State().ActiveRootKey(nil)
		return err == nil && k != nil
	}, 10*time.Second, 20*time.Millisecond)

	for _, ns := range []string{"a", "b"} {
		_, err := c.Namespaces().Register(&api.Namespace{Name: ns}, nil)
		require.NoError(t, err)
	}
	job := identityJob("web")
	job.Namespace = new("a")
	resp, _, err := c.Jobs().Register(job, nil)
	require.NoError(t, err)
	require.Equal(t, "complete", waitEvalComplete(t, c, resp.EvalID).Status)
	registerIn(t, c, "b", "web") // the same job ID elsewhere, without identity

	allocs, _, err := c.Jobs().Allocations("web", false, &api.QueryOptions{Namespace: "a"})
	require.NoError(t, err)
	require.Len(t, allocs, 1)
	stored, err := ta.Server().State().AllocByID(nil, allocs[0].ID)
	require.NoError(t, err)
	require.Len(t, stored.SignedIdentities, 2, "the default and the named identity")
	def, named := stored.SignedIdentities["server"], stored.SignedIdentities["server/vault"]
	require.NotEmpty(t, def)
	require.NotEmpty(t, named)

	snap := ta.Server().State().Snapshot()
	claims, _, err := ta.Server().VerifyIdentity(snap, def)
	require.NoError(t, err)
	require.Equal(t, "a", claims.Namespace)
	require.Equal(t, stored.ID, claims.AllocationID)
	require.Equal(t, "global:a:web:web:server:default", claims.Subject)
	require.Nil(t, claims.Expiry, "the default identity has no ttl: no exp")
	require.Contains(t, claims.Audience, nomad.DefaultIdentityAudience)
	// The named identity is for vault.io, with a ttl: not a Drover token.
	_, _, err = ta.Server().VerifyIdentity(snap, named)
	require.Error(t, err)

	// The node receives them with its allocations; the public API does not
	// carry them.
	var nodeAllocs []*wire.NodeAlloc
	nc := ta.clientWith(t, nodeSecret)
	_, err = nc.Raw().Query("/v1/internal/node/"+url.PathEscape(nodeID)+"/allocs", &nodeAllocs, nil)
	require.NoError(t, err)
	var mine *wire.NodeAlloc
	for _, a := range nodeAllocs {
		if a.ID == stored.ID {
			mine = a
		}
	}
	require.NotNil(t, mine)
	require.Equal(t, stored.SignedIdentities, mine.SignedIdentities)
	// Each allocation carries its job (encoded once per job version) as
	// the public API gives it.
	var asAPI []*api.Allocation
	_, err = nc.Raw().Query("/v1/internal/node/"+url.PathEscape(nodeID)+"/allocs", &asAPI, nil)
	require.NoError(t, err)
	public, _, err := c.Allocations().Info(stored.ID, &api.QueryOptions{Namespace: "a"})
	require.NoError(t, err)
	require.NotNil(t, public.Job)
	for _, a := range asAPI {
		if a.ID == stored.ID {
			require.Equal(t, public.Job, a.Job)
		}
	}
	var raw map[string]any
	_, err = c.Raw().Query("/v1/allocation/"+stored.ID, &raw, &api.QueryOptions{Namespace: "a"})
	require.NoError(t, err)
	require.NotContains(t, raw, "SignedIdentities")

	// The default identity reads its own job and nothing else.
	wc := ta.clientWith(t, def)
	_, _, err = wc.Jobs().Info("web", &api.QueryOptions{Namespace: "a"})
	require.NoError(t, err)
	_, _, err = wc.Jobs().Info("web", &api.QueryOptions{Namespace: "b"})
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
	_, _, err = ta.clientWith(t, named).Jobs().Info("web", &api.QueryOptions{Namespace: "a"})
	requireStatus(t, err, http.StatusForbidden, "")

	// The node has them signed again (renewal of identities with a ttl):
	// new tokens, which verify as the first did; only for its own
	// allocations and the identities the task declares.
	renewPath := "/v1/internal/node/" + url.PathEscape(nodeID) + "/identities"
	var renewed wire.IdentityRenewResponse
	_, err = nc.Raw().Write(renewPath, &wire.IdentityRenewRequest{AllocID: stored.ID, Task: "server",
		Identities: []string{"default", "vault"}}, &renewed, nil)
	require.NoError(t, err)
	require.Len(t, renewed.Tokens, 2)
	require.NotEqual(t, def, renewed.Tokens["server"])
	require.NotEqual(t, named, renewed.Tokens["server/vault"])
	rc, _, err := ta.Server().VerifyIdentity(ta.Server().State().Snapshot(), renewed.Tokens["server"])
	require.NoError(t, err)
	require.Equal(t, claims.Subject, rc.Subject)
	_, _, err = ta.clientWith(t, renewed.Tokens["server"]).Jobs().Info("web", &api.QueryOptions{Namespace: "a"})
	require.NoError(t, err)
	_, err = nc.Raw().Write(renewPath, &wire.IdentityRenewRequest{AllocID: stored.ID, Task: "server",
		Identities: []string{"nope"}}, &renewed, nil)
	requireStatus(t, err, http.StatusBadRequest, `task "server" has no identity "nope"`)
	_, err = ta.clientWith(t, def).Raw().Write(renewPath, &wire.IdentityRenewRequest{AllocID: stored.ID, Task: "server",
		Identities: []string{"default"}}, &renewed, nil)
	requireStatus(t, err, http.StatusForbidden, "")

	// An in-place update keeps the signed identities; a change of the
	// identity block replaces the allocation, which gets new ones.
	job2 := identityJob("web")
	job2.Namespace = new("a")
	job2.Meta = map[string]string{"rev": "2"}
	resp, _, err = c.Jobs().Register(job2, nil)
	require.NoError(t, err)
	require.Equal(t, "complete", waitEvalComplete(t, c, resp.EvalID).Status)
	kept, err := ta.Server().State().AllocByID(nil, stored.ID)
	require.NoError(t, err)
	require.False(t, kept.ServerTerminal())
	require.Equal(t, stored.SignedIdentities, kept.SignedIdentities)
}

// TestContractIdentity_InvalidBlock400: a bad identity block is refused
// with 400 naming the task and the field; nothing is written.
func TestContractIdentity_InvalidBlock400(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	job := testJob("bad")
	job.TaskGroups[0].Tasks[0].Identities = []*api.WorkloadIdentity{{Env: true, TTL: -time.Second}, {ChangeMode: "boom"}}
	_, _, err := c.Jobs().Register(job, nil)
	requireStatus(t, err, http.StatusBadRequest, `task "server": identity: ttl must not be negative, got -1s`)
	requireStatus(t, err, http.StatusBadRequest, `identity 1: only one identity block may omit name (or use "default")`)
	_, _, err = c.Jobs().Info("bad", nil)
	requireStatus(t, err, http.StatusNotFound, "")
}

// TestContractACLResolve_ForClients: a client agent (its node secret)
// learns the rights of a caller's token in a namespace; a wrong node
// secret, or an unknown token, is refused.
func TestContractACLResolve_ForClients(t *testing.T) {
	ta := newACLTestAgent(t)
	c := ta.client
	nodeSecret, nodeID := uuid.NewString(), uuid.NewString()
	var out wire.NodeRegisterResponse
	_, err := c.Raw().Write("/v1/internal/node/register", &wire.NodeRegisterRequest{Node: &api.Node{
		ID: nodeID, Name: "n", Datacenter: "dc1", NodePool: "default", Status: "ready", SchedulingEligibility: "eligible",
		NodeResources: &api.NodeResources{}, ReservedResources: &api.NodeReservedResources{},
	}, SecretID: nodeSecret}, &out, nil)
	require.NoError(t, err)
	logsTok := ta.tokenFor(t, "logs-a", `namespace "a" { capabilities = ["read-logs"] }`)

	path := "/v1/internal/node/" + nodeID + "/acl/resolve"
	resolve := func(nodeToken, secret, ns string) (*wire.ACLResolveResponse, error) {
		var resp wire.ACLResolveResponse
		_, err := ta.clientWith(t, nodeToken).Raw().Write(path, &wire.ACLResolveRequest{SecretID: secret, Namespace: ns}, &resp, nil)
		return &resp, err
	}
	r, err := resolve(nodeSecret, logsTok.SecretID, "a")
	require.NoError(t, err)
	require.Equal(t, &wire.ACLResolveResponse{ACLEnabled: true, Capabilities: []string{"read-logs"}}, r)
	r, err = resolve(nodeSecret, logsTok.SecretID, "b")
	require.NoError(t, err)
	require.Empty(t, r.Capabilities)
	r, err = resolve(nodeSecret, ta.root.SecretID, "b")
	require.NoError(t, err)
	require.True(t, r.Management)
	require.True(t, r.NodeRead)
	_, err = resolve(nodeSecret, uuid.NewString(), "a")
	requireStatus(t, err, http.StatusForbidden, "ACL token not found")
	_, err = resolve(logsTok.SecretID, logsTok.SecretID, "a") // not the node's secret
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
}
