package nomad

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/mock"
	"github.com/drover-project/drover/nomad/structs"
)

func TestNodePoolReads_PageAndNeedNodeRead(t *testing.T) {
	srv := queryTestServer(t)
	st := srv.State()
	require.NoError(t, st.UpsertNodePools(300, []*structs.NodePool{{Name: "edge-a"}, {Name: "edge-b"}, {Name: "edge-c"}, {Name: "gpu"}}))
	for i, pool := range []string{"edge-a", "edge-a", "edge-a", ""} {
		n := mock.Node()
		n.ID = []string{"n1", "n2", "n3", "n4"}[i]
		n.NodePool = pool
		require.NoError(t, st.UpsertNode(uint64(301+i), n))
	}
	names := func(ps []*structs.NodePool) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}

	page, meta, err := srv.NodePoolList(t.Context(), QueryOptions{Prefix: "edge-", PerPage: 2})
	require.NoError(t, err)
	require.Equal(t, []string{"edge-a", "edge-b"}, names(page))
	require.Equal(t, "edge-c", meta.NextToken)
	page, meta, err = srv.NodePoolList(t.Context(), QueryOptions{Prefix: "edge-", PerPage: 2, NextToken: meta.NextToken})
	require.NoError(t, err)
	require.Equal(t, []string{"edge-c"}, names(page))
	require.Empty(t, meta.NextToken)

	nodes, meta, err := srv.NodePoolNodes(t.Context(), QueryOptions{PerPage: 2}, "edge-a")
	require.NoError(t, err)
	require.Len(t, nodes, 2)
	require.Equal(t, "n3", meta.NextToken)
	nodes, _, err = srv.NodePoolNodes(t.Context(), QueryOptions{}, structs.NodePoolDefault)
	require.NoError(t, err)
	require.Len(t, nodes, 1, "a node naming no pool is in the default pool")
	require.Equal(t, "n4", nodes[0].ID)
	_, _, err = srv.NodePoolNodes(t.Context(), QueryOptions{}, "nope")
	require.ErrorIs(t, err, structs.ErrNotFound)

	noNode := policyACL(t, `namespace "*" { policy = "read" }`)
	_, _, err = srv.NodePoolList(t.Context(), QueryOptions{ACL: noNode})
	require.ErrorIs(t, err, structs.ErrForbidden)
	_, _, err = srv.NodePoolGet(t.Context(), QueryOptions{ACL: noNode}, "gpu")
	require.ErrorIs(t, err, structs.ErrForbidden)
	p, _, err := srv.NodePoolGet(t.Context(), QueryOptions{ACL: acl.ManagementACL()}, "gpu")
	require.NoError(t, err)
	require.Equal(t, "gpu", p.Name)
}

func TestNodePoolWrites_NeedManagement(t *testing.T) {
	srv := queryTestServer(t)
	pool := func() *structs.NodePool {
		p, err := srv.State().NodePoolByName(nil, "edge")
		require.NoError(t, err)
		return p
	}
	refused, allowed := managementWriters(t)
	refused["node pool write"] = policyACL(t, `node_pool "*" { policy = "write" }`, `node { policy = "write" }`)
	testWrites(t, srv, refused, allowed, []writeCase{
		{name: "upsert", run: func(a *acl.ACL) error {
			return ignore2(srv.UpsertNodePool(a, &structs.NodePool{Name: "edge", Description: "edge nodes"}))
		}, done: func(t *testing.T) { require.Equal(t, "edge nodes", pool().Description) }},
		{name: "delete", run: func(a *acl.ACL) error { return ignore2(srv.DeleteNodePool(a, "edge")) },
			done: func(t *testing.T) { require.Nil(t, pool()) }},
	})
}

// Paging through a pool's jobs of every namespace returns each job once,
// in (namespace, ID) order, also when a namespace's name is a prefix of
// another's followed by "-" ("prod" before "prod-eu", though the string
// "prod-eu.a" sorts before "prod.b").
func TestNodePoolJobs_PagesAcrossNamespaces(t *testing.T) {
	srv := queryTestServer(t)
	st := srv.State()
	require.NoError(t, st.UpsertNamespaces(400, []*structs.Namespace{{Name: "prod"}, {Name: "prod-eu"}}))
	want := []string{"default.x", "prod.b", "prod.c", "prod-eu.a", "prod-eu.a.b"}
	for i, key := range want {
		ns, id, _ := strings.Cut(key, ".")
		j := mock.Job(id)
		j.Namespace = ns
		require.NoError(t, st.UpsertJob(uint64(401+i), nil, j))
	}
	var got []string
	token := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, len(want), "paging does not end")
		page, meta, err := srv.NodePoolJobs(t.Context(), QueryOptions{Namespace: AllNamespaces, PerPage: 1, NextToken: token}, structs.NodePoolDefault)
		require.NoError(t, err)
		for _, e := range page {
			got = append(got, e.Job.Namespace+"."+e.Job.ID)
		}
		if meta.NextToken == "" {
			break
		}
		token = meta.NextToken
	}
	require.Equal(t, want, got)
}
