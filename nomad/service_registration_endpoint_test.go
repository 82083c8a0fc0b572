package nomad

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/mock"
	"github.com/drover-project/drover/nomad/structs"
)

// catalogFixture is a server with node n (dc1) running allocation def of
// job "web" in default and team of job "web" in team-a, written through
// raft.
type catalogFixture struct {
	srv       *Server
	node      *structs.Node
	def, team *structs.Allocation
}

func newCatalogFixture(t *testing.T) *catalogFixture {
	t.Helper()
	srv := queryTestServer(t)
	apply := func(typ structs.MessageType, msg any) {
		t.Helper()
		resp, _, err := srv.raftApply(typ, msg)
		require.NoError(t, err)
		if e, ok := resp.(error); ok {
			require.NoError(t, e)
		}
	}
	apply(structs.NamespaceUpsertRequestType, &structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{{Name: "team-a"}}})
	n := mock.Node()
	apply(structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: n})
	f := &catalogFixture{srv: srv, node: n}
	for _, ns := range []string{"default", "team-a"} {
		j := mock.Job("web")
		j.Namespace = ns
		apply(structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: j})
		stored, err := srv.State().JobByID(nil, ns, "web")
		require.NoError(t, err)
		a := mock.Alloc(stored, n.ID)
		apply(structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{Job: stored, AllocsUpdated: []*structs.Allocation{a}})
		if ns == "default" {
			f.def = a
		} else {
			f.team = a
		}
	}
	return f
}

// reg is what a client sends for service name of alloc a.
func clientReg(a *structs.Allocation, name string, port int, tags ...string) *structs.ServiceRegistration {
	return &structs.ServiceRegistration{
		ID: structs.ServiceRegistrationID(a.ID, "web", "server", name, "http"), ServiceName: name,
		Tags: tags, Address: "10.0.0.7", Port: port,
	}
}

func (f *catalogFixture) sync(t *testing.T, allocs ...AllocServices) uint64 {
	t.Helper()
	index, err := f.srv.NodeServicesSync(callerOf(f.node), allocs)
	require.NoError(t, err)
	return index
}

// TestNodeServicesSync: the server writes what the client says each
// allocation advertises, filling in what it knows itself; the same set
// again writes nothing; a smaller set deletes the rest. Registrations of an
// allocation of another node, or with an ID not of the allocation, are
// refused.
func TestNodeServicesSync(t *testing.T) {
	f := newCatalogFixture(t)
	lying := clientReg(f.def, "web", 8080, "v1")
	lying.Namespace, lying.JobID, lying.NodeID, lying.Datacenter = "team-a", "other", "elsewhere", "dc9"
	first := f.sync(t, AllocServices{AllocID: f.def.ID, Services: []*structs.ServiceRegistration{lying, clientReg(f.def, "web-admin", 9000)}})

	regs, _, err := f.srv.ServiceGet(t.Context(), QueryOptions{}, "web", ServiceGetOptions{})
	require.NoError(t, err)
	require.Len(t, regs, 1)
	r := regs[0]
	require.Equal(t, []any{"default", "web", f.node.ID, "dc1", f.def.ID, "10.0.0.7", 8080, []string{"v1"}},
		[]any{r.Namespace, r.JobID, r.NodeID, r.Datacenter, r.AllocID, r.Address, r.Port, r.Tags}, "the server's own records win")

	again := f.sync(t, AllocServices{AllocID: f.def.ID, Services: []*structs.ServiceRegistration{clientReg(f.def, "web", 8080, "v1"), clientReg(f.def, "web-admin", 9000)}})
	require.Equal(t, first, again, "nothing changed: nothing written")

	f.sync(t, AllocServices{AllocID: f.def.ID, Services: []*structs.ServiceRegistration{clientReg(f.def, "web", 8080, "v1")}})
	list, _, err := f.srv.ServiceList(t.Context(), QueryOptions{})
	require.NoError(t, err)
	require.Len(t, list, 1, "web-admin was taken back")

	other := mock.Node()
	_, _, err = f.srv.raftApply(structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: other})
	require.NoError(t, err)
	_, err = f.srv.NodeServicesSync(callerOf(other), []AllocServices{{AllocID: f.def.ID}})
	require.ErrorIs(t, err, structs.ErrBadRequest, "not that node's allocation")
	bad := clientReg(f.def, "web", 1)
	bad.ID = structs.ServiceRegistrationID(f.team.ID, "web", "server", "web", "http")
	_, err = f.srv.NodeServicesSync(callerOf(f.node), []AllocServices{{AllocID: f.def.ID, Services: []*structs.ServiceRegistration{bad}}})
	require.ErrorIs(t, err, structs.ErrBadRequest, "an ID of another allocation")
	_, err = f.srv.NodeServicesSync(NodeCaller{NodeID: "missing"}, nil)
	require.ErrorIs(t, err, structs.ErrNotFound)
	_, err = f.srv.NodeServicesSync(NodeCaller{NodeID: f.node.ID, SecretID: "wrong"}, nil)
	require.ErrorIs(t, err, structs.ErrPermissionDenied, "another node's secret")
	_, err = f.srv.NodeServicesSync(callerOf(f.node), []AllocServices{{AllocID: "collected", Services: []*structs.ServiceRegistration{bad}}})
	require.NoError(t, err, "a collected allocation registers nothing, and does not fail the others")
}

// TestServiceReads_NamespacesAndACL: reads need read-job in the namespace;
// the list of every namespace keeps those the caller reads; a delete needs
// submit-job.
func TestServiceReads_NamespacesAndACL(t *testing.T) {
	f := newCatalogFixture(t)
	f.sync(t, AllocServices{AllocID: f.def.ID, Services: []*structs.ServiceRegistration{clientReg(f.def, "web", 8080, "b", "a")}},
		AllocServices{AllocID: f.team.ID, Services: []*structs.ServiceRegistration{clientReg(f.team, "web", 8081, "a", "c")}})

	all, _, err := f.srv.ServiceList(t.Context(), QueryOptions{Namespace: AllNamespaces})
	require.NoError(t, err)
	require.Len(t, all, 2)
	teamOnly := policyACL(t, `namespace "team-a" { policy = "read" }`)
	seen, _, err := f.srv.ServiceList(t.Context(), QueryOptions{Namespace: AllNamespaces, ACL: teamOnly})
	require.NoError(t, err)
	require.Len(t, seen, 1)
	require.Equal(t, "team-a", seen[0].Namespace)
	_, _, err = f.srv.ServiceList(t.Context(), QueryOptions{ACL: teamOnly})
	require.ErrorIs(t, err, structs.ErrForbidden, "no read-job in default")
	_, _, err = f.srv.ServiceGet(t.Context(), QueryOptions{ACL: teamOnly}, "web", ServiceGetOptions{})
	require.ErrorIs(t, err, structs.ErrForbidden)
	got, _, err := f.srv.ServiceGet(t.Context(), QueryOptions{Namespace: "team-a", ACL: teamOnly}, "web", ServiceGetOptions{})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, f.team.ID, got[0].AllocID)
	_, _, err = f.srv.ServiceGet(t.Context(), QueryOptions{Namespace: AllNamespaces}, "web", ServiceGetOptions{})
	require.ErrorIs(t, err, structs.ErrBadRequest, "one service is read in one namespace")

	id := got[0].ID
	_, err = f.srv.ServiceDelete(QueryOptions{Namespace: "team-a", ACL: teamOnly}, "web", id)
	require.ErrorIs(t, err, structs.ErrForbidden, "read is not submit-job")
	_, err = f.srv.ServiceDelete(QueryOptions{Namespace: "team-a"}, "api", id)
	require.ErrorIs(t, err, structs.ErrNotFound, "the ID is of another service")
	_, err = f.srv.ServiceDelete(QueryOptions{Namespace: "default"}, "web", id)
	require.ErrorIs(t, err, structs.ErrNotFound, "the ID is of another namespace")
	writer := policyACL(t, `namespace "team-a" { capabilities = ["submit-job"] }`)
	_, err = f.srv.ServiceDelete(QueryOptions{Namespace: "team-a", ACL: writer}, "web", id)
	require.NoError(t, err)
	got, _, err = f.srv.ServiceGet(t.Context(), QueryOptions{Namespace: "team-a"}, "web", ServiceGetOptions{})
	require.NoError(t, err)
	require.Empty(t, got)
	_, err = f.srv.ServiceDelete(QueryOptions{Namespace: "team-a", ACL: acl.ManagementACL()}, "web", id)
	require.ErrorIs(t, err, structs.ErrNotFound, "already deleted")
}

// TestServiceGet_TagsFilterChoosePaging: the instances carrying every tag
// asked for, accepted by the filter, chosen by rendezvous hashing (stable,
// and a smaller choice is a prefix of a larger one), paged by ID.
func TestServiceGet_TagsFilterChoosePaging(t *testing.T) {
	f := newCatalogFixture(t)
	var regs []*structs.ServiceRegistration
	for i, tags := range [][]string{{"a", "b"}, {"a"}, {"b"}, {"a", "b", "c"}} {
		r := clientReg(f.def, "web", 8080+i, tags...)
		r.ID = structs.ServiceRegistrationID(f.def.ID, "web", "server", "web", string(rune('p'+i)))
		regs = append(regs, r)
	}
	f.sync(t, AllocServices{AllocID: f.def.ID, Services: regs})
	get := func(opts QueryOptions, g ServiceGetOptions) []int {
		t.Helper()
		out, _, err := f.srv.ServiceGet(t.Context(), opts, "web", g)
		require.NoError(t, err)
		ports := []int{}
		for _, r := range out {
			ports = append(ports, r.Port)
		}
		return ports
	}
	require.Equal(t, []int{8080, 8083}, get(QueryOptions{}, ServiceGetOptions{Tags: []string{"a", "b"}}))
	require.Equal(t, []int{8082, 8083}, get(QueryOptions{Filter: func(o any) (bool, error) {
		return o.(*structs.ServiceRegistration).Port > 8081, nil
	}}, ServiceGetOptions{}))

	two := get(QueryOptions{}, ServiceGetOptions{Choose: "2|client-1"})
	require.Len(t, two, 2)
	require.Equal(t, two, get(QueryOptions{}, ServiceGetOptions{Choose: "2|client-1"}), "stable")
	require.Equal(t, two[:1], get(QueryOptions{}, ServiceGetOptions{Choose: "1|client-1"}))
	require.Len(t, get(QueryOptions{}, ServiceGetOptions{Choose: "9|client-1"}), 4, "at most all")
	for _, bad := range []string{"2", "x|k", "2|", "-1|k"} {
		_, _, err := f.srv.ServiceGet(t.Context(), QueryOptions{}, "web", ServiceGetOptions{Choose: bad})
		require.ErrorIs(t, err, structs.ErrBadRequest, bad)
	}

	page, meta, err := f.srv.ServiceGet(t.Context(), QueryOptions{PerPage: 3}, "web", ServiceGetOptions{})
	require.NoError(t, err)
	require.Len(t, page, 3)
	require.NotEmpty(t, meta.NextToken)
	rest, meta, err := f.srv.ServiceGet(t.Context(), QueryOptions{PerPage: 3, NextToken: meta.NextToken}, "web", ServiceGetOptions{})
	require.NoError(t, err)
	require.Len(t, rest, 1)
	require.Empty(t, meta.NextToken)
}

// TestServiceGet_Blocks: a read with the current index waits for the next
// change of the catalog and answers with it.
func TestServiceGet_Blocks(t *testing.T) {
	f := newCatalogFixture(t)
	index := f.sync(t, AllocServices{AllocID: f.def.ID, Services: []*structs.ServiceRegistration{clientReg(f.def, "web", 8080)}})
	_, meta, err := f.srv.ServiceGet(t.Context(), QueryOptions{}, "web", ServiceGetOptions{})
	require.NoError(t, err)
	require.Equal(t, index, meta.Index)

	type answer struct {
		regs  []*structs.ServiceRegistration
		index uint64
		err   error
	}
	done := make(chan answer, 1)
	go func() {
		regs, meta, err := f.srv.ServiceGet(t.Context(), QueryOptions{MinIndex: index, MaxWait: 30 * time.Second}, "web", ServiceGetOptions{})
		done <- answer{regs, meta.Index, err}
	}()
	select {
	case a := <-done:
		t.Fatalf("answered before a change: %+v", a)
	case <-time.After(200 * time.Millisecond):
	}
	next := f.sync(t, AllocServices{AllocID: f.def.ID, Services: []*structs.ServiceRegistration{clientReg(f.def, "web", 8081)}})
	a := <-done
	require.NoError(t, a.err)
	require.Equal(t, next, a.index)
	require.Len(t, a.regs, 1, "same ID: the registration moved to the new port")
	require.Equal(t, 8081, a.regs[0].Port)
}
