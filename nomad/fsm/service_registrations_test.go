package fsm

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/stream"
	"github.com/drover-project/drover/nomad/structs"
)

// svcReg is a registration of service name by alloc a on node.
func svcReg(a *structs.Allocation, node, name string, port int) *structs.ServiceRegistration {
	return &structs.ServiceRegistration{
		ID: structs.ServiceRegistrationID(a.ID, a.TaskGroup, "server", name, "http"), ServiceName: name,
		Namespace: a.Namespace, NodeID: node, Datacenter: "dc1", JobID: a.JobID, AllocID: a.ID,
		Tags: []string{"v1"}, Address: "10.0.0.1", Port: port,
	}
}

// catalogFSM is an FSM with a node running two allocations of job "web"
// (indexes 1 to 3); edit, if set, changes the first before it is placed.
func catalogFSM(t *testing.T, edit func(a1 *structs.Allocation)) (*FSM, *structs.Node, *structs.Allocation, *structs.Allocation) {
	t.Helper()
	f := newFSM()
	node := testNode()
	mustApply(t, f, 1, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node})
	mustApply(t, f, 2, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: testJob("web")})
	stored, err := f.State().JobByID(nil, "", "web")
	require.NoError(t, err)
	a1, a2 := testAlloc(stored, node.ID), testAlloc(stored, node.ID)
	if edit != nil {
		edit(a1)
	}
	mustApply(t, f, 3, structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{
		Job: stored, AllocsUpdated: []*structs.Allocation{a1, a2}, UpdatedAt: 3,
	})
	return f, node, a1, a2
}

// TestServiceRegistrations_ApplyAndEvents: entries 102 and 103 write and
// delete registrations (an unchanged upsert writes nothing); an allocation
// its client reports over loses its registrations, and so does a node that
// goes down. Each change is a Service event: ServiceRegistration, or
// ServiceDeregistration for a removal, whatever entry removed it.
func TestServiceRegistrations_ApplyAndEvents(t *testing.T) {
	f, node, a1, a2 := catalogFSM(t, nil)
	r1, r2 := svcReg(a1, node.ID, "web", 8080), svcReg(a2, node.ID, "web", 8081)
	mustApply(t, f, 4, structs.ServiceRegistrationUpsertRequestType, &structs.ServiceRegistrationUpsertRequest{Services: []*structs.ServiceRegistration{r1, r2}})
	mustApply(t, f, 5, structs.ServiceRegistrationUpsertRequestType, &structs.ServiceRegistrationUpsertRequest{Services: []*structs.ServiceRegistration{r1}})
	moved := r1.Copy()
	moved.Port = 9090
	mustApply(t, f, 6, structs.ServiceRegistrationUpsertRequestType, &structs.ServiceRegistrationUpsertRequest{Services: []*structs.ServiceRegistration{moved}})

	got, err := f.State().ServiceRegistrationByID(nil, "default", r1.ID)
	require.NoError(t, err)
	require.Equal(t, 9090, got.Port)
	require.Equal(t, uint64(4), got.CreateIndex, "an update keeps the creation index")
	require.Equal(t, uint64(6), got.ModifyIndex)
	require.Equal(t, uint64(6), f.State().Index("service_registrations"), "the unchanged upsert at 5 wrote nothing")

	mustApply(t, f, 7, structs.ServiceRegistrationDeleteRequestType, &structs.ServiceRegistrationDeleteRequest{IDs: []string{r1.ID, "missing"}})
	regs, err := f.State().ServiceRegistrationsByName(nil, "default", "web")
	require.NoError(t, err)
	require.Equal(t, []string{r2.ID}, regIDs(regs))

	// a2's client reports it complete: its registrations go.
	mustApply(t, f, 8, structs.AllocClientUpdateRequestType, &structs.AllocClientUpdateRequest{
		Allocs: []*structs.Allocation{{ID: a2.ID, ClientStatus: structs.AllocClientStatusComplete}}, UpdatedAt: 8,
	})
	regs, err = f.State().ServiceRegistrationsByJob(nil, "default", "web")
	require.NoError(t, err)
	require.Empty(t, regs)

	// a1 registers again; its node goes down: gone.
	mustApply(t, f, 9, structs.ServiceRegistrationUpsertRequestType, &structs.ServiceRegistrationUpsertRequest{Services: []*structs.ServiceRegistration{r1}})
	mustApply(t, f, 10, structs.NodeUpdateStatusRequestType, &structs.NodeUpdateStatusRequest{NodeID: node.ID, Status: structs.NodeStatusDown, UpdatedAt: 10})
	regs, err = f.State().ServiceRegistrationsByNode(nil, node.ID)
	require.NoError(t, err)
	require.Empty(t, regs)

	type seen struct {
		index uint64
		typ   string
		id    string
	}
	want := []seen{
		{4, stream.TypeServiceRegistration, r1.ID}, {4, stream.TypeServiceRegistration, r2.ID},
		{6, stream.TypeServiceRegistration, r1.ID},
		{7, stream.TypeServiceDeregistration, r1.ID},
		{8, stream.TypeServiceDeregistration, r2.ID},
		{9, stream.TypeServiceRegistration, r1.ID},
		{10, stream.TypeServiceDeregistration, r1.ID},
	}
	sub := f.Events().Subscribe(stream.SubscribeRequest{Topics: map[stream.Topic][]string{stream.TopicService: {"*"}}, Namespace: "*"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var got2 []seen
	for len(got2) < len(want) {
		batch, err := sub.Next(ctx)
		require.NoError(t, err, "events so far: %v", got2)
		for _, e := range batch.Events {
			require.Equal(t, stream.TopicService, e.Topic)
			reg := e.Payload.(*structs.ServiceRegistration)
			require.Equal(t, reg.ID, e.Key, "keyed by registration ID")
			require.Equal(t, []string{"web", "web", reg.AllocID}, e.FilterKeys, "filtered by job, service name and allocation")
			got2 = append(got2, seen{e.Index, e.Type, reg.ID})
		}
	}
	require.ElementsMatch(t, want, got2)
}

// TestServiceRegistrations_GoWithCollectedAllocsAndNodes: garbage
// collection of an allocation, and the deletion of a node, delete their
// registrations in the same entry.
func TestServiceRegistrations_GoWithCollectedAllocsAndNodes(t *testing.T) {
	f, node, a1, a2 := catalogFSM(t, func(a1 *structs.Allocation) {
		a1.DesiredStatus = structs.AllocDesiredStatusStop
		a1.ClientStatus = structs.AllocClientStatusComplete
	})
	r1, r2 := svcReg(a1, node.ID, "web", 8080), svcReg(a2, node.ID, "api", 8081)
	mustApply(t, f, 4, structs.ServiceRegistrationUpsertRequestType, &structs.ServiceRegistrationUpsertRequest{Services: []*structs.ServiceRegistration{r1, r2}})

	mustApply(t, f, 5, structs.GCRequestType, &structs.GCRequest{Allocs: []string{a1.ID}})
	all, err := f.State().ServiceRegistrations(nil, "*")
	require.NoError(t, err)
	require.Equal(t, []string{r2.ID}, regIDs(all), "the collected allocation's registration went with it")

	mustApply(t, f, 6, structs.NodeDeregisterRequestType, &structs.NodeDeregisterRequest{NodeIDs: []string{node.ID}})
	all, err = f.State().ServiceRegistrations(nil, "*")
	require.NoError(t, err)
	require.Empty(t, all, "the deleted node's registration went with it")
}

func regIDs(regs []*structs.ServiceRegistration) []string {
	out := []string{}
	for _, r := range regs {
		out = append(out, r.ID)
	}
	return out
}
