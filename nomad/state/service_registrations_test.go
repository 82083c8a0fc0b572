package state

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

func reg(ns, name, id, alloc, node, job string) *structs.ServiceRegistration {
	return &structs.ServiceRegistration{ID: id, ServiceName: name, Namespace: ns, AllocID: alloc, NodeID: node, JobID: job}
}

func regIDs(regs []*structs.ServiceRegistration) []string {
	out := []string{}
	for _, r := range regs {
		out = append(out, r.ID)
	}
	return out
}

// TestServiceRegistrations_Indexes: the readers by namespace, service
// name, ID, allocation, node and job, in namespace, name and ID order.
func TestServiceRegistrations_Indexes(t *testing.T) {
	s, _ := catalogStore(t)
	require.NoError(t, s.UpsertServiceRegistrations(10, []*structs.ServiceRegistration{
		reg("default", "web", "w2", "a2", "n1", "shop"),
		reg("default", "web", "w1", "a1", "n1", "shop"),
		reg("", "api", "x1", "a1", "n2", "shop"),
		reg("team", "web", "t1", "a3", "n2", "shop"),
	}))
	all, err := s.ServiceRegistrations(nil, "*")
	require.NoError(t, err)
	require.Equal(t, []string{"x1", "w1", "w2", "t1"}, regIDs(all))
	def, err := s.ServiceRegistrations(nil, "default")
	require.NoError(t, err)
	require.Equal(t, []string{"x1", "w1", "w2"}, regIDs(def), "the empty namespace is default")
	web, err := s.ServiceRegistrationsByName(nil, "default", "web")
	require.NoError(t, err)
	require.Equal(t, []string{"w1", "w2"}, regIDs(web))
	none, err := s.ServiceRegistrationsByName(nil, "default", "we")
	require.NoError(t, err)
	require.Empty(t, none, "a name is matched whole, not as a prefix")
	one, err := s.ServiceRegistrationByID(nil, "team", "t1")
	require.NoError(t, err)
	require.Equal(t, uint64(10), one.CreateIndex)
	missing, err := s.ServiceRegistrationByID(nil, "default", "t1")
	require.NoError(t, err)
	require.Nil(t, missing, "IDs are per namespace")
	byAlloc, err := s.ServiceRegistrationsByAlloc(nil, "a1")
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"w1", "x1"}, regIDs(byAlloc))
	byNode, err := s.ServiceRegistrationsByNode(nil, "n2")
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"x1", "t1"}, regIDs(byNode))
	byJob, err := s.ServiceRegistrationsByJob(nil, "default", "shop")
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"x1", "w1", "w2"}, regIDs(byJob))

	require.NoError(t, s.DeleteServiceRegistrations(11, &structs.ServiceRegistrationDeleteRequest{AllocIDs: []string{"a1"}, IDs: []string{"t1"}}))
	all, err = s.ServiceRegistrations(nil, "*")
	require.NoError(t, err)
	require.Equal(t, []string{"w2"}, regIDs(all))
	require.Equal(t, uint64(11), s.Index(TableServiceRegistrations))
	require.Error(t, s.UpsertServiceRegistrations(12, []*structs.ServiceRegistration{{ServiceName: "x"}}), "a registration needs an ID")
}

// catalogStore is a store with nodes n1 and n2 and allocations a1 (n1),
// a2 (n1) and a3 (n2) of job "shop" at indexes 1 to 4.
func catalogStore(t *testing.T) (*StateStore, *structs.Job) {
	t.Helper()
	s := NewStateStore()
	for i, id := range []string{"n1", "n2"} {
		n := testNode()
		n.ID = id
		require.NoError(t, s.UpsertNode(uint64(1+i), n))
	}
	job := mustJob(t, s, 3, testJob("shop"))
	var allocs []*structs.Allocation
	for _, p := range [][2]string{{"a1", "n1"}, {"a2", "n1"}, {"a3", "n2"}} {
		a := testAlloc(job, p[1])
		a.ID = p[0]
		allocs = append(allocs, a)
	}
	require.NoError(t, s.UpsertAllocs(4, allocs))
	return s, job
}

// TestServiceRegistrations_NodeDown: a node that goes down loses its
// registrations (one that is only drained keeps them) and takes none.
func TestServiceRegistrations_NodeDown(t *testing.T) {
	s, _ := catalogStore(t)
	require.NoError(t, s.UpsertServiceRegistrations(5, []*structs.ServiceRegistration{reg("default", "web", "w1", "a1", "n1", "shop")}))
	require.NoError(t, s.UpdateNodeDrain(6, "n1", true, false, 6))
	regs, err := s.ServiceRegistrationsByNode(nil, "n1")
	require.NoError(t, err)
	require.Len(t, regs, 1)
	require.NoError(t, s.UpdateNodeStatus(7, "n1", structs.NodeStatusDown, 7, nil))
	regs, err = s.ServiceRegistrationsByNode(nil, "n1")
	require.NoError(t, err)
	require.Empty(t, regs)
	require.NoError(t, s.UpsertServiceRegistrations(8, []*structs.ServiceRegistration{reg("default", "web", "w2", "a2", "n1", "shop")}))
	regs, err = s.ServiceRegistrationsByNode(nil, "n1")
	require.NoError(t, err)
	require.Empty(t, regs, "a down node registers nothing")
}

// TestServiceRegistrations_SkipsAllocsThatAreOver: a registration of an
// allocation that is gone or over on its node is not written.
func TestServiceRegistrations_SkipsAllocsThatAreOver(t *testing.T) {
	s, _ := catalogStore(t)
	require.NoError(t, s.UpdateAllocsFromClient(5, []*structs.Allocation{{ID: "a2", ClientStatus: structs.AllocClientStatusFailed}}, 5))
	require.NoError(t, s.UpsertServiceRegistrations(6, []*structs.ServiceRegistration{
		reg("default", "web", "w1", "a1", "n1", "shop"),
		reg("default", "web", "w2", "a2", "n1", "shop"),
		reg("default", "web", "w9", "gone", "n1", "shop"),
	}))
	all, err := s.ServiceRegistrations(nil, "*")
	require.NoError(t, err)
	require.Equal(t, []string{"w1"}, regIDs(all))
}
