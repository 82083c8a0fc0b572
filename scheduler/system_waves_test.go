package scheduler

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// wavesFleet is the fixture of the wave and partition tables: nodes
// n00..n(k-1) running v0 of group web, whose update block says
// max_parallel mp and whose meta is meta in every version; v1 is a
// destructive change.
type wavesFleet struct {
	nodes  []*structs.Node
	v0, v1 *structs.Job
	allocs []*structs.Allocation
}

func newWavesFleet(k, mp int, meta map[string]string) *wavesFleet {
	f := &wavesFleet{}
	f.v0 = testJob("web")
	f.v0.CreateIndex = 10
	f.v0.TaskGroups[0].Update = update(mp, 0)
	f.v0.TaskGroups[0].Meta = meta
	f.v1 = nextVersion(f.v0, destructiveChange)
	for i := range k {
		f.nodes = append(f.nodes, testNode(nodeName(i)))
		a := testAlloc(nodeName(i)+"-v0", f.v0, nodeName(i))
		f.allocs = append(f.allocs, a)
	}
	return f
}

// onV1 replaces the v0 allocations of the nodes by v1 ones of deployment
// d1 with health h.
func (f *wavesFleet) onV1(h allocHealth, nodes ...int) {
	for _, i := range nodes {
		for k, a := range f.allocs {
			if a.NodeID == nodeName(i) {
				f.allocs = append(f.allocs[:k], f.allocs[k+1:]...)
				break
			}
		}
		a := testAlloc(nodeName(i)+"-v1", f.v1, nodeName(i))
		a.DeploymentID = "d1"
		a.DeploymentStatus = &structs.AllocDeploymentStatus{}
		if h == healthy {
			a.DeploymentStatus.Healthy = boolPtr(true)
		}
		f.allocs = append(f.allocs, a)
	}
}

func (f *wavesFleet) deployment(status string) *structs.Deployment {
	return &structs.Deployment{ID: "d1", Namespace: f.v1.Namespace, JobID: f.v1.ID, JobVersion: f.v1.Version,
		JobCreateIndex: f.v1.CreateIndex, Status: status, StatusDescription: structs.DeploymentStatusDescriptionRunning,
		TaskGroups: map[string]*structs.DeploymentState{"web": {}}}
}

// wavesSummary says what group web does: the nodes replaced, updated in
// place and deferred, and the deployment's DesiredTotal.
func wavesSummary(res SystemReconcileResult) string {
	g := groupNamed(res, "web")
	var inplace []string
	for _, a := range g.InplaceUpdate {
		inplace = append(inplace, a.NodeID)
	}
	total := "none"
	if res.Deployment != nil {
		total = fmt.Sprint(res.Deployment.TaskGroups["web"].DesiredTotal)
	}
	return fmt.Sprintf("replace=%s inplace=%s deferred=%s place=%s total=%s",
		strings.Join(nodesOf(g.DestructiveUpdate), ","), strings.Join(inplace, ","),
		strings.Join(nodesOf(g.Deferred), ","), strings.Join(nodesOf(g.Place), ","), total)
}

// TestWaves_PercentOfFeasibleNodes: drover.max_parallel = "P%" sizes the
// wave from the feasible nodes of this evaluation, rounded up, overriding
// update { max_parallel }; allocations in flight count against it.
func TestWaves_PercentOfFeasibleNodes(t *testing.T) {
	pct := map[string]string{structs.DroverMetaMaxParallel: "10%"}
	for _, c := range []struct {
		name string
		f    func() (*wavesFleet, *structs.Deployment)
		want string
	}{
		{"10% of 20 nodes is 2", func() (*wavesFleet, *structs.Deployment) {
			return newWavesFleet(20, 7, pct), nil
		}, "replace=n00,n01 inplace= deferred=n02,n03,n04,n05,n06,n07,n08,n09,n10,n11,n12,n13,n14,n15,n16,n17,n18,n19 place= total=20"},
		{"10% of 21 nodes rounds up to 3", func() (*wavesFleet, *structs.Deployment) {
			f := newWavesFleet(21, 7, pct)
			f.nodes, f.allocs = f.nodes[:21], f.allocs[:21]
			return f, nil
		}, "replace=n00,n01,n02 inplace= deferred=n03,n04,n05,n06,n07,n08,n09,n10,n11,n12,n13,n14,n15,n16,n17,n18,n19,n20 place= total=21"},
		{"10% of 5 nodes is at least 1", func() (*wavesFleet, *structs.Deployment) {
			return newWavesFleet(5, 7, pct), nil
		}, "replace=n00 inplace= deferred=n01,n02,n03,n04 place= total=5"},
		{"one in flight leaves one of 2", func() (*wavesFleet, *structs.Deployment) {
			f := newWavesFleet(20, 7, pct)
			f.onV1(pending, 0)
			f.onV1(healthy, 1)
			return f, f.deployment(structs.DeploymentStatusRunning)
		}, "replace=n02 inplace= deferred=n03,n04,n05,n06,n07,n08,n09,n10,n11,n12,n13,n14,n15,n16,n17,n18,n19 place= total=20"},
		{"infeasible nodes do not count", func() (*wavesFleet, *structs.Deployment) {
			f := newWavesFleet(20, 7, pct)
			for i := 10; i < 20; i++ {
				f.nodes[i] = testNode(nodeName(i), inDC("dc9"))
			}
			return f, nil
		}, "replace=n00 inplace= deferred=n01,n02,n03,n04,n05,n06,n07,n08,n09 place= total=10"},
		{"whole number", func() (*wavesFleet, *structs.Deployment) {
			return newWavesFleet(6, 1, map[string]string{structs.DroverMetaMaxParallel: "4"}), nil
		}, "replace=n00,n01,n02,n03 inplace= deferred=n04,n05 place= total=6"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, d := c.f()
			require.Equal(t, c.want, wavesSummary(reconcile(f.v1, f.nodes, f.allocs, d)))
		})
	}
}

// TestWaves_PercentCapsCanaries: the canary count is capped by the wave
// size the percentage gives.
func TestWaves_PercentCapsCanaries(t *testing.T) {
	f := newWavesFleet(20, 10, map[string]string{structs.DroverMetaMaxParallel: "10%"})
	f.v1.TaskGroups[0].Update = update(10, 50)
	res := reconcile(f.v1, f.nodes, f.allocs, nil)
	require.Equal(t, 2, res.Deployment.TaskGroups["web"].DesiredCanaries)
	require.Equal(t, []string{"n00*", "n01*"}, nodesOf(groupNamed(res, "web").DestructiveUpdate))
}

// TestPartition holds the last N behind nodes by node ID.
func TestPartition(t *testing.T) {
	part := func(n int) map[string]string { return map[string]string{structs.DroverMetaPartition: fmt.Sprint(n)} }
	for _, c := range []struct {
		name string
		f    func() (*wavesFleet, *structs.Job, *structs.Deployment)
		want string
	}{
		{"holds the last 5 of 10", func() (*wavesFleet, *structs.Job, *structs.Deployment) {
			f := newWavesFleet(10, 10, part(5))
			return f, f.v1, nil
		}, "replace=n00,n01,n02,n03,n04 inplace= deferred=n05,n06,n07,n08,n09 place= total=5"},
		{"waves go on below the partition", func() (*wavesFleet, *structs.Job, *structs.Deployment) {
			f := newWavesFleet(10, 2, part(5))
			f.onV1(healthy, 0, 1, 2)
			return f, f.v1, f.deployment(structs.DeploymentStatusRunning)
		}, "replace=n03,n04 inplace= deferred=n05,n06,n07,n08,n09 place= total=5"},
		{"held after success: nothing moves, no deployment", func() (*wavesFleet, *structs.Job, *structs.Deployment) {
			f := newWavesFleet(10, 2, part(5))
			f.onV1(healthy, 0, 1, 2, 3, 4)
			return f, f.v1, f.deployment(structs.DeploymentStatusSuccessful)
		}, "replace= inplace= deferred=n05,n06,n07,n08,n09 place= total=none"},
		{"an ineligible old node counts as behind", func() (*wavesFleet, *structs.Job, *structs.Deployment) {
			f := newWavesFleet(10, 10, part(5))
			f.nodes[9] = testNode(nodeName(9), ineligible)
			return f, f.v1, nil
		}, "replace=n00,n01,n02,n03,n04 inplace= deferred=n05,n06,n07,n08 place= total=5"},
		{"a partition above the fleet holds everything", func() (*wavesFleet, *structs.Job, *structs.Deployment) {
			f := newWavesFleet(4, 2, part(9))
			return f, f.v1, nil
		}, "replace= inplace= deferred=n00,n01,n02,n03 place= total=none"},
		{"a node that joins gets the new version", func() (*wavesFleet, *structs.Job, *structs.Deployment) {
			f := newWavesFleet(4, 4, part(2))
			f.nodes = append(f.nodes, testNode(nodeName(9)))
			return f, f.v1, nil
		}, "replace=n00,n01 inplace= deferred=n02,n03 place=n09 total=3"},
		{"in-place updates are held too", func() (*wavesFleet, *structs.Job, *structs.Deployment) {
			f := newWavesFleet(4, 1, part(3))
			return f, nextVersion(f.v0, func(tg *structs.TaskGroup) { tg.Meta = map[string]string{"x": "y", structs.DroverMetaPartition: "3"} }), nil
		}, "replace= inplace=n00 deferred= place= total=1"},
		{"lowering it moves updated nodes in place and replaces held ones in waves", func() (*wavesFleet, *structs.Job, *structs.Deployment) {
			f := newWavesFleet(10, 2, part(5))
			f.onV1(healthy, 0, 1, 2, 3, 4)
			v2 := nextVersion(f.v1, func(tg *structs.TaskGroup) { tg.Meta = part(1) })
			return f, v2, f.deployment(structs.DeploymentStatusSuccessful)
		}, "replace=n05,n06 inplace=n00,n01,n02,n03,n04 deferred=n07,n08,n09 place= total=9"},
		{"without a deployment the partition still holds", func() (*wavesFleet, *structs.Job, *structs.Deployment) {
			f := newWavesFleet(4, 0, part(2))
			return f, f.v1, nil
		}, "replace=n00,n01 inplace= deferred=n02,n03 place= total=none"},
		{"partition 0 is none", func() (*wavesFleet, *structs.Job, *structs.Deployment) {
			f := newWavesFleet(3, 3, part(0))
			return f, f.v1, nil
		}, "replace=n00,n01,n02 inplace= deferred= place= total=3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, job, d := c.f()
			require.Equal(t, c.want, wavesSummary(reconcile(job, f.nodes, f.allocs, d)))
		})
	}
}
