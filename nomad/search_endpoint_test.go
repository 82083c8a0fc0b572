package nomad

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/mock"
	"github.com/drover-project/drover/nomad/search"
	"github.com/drover-project/drover/nomad/structs"
)

func TestSearch_AnswersOnlyWhatTheCallerMayRead(t *testing.T) {
	srv := queryTestServer(t)
	seedJobs(t, srv)  // job "web" in default, team-a, other
	seedEvals(t, srv) // e1..e5 in team-a, o1 in other
	n := mock.Node()
	n.ID = "node-1"
	require.NoError(t, srv.State().UpsertNode(220, n))
	teams := policyACL(t, `namespace "team-*" { policy = "read" }`)
	nodes := policyACL(t, `node { policy = "read" }`)

	for _, c := range []struct {
		name string
		acl  *acl.ACL
		ns   string
		ctx  string
		// want: the IDs per context answered; a context not named is
		// not in the answer.
		want map[string][]string
	}{
		{"ACLs disabled: every namespace", nil, AllNamespaces, search.Evals,
			map[string][]string{search.Evals: {"e1", "e2", "e3", "e4", "e5", "o1"}}},
		{"team reader: its namespaces", teams, AllNamespaces, search.Evals,
			map[string][]string{search.Evals: {"e1", "e2", "e3", "e4", "e5"}}},
		{"team reader: jobs of its namespaces", teams, AllNamespaces, search.Jobs,
			map[string][]string{search.Jobs: {"web"}}},
		{"team reader, all: no nodes", teams, "team-a", search.All, map[string][]string{
			search.Allocs: {}, search.Deployments: {}, search.Evals: {"e1", "e2", "e3", "e4", "e5"},
			search.Jobs: {"web"}, search.Namespaces: {}}},
		{"node reader, all: nodes and node pools only", nodes, structs.DefaultNamespace, search.All,
			map[string][]string{search.Nodes: {"node-1"}, search.NodePools: {"all", "default"}, search.Namespaces: {}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			prefix := "" // every ID
			if c.ctx == search.Jobs {
				prefix = "we"
			}
			m, _, _, err := srv.SearchPrefix(t.Context(), QueryOptions{ACL: c.acl, Namespace: c.ns}, prefix, c.ctx)
			require.NoError(t, err)
			got := map[string][]string{}
			for ctx, ids := range m {
				if ctx == search.Allocs || ctx == search.Deployments {
					ids = []string{} // their IDs are random: the key is what counts
				}
				got[ctx] = ids
			}
			if c.want[search.Allocs] != nil {
				require.Len(t, m[search.Allocs], 1, "the team-a allocation only")
			}
			require.Equal(t, c.want, got)
		})
	}

	for _, c := range []struct {
		name string
		acl  *acl.ACL
		ns   string
		ctx  string
	}{
		{"nodes without node read", teams, AllNamespaces, search.Nodes},
		{"jobs without read-job there", teams, "other", search.Jobs},
		{"jobs without read-job anywhere", nodes, AllNamespaces, search.Jobs},
		{"nothing readable", policyACL(t, `agent { policy = "read" }`), structs.DefaultNamespace, search.All},
	} {
		t.Run("refused: "+c.name, func(t *testing.T) {
			_, _, _, err := srv.SearchPrefix(t.Context(), QueryOptions{ACL: c.acl, Namespace: c.ns}, "", c.ctx)
			require.ErrorIs(t, err, structs.ErrForbidden)
			_, _, _, err = srv.SearchFuzzy(t.Context(), QueryOptions{ACL: c.acl, Namespace: c.ns}, "we", c.ctx)
			require.ErrorIs(t, err, structs.ErrForbidden)
		})
	}

	// Fuzzy: a job's matches only from the namespaces the caller may read.
	m, _, _, err := srv.SearchFuzzy(t.Context(), QueryOptions{ACL: teams, Namespace: AllNamespaces}, "web", search.Jobs)
	require.NoError(t, err)
	require.Equal(t, []search.Match{{ID: "web", Scope: []string{"team-a", "web"}}}, m[search.Jobs])
	all, _, _, err := srv.SearchFuzzy(t.Context(), QueryOptions{Namespace: AllNamespaces}, "web", search.Jobs)
	require.NoError(t, err)
	require.Len(t, all[search.Jobs], 3)
}
