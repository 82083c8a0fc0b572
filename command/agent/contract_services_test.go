package agent

import (
	"context"
	"net/http"
	"net/url"
	"sort"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/wire"
)

// catalogJob is testJob("web") with a group service and a task service,
// neither naming a provider.
func catalogJob(id string) *api.Job {
	job := testJob(id)
	tg := job.TaskGroups[0]
	tg.Networks = []*api.NetworkResource{{DynamicPorts: []api.Port{{Label: "http"}}}}
	tg.Services = []*api.Service{{Name: "web", PortLabel: "http", Tags: []string{"edge"}}}
	tg.Tasks[0].Services = []*api.Service{{Name: "web-admin", Tags: []string{"admin"}}}
	return job
}

// catalogNode registers a node and job id on it; it returns the node's ID,
// its client (authenticated by the node secret) and the allocation.
func catalogNode(t *testing.T, ta *testAgent, c *api.Client, job *api.Job) (string, *api.Client, *wire.NodeAlloc) {
	t.Helper()
	nodeID, secret := ta.registerNodeWithSecret(t, "node-1")
	nc := ta.clientWith(t, secret)
	resp, _, err := c.Jobs().Register(job, nil)
	require.NoError(t, err)
	require.Contains(t, resp.Warnings, `group "web": service "web": no provider: registered in Drover's native service catalog (provider "nomad"); Nomad would have used Consul`)
	require.Contains(t, resp.Warnings, `task "server": service "web-admin": no provider`)
	require.Equal(t, "complete", waitEvalComplete(t, c, resp.EvalID).Status)
	var allocs []*wire.NodeAlloc
	_, err = nc.Raw().Query(wire.NodePath(wire.RouteNodeAllocs, nodeID), &allocs, nil)
	require.NoError(t, err)
	require.Len(t, allocs, 1)
	return nodeID, nc, allocs[0]
}

// advertise sends what allocation a advertises, as its client does.
func advertise(t *testing.T, nc *api.Client, nodeID, allocID string, regs ...*api.ServiceRegistration) {
	t.Helper()
	_, err := nc.Raw().Write(wire.NodePath(wire.RouteNodeServices, nodeID),
		&wire.NodeServicesRequest{Allocs: []*wire.AllocServices{{AllocID: allocID, Services: regs}}}, nil, nil)
	require.NoError(t, err)
}

func instance(allocID, name, port string, p int, tags ...string) *api.ServiceRegistration {
	return &api.ServiceRegistration{ID: "_nomad-task-" + allocID + "-group-web-" + name + "-" + port,
		ServiceName: name, Tags: tags, Address: "10.1.2.3", Port: p}
}

// TestContractServices_WhatNomadServiceReads: the api client's Services()
// as `nomad service list|info|delete` call it, and consumers' reads
// (filter, tag, choose, blocking), in Nomad's JSON.
func TestContractServices_WhatNomadServiceReads(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	stubs, meta, err := c.Services().List(nil)
	require.NoError(t, err)
	require.Empty(t, stubs)
	require.Equal(t, uint64(0), meta.LastIndex, "no registration ever written: index 0")

	nodeID, nc, alloc := catalogNode(t, ta, c, catalogJob("web"))
	advertise(t, nc, nodeID, alloc.ID,
		instance(alloc.ID, "web", "http", 23000, "edge", "v1"),
		instance(alloc.ID, "web", "alt", 23001, "edge"),
		instance(alloc.ID, "web-admin", "", 0, "admin"))

	stubs, meta, err = c.Services().List(nil)
	require.NoError(t, err)
	require.NotZero(t, meta.LastIndex)
	require.Equal(t, []*api.ServiceRegistrationListStub{{Namespace: "default", Services: []*api.ServiceRegistrationStub{
		{ServiceName: "web", Tags: []string{"edge", "v1"}},
		{ServiceName: "web-admin", Tags: []string{"admin"}},
	}}}, stubs, "grouped by namespace, tags merged without duplicates")
	all, _, err := c.Services().List(&api.QueryOptions{Namespace: "*"})
	require.NoError(t, err)
	require.Equal(t, stubs, all)

	regs, _, err := c.Services().Get("web", nil)
	require.NoError(t, err)
	require.Len(t, regs, 2)
	r := regs[1]
	require.Equal(t, &api.ServiceRegistration{
		ID: "_nomad-task-" + alloc.ID + "-group-web-web-http", ServiceName: "web", Namespace: "default",
		NodeID: nodeID, Datacenter: "dc1", JobID: "web", AllocID: alloc.ID, Tags: []string{"edge", "v1"},
		Address: "10.1.2.3", Port: 23000, CreateIndex: r.CreateIndex, ModifyIndex: r.ModifyIndex,
	}, r)
	require.NotZero(t, r.CreateIndex)

	// Nomad's JSON, field for field (what consul-template decodes).
	var raw []map[string]any
	_, err = c.Raw().Query("/v1/service/web", &raw, nil)
	require.NoError(t, err)
	keys := []string{}
	for k := range raw[0] {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	require.Equal(t, []string{"Address", "AllocID", "CreateIndex", "Datacenter", "ID", "JobID", "ModifyIndex",
		"Namespace", "NodeID", "Port", "ServiceName", "Tags"}, keys)

	tagged, _, err := c.Services().Get("web", &api.QueryOptions{Params: map[string]string{"tag": "v1"}})
	require.NoError(t, err)
	require.Len(t, tagged, 1)
	require.Equal(t, 23000, tagged[0].Port)
	filtered, _, err := c.Services().Get("web", &api.QueryOptions{Filter: `Port == 23001`})
	require.NoError(t, err)
	require.Len(t, filtered, 1)
	require.Equal(t, 23001, filtered[0].Port)
	chosen, _, err := c.Services().Get("web", &api.QueryOptions{Params: map[string]string{"choose": "1|my-key"}})
	require.NoError(t, err)
	require.Len(t, chosen, 1)
	again, _, err := c.Services().Get("web", &api.QueryOptions{Params: map[string]string{"choose": "1|my-key"}})
	require.NoError(t, err)
	require.Equal(t, chosen[0].ID, again[0].ID, "the same key chooses the same instance")
	_, _, err = c.Services().Get("web", &api.QueryOptions{Params: map[string]string{"choose": "one"}})
	requireStatus(t, err, http.StatusBadRequest, "")
	_, _, err = c.Services().Get("web", &api.QueryOptions{Filter: `Port ==`})
	requireStatus(t, err, http.StatusBadRequest, "")
	page, qm, err := c.Services().Get("web", &api.QueryOptions{PerPage: 1})
	require.NoError(t, err)
	require.Len(t, page, 1)
	require.Equal(t, regs[1].ID, qm.NextToken)
	none, _, err := c.Services().Get("nope", nil)
	require.NoError(t, err)
	require.Empty(t, none, "an unknown service is an empty list")

	// The services of a job and of an allocation.
	ofJob, _, err := c.Jobs().Services("web", nil)
	require.NoError(t, err)
	require.Len(t, ofJob, 3)
	ofAlloc, _, err := c.Allocations().Services(alloc.ID, nil)
	require.NoError(t, err)
	require.Equal(t, ofJob, ofAlloc)
	_, _, err = c.Jobs().Services("nope", nil)
	requireStatus(t, err, http.StatusNotFound, "job not found")
	_, _, err = c.Allocations().Services("00000000-0000-0000-0000-000000000000", nil)
	requireStatus(t, err, http.StatusNotFound, "alloc not found")

	// A blocking read is answered by the next change.
	_, qm, err = c.Services().Get("web", nil)
	require.NoError(t, err)
	type answer struct {
		regs []*api.ServiceRegistration
		meta *api.QueryMeta
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		regs, meta, err := c.Services().Get("web", &api.QueryOptions{WaitIndex: qm.LastIndex, WaitTime: 30 * time.Second})
		done <- answer{regs, meta, err}
	}()
	advertise(t, nc, nodeID, alloc.ID, instance(alloc.ID, "web", "http", 23000, "edge", "v1"))
	a := <-done
	require.NoError(t, a.err)
	require.Greater(t, a.meta.LastIndex, qm.LastIndex)
	require.Len(t, a.regs, 1, "the instance on alt and web-admin were taken back")

	// The event stream's Service topic, decoded by the api client.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	events, err := c.EventStream().Stream(ctx, map[api.Topic][]string{api.TopicService: {"*"}}, 0, nil)
	require.NoError(t, err)
	types := map[string]bool{}
	for !types["ServiceRegistration"] || !types["ServiceDeregistration"] {
		batch, ok := <-events
		require.True(t, ok, "the stream ended; seen %v", types)
		require.NoError(t, batch.Err)
		for _, e := range batch.Events {
			reg, err := e.Service()
			require.NoError(t, err)
			require.Equal(t, reg.ID, e.Key)
			require.Equal(t, alloc.ID, reg.AllocID)
			types[e.Type] = true
		}
	}
	cancel()

	// nomad service delete.
	_, err = c.Services().Delete("web", "missing", nil)
	requireStatus(t, err, http.StatusNotFound, "")
	wm, err := c.Services().Delete("web", a.regs[0].ID, nil)
	require.NoError(t, err)
	require.NotZero(t, wm.LastIndex)
	left, _, err := c.Services().Get("web", nil)
	require.NoError(t, err)
	require.Empty(t, left)

	// Stopping the job: the client reports the allocation over, and its
	// registrations go.
	advertise(t, nc, nodeID, alloc.ID, instance(alloc.ID, "web", "http", 23000))
	_, err = nc.Raw().Write(wire.NodePath(wire.RouteNodeAllocs, nodeID),
		&wire.AllocUpdateRequest{Allocs: []*api.Allocation{{ID: alloc.ID, ClientStatus: "complete"}}}, nil, nil)
	require.NoError(t, err)
	stubs, _, err = c.Services().List(nil)
	require.NoError(t, err)
	require.Empty(t, stubs)
	// And a late registration of an allocation that is over is not taken.
	advertise(t, nc, nodeID, alloc.ID, instance(alloc.ID, "web", "http", 23000))
	stubs, _, err = c.Services().List(nil)
	require.NoError(t, err)
	require.Empty(t, stubs)
}

// TestContractServices_ACL: reads need read-job in the namespace (a
// workload identity of the namespace has it), the all-namespaces list
// keeps what the token reads, a delete needs submit-job, and the internal
// route needs the node's secret.
func TestContractServices_ACL(t *testing.T) {
	ta := newACLTestAgent(t)
	c := ta.client
	require.Eventually(t, func() bool {
		k, err := ta.Server().State().ActiveRootKey(nil)
		return err == nil && k != nil
	}, 10*time.Second, 20*time.Millisecond)
	_, err := c.Namespaces().Register(&api.Namespace{Name: "team"}, nil)
	require.NoError(t, err)
	job := catalogJob("web")
	job.TaskGroups[0].Tasks[0].Identities = []*api.WorkloadIdentity{{Env: true}}
	nodeID, nc, alloc := catalogNode(t, ta.testAgent, c, job)
	advertise(t, nc, nodeID, alloc.ID, instance(alloc.ID, "web", "http", 23000))

	reader := ta.tokenFor(t, "reader", `namespace "default" { policy = "read" }`)
	other := ta.tokenFor(t, "other", `namespace "team" { policy = "write" }`)
	rc, oc := ta.clientWith(t, reader.SecretID), ta.clientWith(t, other.SecretID)

	regs, _, err := rc.Services().Get("web", nil)
	require.NoError(t, err)
	require.Len(t, regs, 1)
	_, err = rc.Services().Delete("web", regs[0].ID, nil)
	requireStatus(t, err, http.StatusForbidden, "")
	_, _, err = oc.Services().Get("web", nil)
	requireStatus(t, err, http.StatusForbidden, "")
	_, _, err = oc.Services().List(nil)
	requireStatus(t, err, http.StatusForbidden, "")
	theirs, _, err := oc.Services().List(&api.QueryOptions{Namespace: "*"})
	require.NoError(t, err)
	require.Empty(t, theirs, "the default namespace's services are filtered out")
	_, _, err = ta.clientWith(t, "").Services().List(nil)
	requireStatus(t, err, http.StatusForbidden, "")
	_, _, err = oc.Jobs().Services("web", nil)
	requireStatus(t, err, http.StatusForbidden, "")
	_, _, err = oc.Allocations().Services(alloc.ID, nil)
	requireStatus(t, err, http.StatusForbidden, "")
	ofAlloc, _, err := rc.Allocations().Services(alloc.ID, nil)
	require.NoError(t, err)
	require.Len(t, ofAlloc, 1)

	// The allocation's own workload identity reads its namespace.
	wi := alloc.SignedIdentities["server"]
	require.NotEmpty(t, wi)
	wc := ta.clientWith(t, wi)
	regs, _, err = wc.Services().Get("web", nil)
	require.NoError(t, err)
	require.Len(t, regs, 1)
	_, _, err = wc.Services().Get("web", &api.QueryOptions{Namespace: "team"})
	requireStatus(t, err, http.StatusForbidden, "")

	// Only the node's secret writes registrations.
	_, err = rc.Raw().Write(wire.NodePath(wire.RouteNodeServices, nodeID), &wire.NodeServicesRequest{}, nil, nil)
	requireStatus(t, err, http.StatusForbidden, "")
	_, err = c.Raw().Write("/v1/internal/node/"+url.PathEscape(nodeID)+"/services", &wire.NodeServicesRequest{}, nil, nil)
	requireStatus(t, err, http.StatusForbidden, "")

	_, err = c.Services().Delete("web", regs[0].ID, nil)
	require.NoError(t, err, "the management token deletes")
}
