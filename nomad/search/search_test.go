package search

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/mock"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

func fixture(t *testing.T) *state.Snapshot {
	t.Helper()
	s := state.NewStateStore()
	web := mock.Job("web-frontend")
	web.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/sleep", "image": "nginx:1.27"}
	api := mock.Job("api")
	require.NoError(t, s.UpsertJob(1, nil, web))
	require.NoError(t, s.UpsertJob(2, nil, api))
	for i := range 25 {
		require.NoError(t, s.UpsertJob(uint64(3+i), nil, mock.Job(fmt.Sprintf("batch-%02d", i))))
	}
	n := mock.Node()
	n.Name = "worker-binary"
	require.NoError(t, s.UpsertNode(40, n))
	return s.Snapshot()
}

func TestPrefix(t *testing.T) {
	snap := fixture(t)
	m, trunc, err := Prefix(snap, nil, "default", "we", Jobs)
	require.NoError(t, err)
	require.Equal(t, []string{"web-frontend"}, m[Jobs])
	require.False(t, trunc[Jobs])

	m, trunc, err = Prefix(snap, nil, "default", "batch-", Jobs)
	require.NoError(t, err)
	require.Len(t, m[Jobs], Limit)
	require.True(t, trunc[Jobs])
	require.Equal(t, "batch-00", m[Jobs][0])

	m, _, err = Prefix(snap, nil, "default", "de", All)
	require.NoError(t, err)
	require.Equal(t, []string{"default"}, m[NodePools])
	require.Equal(t, []string{"default"}, m[Namespaces])
	require.Empty(t, m[Jobs])

	m, _, err = Prefix(snap, nil, "other", "we", Jobs)
	require.NoError(t, err)
	require.Empty(t, m[Jobs], "another namespace")
}

func TestFuzzy(t *testing.T) {
	snap := fixture(t)
	m, _, err := Fuzzy(snap, nil, "default", "BIN", All)
	require.NoError(t, err)
	web, _ := snap.JobByID(nil, "default", "web-frontend")
	tg := web.TaskGroups[0]
	require.Equal(t, []Match{{ID: "/bin/sleep", Scope: []string{"default", "web-frontend", tg.Name, tg.Tasks[0].Name}}}, m[Commands])
	require.Len(t, m[Nodes], 1)
	require.Equal(t, "worker-binary", m[Nodes][0].ID)

	m, _, err = Fuzzy(snap, nil, "default", "front", Jobs)
	require.NoError(t, err)
	require.Equal(t, []Match{{ID: web.Name, Scope: []string{"default", "web-frontend"}}}, m[Jobs])

	m, trunc, err := Fuzzy(snap, nil, "default", "ch-", Jobs)
	require.NoError(t, err)
	require.Len(t, m[Jobs], Limit)
	require.True(t, trunc[Jobs])

	m, _, err = Fuzzy(snap, nil, "default", "nginx:1.27", Images)
	require.NoError(t, err)
	require.Len(t, m[Images], 1)

	_, _, err = Fuzzy(snap, nil, "default", "x", All)
	require.ErrorContains(t, err, "at least 2")
}

func TestFuzzyOrdersByPosition(t *testing.T) {
	s := state.NewStateStore()
	for i, name := range []string{"zz-api", "api-zz", "b-api"} {
		j := mock.Job(name)
		j.Name = name
		require.NoError(t, s.UpsertJob(uint64(i+1), nil, j))
	}
	m, _, err := Fuzzy(s.Snapshot(), nil, structs.DefaultNamespace, "api", Jobs)
	require.NoError(t, err)
	var ids []string
	for _, x := range m[Jobs] {
		ids = append(ids, x.ID)
	}
	require.Equal(t, []string{"api-zz", "b-api", "zz-api"}, ids)
}
