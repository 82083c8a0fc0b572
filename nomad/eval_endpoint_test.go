package nomad

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/mock"
	"github.com/drover-project/drover/nomad/structs"
)

// seedEvals stores five evaluations in team-a (created at indexes 201..205,
// IDs e1..e5) and one in other, with an allocation of e1 and one of other's.
func seedEvals(t *testing.T, srv *Server) {
	t.Helper()
	st := srv.State()
	require.NoError(t, st.UpsertNamespaces(200, []*structs.Namespace{{Name: "team-a"}, {Name: "other"}}))
	job := mock.Job("web")
	job.Namespace = "team-a"
	for i := 1; i <= 5; i++ {
		e := mock.Eval(job)
		e.ID = fmt.Sprintf("e%d", i)
		require.NoError(t, st.UpsertEvals(uint64(200+i), []*structs.Evaluation{e}))
	}
	otherJob := mock.Job("web")
	otherJob.Namespace = "other"
	oe := mock.Eval(otherJob)
	oe.ID = "o1"
	require.NoError(t, st.UpsertEvals(206, []*structs.Evaluation{oe}))
	a := mock.Alloc(job, "node-1")
	a.EvalID = "e1"
	oa := mock.Alloc(otherJob, "node-1")
	oa.EvalID = "o1"
	require.NoError(t, st.UpsertAllocs(207, []*structs.Allocation{a, oa}))
}

func idsOfEvals(es []*structs.Evaluation) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

func TestEvalList_PagesWithPerPageAndNextToken(t *testing.T) {
	srv := queryTestServer(t)
	seedEvals(t, srv)
	opts := QueryOptions{Namespace: "team-a", PerPage: 2}

	var pages [][]string
	for range 4 {
		page, meta, err := srv.EvalList(t.Context(), opts)
		require.NoError(t, err)
		pages = append(pages, idsOfEvals(page))
		if meta.NextToken == "" {
			break
		}
		opts.NextToken = meta.NextToken
	}
	require.Equal(t, [][]string{{"e1", "e2"}, {"e3", "e4"}, {"e5"}}, pages, "oldest first, two a page")

	page, meta, err := srv.EvalList(t.Context(), QueryOptions{Namespace: "team-a", PerPage: 2, Reverse: true})
	require.NoError(t, err)
	require.Equal(t, []string{"e5", "e4"}, idsOfEvals(page))
	require.Equal(t, "203.e3", meta.NextToken, "<create index>.<ID> of the next page's first")

	// With a prefix the order is by ID and so is the token.
	page, meta, err = srv.EvalList(t.Context(), QueryOptions{Namespace: "team-a", Prefix: "e", PerPage: 3})
	require.NoError(t, err)
	require.Equal(t, []string{"e1", "e2", "e3"}, idsOfEvals(page))
	require.Equal(t, "e4", meta.NextToken)

	_, _, err = srv.EvalList(t.Context(), QueryOptions{Namespace: "team-a", NextToken: "garbage"})
	require.ErrorIs(t, err, structs.ErrBadRequest)
	require.ErrorContains(t, err, "Invalid next_token")

	// The filter runs before the page is cut.
	page, _, err = srv.EvalList(t.Context(), QueryOptions{Namespace: "team-a", PerPage: 2, Filter: func(obj any) (bool, error) {
		return obj.(*structs.Evaluation).ID != "e1", nil
	}})
	require.NoError(t, err)
	require.Equal(t, []string{"e2", "e3"}, idsOfEvals(page))
}

func TestEvalList_OnlyNamespacesTheCallerMayRead(t *testing.T) {
	srv := queryTestServer(t)
	seedEvals(t, srv)
	all, _, err := srv.EvalList(t.Context(), QueryOptions{Namespace: AllNamespaces})
	require.NoError(t, err)
	require.Len(t, all, 6)

	teams := policyACL(t, `namespace "team-*" { policy = "read" }`)
	got, meta, err := srv.EvalList(t.Context(), QueryOptions{Namespace: AllNamespaces, ACL: teams})
	require.NoError(t, err)
	require.Equal(t, []string{"e1", "e2", "e3", "e4", "e5"}, idsOfEvals(got))
	require.Equal(t, uint64(206), meta.Index)

	_, _, err = srv.EvalList(t.Context(), QueryOptions{Namespace: "other", ACL: teams})
	require.ErrorIs(t, err, structs.ErrForbidden)
}

func TestEvalCount_OnlyNamespacesTheCallerMayRead(t *testing.T) {
	srv := queryTestServer(t)
	seedEvals(t, srv)
	teams := policyACL(t, `namespace "team-*" { policy = "read" }`)
	for _, c := range []struct {
		name  string
		ns    string
		acl   *acl.ACL
		count int
	}{
		{"ACLs disabled, every namespace", AllNamespaces, nil, 6},
		{"management, every namespace", AllNamespaces, acl.ManagementACL(), 6},
		{"team reader, every namespace", AllNamespaces, teams, 5},
		{"team reader, its namespace", "team-a", teams, 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, _, err := srv.EvalCount(t.Context(), QueryOptions{Namespace: c.ns, ACL: c.acl})
			require.NoError(t, err)
			require.Equal(t, c.count, n)
		})
	}
	_, _, err := srv.EvalCount(t.Context(), QueryOptions{Namespace: "other", ACL: teams})
	require.ErrorIs(t, err, structs.ErrForbidden)
	_, _, err = srv.EvalCount(t.Context(), QueryOptions{Namespace: AllNamespaces, ACL: policyACL(t, `node { policy = "read" }`)})
	require.ErrorIs(t, err, structs.ErrForbidden, "read-job in no namespace")
}

func TestEvalGet_ChecksTheEvaluationsOwnNamespace(t *testing.T) {
	srv := queryTestServer(t)
	seedEvals(t, srv)
	teams := policyACL(t, `namespace "team-*" { policy = "read" }`)

	// The options' namespace does not matter: the evaluation's does.
	reply, meta, err := srv.EvalGet(t.Context(), QueryOptions{Namespace: "default", ACL: teams}, "e2", false)
	require.NoError(t, err)
	require.Equal(t, "e2", reply.Eval.ID)
	require.Equal(t, uint64(202), meta.Index)
	require.Nil(t, reply.Related)

	_, _, err = srv.EvalGet(t.Context(), QueryOptions{ACL: teams}, "o1", false)
	require.ErrorIs(t, err, structs.ErrForbidden)
	_, _, err = srv.EvalAllocations(t.Context(), QueryOptions{ACL: teams}, "o1")
	require.ErrorIs(t, err, structs.ErrForbidden)

	// A missing evaluation is a 404 for a caller who may read somewhere,
	// a 403 for one who may read nowhere.
	_, _, err = srv.EvalGet(t.Context(), QueryOptions{ACL: teams}, "nope", false)
	require.ErrorIs(t, err, structs.ErrNotFound)
	_, _, err = srv.EvalGet(t.Context(), QueryOptions{ACL: acl.DenyAll()}, "nope", false)
	require.ErrorIs(t, err, structs.ErrForbidden)

	allocs, _, err := srv.EvalAllocations(t.Context(), QueryOptions{ACL: teams}, "e1")
	require.NoError(t, err)
	require.Len(t, allocs, 1)
	require.Equal(t, "team-a", allocs[0].Namespace)
}

func TestAllocAndDeploymentReads_CheckTheObjectsNamespace(t *testing.T) {
	srv := queryTestServer(t)
	seedEvals(t, srv)
	teams := policyACL(t, `namespace "team-*" { policy = "read" }`)
	allocs, _, err := srv.AllocList(t.Context(), QueryOptions{Namespace: AllNamespaces, ACL: teams})
	require.NoError(t, err)
	require.Len(t, allocs, 1)
	require.Equal(t, "team-a", allocs[0].Namespace)
	for _, a := range []*structs.Allocation{allocs[0]} {
		got, _, err := srv.AllocGet(t.Context(), QueryOptions{ACL: teams}, a.ID)
		require.NoError(t, err)
		require.Equal(t, a.ID, got.ID)
	}
	all, _, err := srv.AllocList(t.Context(), QueryOptions{Namespace: AllNamespaces})
	require.NoError(t, err)
	require.Len(t, all, 2)
	for _, a := range all {
		if a.Namespace == "other" {
			_, _, err := srv.AllocGet(t.Context(), QueryOptions{ACL: teams}, a.ID)
			require.ErrorIs(t, err, structs.ErrForbidden)
		}
	}

	job := mock.Job("web")
	job.Namespace = "other"
	d := mock.Deployment(job)
	require.NoError(t, srv.State().UpsertDeployment(210, d))
	_, _, err = srv.DeploymentGet(t.Context(), QueryOptions{ACL: teams}, d.ID)
	require.ErrorIs(t, err, structs.ErrForbidden)
	_, _, err = srv.DeploymentAllocations(t.Context(), QueryOptions{ACL: teams}, d.ID)
	require.ErrorIs(t, err, structs.ErrForbidden)
	ds, _, err := srv.DeploymentList(t.Context(), QueryOptions{Namespace: AllNamespaces, ACL: teams})
	require.NoError(t, err)
	require.Empty(t, ds)
	got, meta, err := srv.DeploymentGet(t.Context(), QueryOptions{}, d.ID)
	require.NoError(t, err)
	require.Equal(t, d.ID, got.ID)
	require.Equal(t, uint64(210), meta.Index)
}

func TestNodeReads_NeedNodeRead(t *testing.T) {
	srv := queryTestServer(t)
	seedEvals(t, srv)
	n := mock.Node()
	n.ID = "node-1"
	require.NoError(t, srv.State().UpsertNode(220, n))
	teams := policyACL(t, `namespace "team-*" { policy = "read" }`)
	_, _, err := srv.NodeList(t.Context(), QueryOptions{ACL: teams})
	require.ErrorIs(t, err, structs.ErrForbidden)
	_, _, err = srv.NodeGet(t.Context(), QueryOptions{ACL: teams}, n.ID)
	require.ErrorIs(t, err, structs.ErrForbidden)

	reader := policyACL(t, `node { policy = "read" }`, `namespace "team-*" { policy = "read" }`)
	nodes, _, err := srv.NodeList(t.Context(), QueryOptions{ACL: reader, Prefix: "node-"})
	require.NoError(t, err)
	require.Len(t, nodes, 1)
	// A node's allocations: only those of namespaces the caller may read.
	allocs, _, err := srv.NodeAllocations(t.Context(), QueryOptions{ACL: reader}, n.ID)
	require.NoError(t, err)
	require.Len(t, allocs, 1)
	require.Equal(t, "team-a", allocs[0].Namespace)
	_, _, err = srv.NodeGet(t.Context(), QueryOptions{ACL: reader}, "nope")
	require.ErrorIs(t, err, structs.ErrNotFound)
}

func TestDeploymentAndAllocActions_CheckTheObjectsNamespace(t *testing.T) {
	srv := queryTestServer(t)
	seedEvals(t, srv)
	job := mock.Job("web")
	job.Namespace = "other"
	d := mock.Deployment(job)
	require.NoError(t, srv.State().UpsertDeployment(210, d))
	teams := policyACL(t, `namespace "team-*" { policy = "write" }`)

	_, err := srv.DeploymentPromote(teams, d.ID, true, nil)
	require.ErrorIs(t, err, structs.ErrForbidden)
	_, err = srv.DeploymentFail(teams, d.ID)
	require.ErrorIs(t, err, structs.ErrForbidden)
	_, err = srv.DeploymentPause(teams, d.ID, true)
	require.ErrorIs(t, err, structs.ErrForbidden)
	_, err = srv.DeploymentAllocHealth(teams, d.ID, nil, nil)
	require.ErrorIs(t, err, structs.ErrForbidden)
	// A missing deployment is the action's 404 for a caller who may
	// submit somewhere.
	_, err = srv.DeploymentFail(teams, "nope")
	require.ErrorIs(t, err, structs.ErrNotFound)

	all, _, err := srv.AllocList(t.Context(), QueryOptions{Namespace: "other"})
	require.NoError(t, err)
	require.Len(t, all, 1)
	_, _, err = srv.AllocStop(teams, all[0].ID, structs.DesiredTransition{})
	require.ErrorIs(t, err, structs.ErrForbidden)
	_, _, err = srv.AllocStop(policyACL(t, `namespace "*" { policy = "read" }`), all[0].ID, structs.DesiredTransition{})
	require.ErrorIs(t, err, structs.ErrForbidden, "read is not alloc-lifecycle")
}
