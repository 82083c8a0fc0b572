package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// TestSurgeReconcile: what the reconciler decides for a surge group on one
// node, by the allocations there.
func TestSurgeReconcile(t *testing.T) {
	v0 := testJob("web")
	v0.TaskGroups[0].Update = update(1, 0)
	v0.TaskGroups[0].Meta = map[string]string{structs.DroverMetaSurge: "true"}
	v0.CreateIndex = 10
	v1 := nextVersion(v0, destructiveChange)
	v2 := nextVersion(v1, func(tg *structs.TaskGroup) {
		tg.Tasks[0].Config = map[string]any{"command": "/bin/sleep", "args": []string{"9999"}}
	})
	plain := nextVersion(v0, destructiveChange)
	plain.TaskGroups[0].Meta = nil
	healthy := func(a *structs.Allocation, h bool) *structs.Allocation {
		a.DeploymentID = "d1"
		a.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: boolPtr(h)}
		return a
	}
	pending := func(a *structs.Allocation) *structs.Allocation {
		a.DeploymentID = "d1"
		a.ClientStatus = structs.AllocClientStatusPending
		return a
	}
	type want struct {
		ignore, stop, unknown, lost []string
		surge                       string // Previous of the surge replacement, or ""
	}
	for _, c := range []struct {
		name   string
		job    *structs.Job
		node   *structs.Node
		allocs []*structs.Allocation
		want   want
	}{
		{name: "old only: a surge replacement, the old one kept",
			job: v1, allocs: []*structs.Allocation{testAlloc("old", v0, "n1")},
			want: want{surge: "old"}},
		{name: "new not yet healthy: both stay",
			job: v1, allocs: []*structs.Allocation{testAlloc("old", v0, "n1"), pending(testAlloc("new", v1, "n1"))},
			want: want{ignore: []string{"new", "old"}}},
		{name: "new unhealthy: both stay (the deployment fails, the old one serves)",
			job: v1, allocs: []*structs.Allocation{testAlloc("old", v0, "n1"), healthy(testAlloc("new", v1, "n1"), false)},
			want: want{ignore: []string{"new", "old"}}},
		{name: "new healthy: the old one stops",
			job: v1, allocs: []*structs.Allocation{testAlloc("old", v0, "n1"), healthy(testAlloc("new", v1, "n1"), true)},
			want: want{ignore: []string{"new"}, stop: []string{"old"}}},
		{name: "new without deployment, running: the old one stops",
			job: v1, allocs: []*structs.Allocation{testAlloc("old", v0, "n1"), testAlloc("new", v1, "n1")},
			want: want{ignore: []string{"new"}, stop: []string{"old"}}},
		{name: "a newer version while surging: the healthiest old one is kept and replaced",
			job: v2, allocs: []*structs.Allocation{healthy(testAlloc("old", v0, "n1"), true), pending(testAlloc("mid", v1, "n1"))},
			want: want{stop: []string{"mid"}, surge: "old"}},
		{name: "disconnected node: the pair is marked as one",
			job: v1, node: testNode("n1", disconnected),
			allocs: []*structs.Allocation{testAlloc("old", v0, "n1"), pending(testAlloc("new", v1, "n1"))},
			want:   want{lost: []string{"new", "old"}}},
		{name: "without surge the extra old allocation stops at once",
			job: plain, allocs: []*structs.Allocation{testAlloc("old", v0, "n1"), pending(testAlloc("new", plain, "n1"))},
			want: want{ignore: []string{"new"}, stop: []string{"old"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			node := c.node
			if node == nil {
				node = testNode("n1")
			}
			res := ReconcileSystem(SystemReconcileInput{Job: c.job, Nodes: []*structs.Node{node}, Allocs: c.allocs,
				Now: time.Unix(1_700_000_000, 0), Feasible: NewFeasibleFunc(c.job)})
			g := res.Groups[0]
			idsOf := func(as []*structs.Allocation) []string {
				var out []string
				for _, a := range as {
					out = append(out, a.ID)
				}
				return out
			}
			var stops []string
			for _, s := range g.Stop {
				stops = append(stops, s.Alloc.ID)
			}
			got := want{ignore: idsOf(g.Ignore), stop: stops, unknown: idsOf(g.Unknown), lost: idsOf(g.Lost)}
			for _, pl := range g.DestructiveUpdate {
				require.Equal(t, c.job.TaskGroups[0].DroverSurge(), pl.Surge)
				got.surge = pl.Previous.ID
			}
			require.Equal(t, c.want, got)
		})
	}
}
