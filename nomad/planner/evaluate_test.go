package planner

import (
	"testing"

	"github.com/hashicorp/go-memdb"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// fakeSnapshot is a Snapshot over plain maps.
type fakeSnapshot struct {
	nodes  map[string]*structs.Node
	allocs map[string]*structs.Allocation
	index  uint64
}

func (f *fakeSnapshot) NodeByID(_ memdb.WatchSet, id string) (*structs.Node, error) {
	return f.nodes[id], nil
}

func (f *fakeSnapshot) AllocsByNode(_ memdb.WatchSet, nodeID string) ([]*structs.Allocation, error) {
	var out []*structs.Allocation
	for _, a := range f.allocs {
		if a.NodeID == nodeID {
			out = append(out, a)
		}
	}
	return out, nil
}

func (f *fakeSnapshot) AllocByID(_ memdb.WatchSet, id string) (*structs.Allocation, error) {
	return f.allocs[id], nil
}

func (f *fakeSnapshot) LatestIndex() uint64 { return f.index }

func node(id string, mutate ...func(*structs.Node)) *structs.Node {
	n := &structs.Node{
		ID: id, Status: structs.NodeStatusReady, SchedulingEligibility: structs.NodeSchedulingEligible,
		NodeResources: structs.NodeResources{
			Cpu:    structs.NodeCpuResources{CpuShares: 1000},
			Memory: structs.NodeMemoryResources{MemoryMB: 1000},
			Disk:   structs.NodeDiskResources{DiskMB: 1000},
		},
	}
	for _, m := range mutate {
		m(n)
	}
	return n
}

func alloc(id, nodeID, group string, cpu int64, ports ...int) *structs.Allocation {
	ar := &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
		"t": {Cpu: structs.AllocatedCpuResources{CpuShares: cpu}, Memory: structs.AllocatedMemoryResources{MemoryMB: 10}},
	}}
	for _, p := range ports {
		ar.Shared.Ports = append(ar.Shared.Ports, structs.AllocatedPortMapping{Label: "http", Value: p})
	}
	return &structs.Allocation{
		ID: id, NodeID: nodeID, Namespace: "default", JobID: "web", TaskGroup: group,
		DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning, AllocatedResources: ar,
	}
}

func snapshotOf(nodes []*structs.Node, allocs ...*structs.Allocation) *fakeSnapshot {
	s := &fakeSnapshot{nodes: map[string]*structs.Node{}, allocs: map[string]*structs.Allocation{}, index: 42}
	for _, n := range nodes {
		s.nodes[n.ID] = n
	}
	for _, a := range allocs {
		s.allocs[a.ID] = a
	}
	return s
}

func TestEvaluatePlan(t *testing.T) {
	draining := func(n *structs.Node) { n.Drain = true }
	down := func(n *structs.Node) { n.Status = structs.NodeStatusDown }
	cases := []struct {
		name      string
		snap      *fakeSnapshot
		plan      func(p *structs.Plan)
		committed []string // node IDs whose allocations committed
		rejected  []string
	}{
		{
			name: "placements on ready nodes commit",
			snap: snapshotOf([]*structs.Node{node("n1"), node("n2")}),
			plan: func(p *structs.Plan) {
				p.AppendAlloc(alloc("a1", "n1", "web", 100))
				p.AppendAlloc(alloc("a2", "n2", "web", 100))
			},
			committed: []string{"n1", "n2"},
		},
		{
			name: "missing, down and draining nodes are rejected",
			snap: snapshotOf([]*structs.Node{node("n1"), node("n2", down), node("n3", draining)}),
			plan: func(p *structs.Plan) {
				p.AppendAlloc(alloc("a1", "n1", "web", 100))
				p.AppendAlloc(alloc("a2", "n2", "web", 100))
				p.AppendAlloc(alloc("a3", "n3", "web", 100))
				p.AppendAlloc(alloc("a4", "gone", "web", 100))
			},
			committed: []string{"n1"},
			rejected:  []string{"gone", "n2", "n3"},
		},
		{
			name: "a second live allocation of a group on a node is rejected",
			snap: snapshotOf([]*structs.Node{node("n1")}, alloc("old", "n1", "web", 100)),
			plan: func(p *structs.Plan) {
				p.AppendAlloc(alloc("new", "n1", "web", 100))
			},
			rejected: []string{"n1"},
		},
		{
			name: "drover.surge: a new version beside the old one commits",
			snap: snapshotOf([]*structs.Node{node("n1")}, versioned(alloc("old", "n1", "web", 100), 1)),
			plan: func(p *structs.Plan) {
				p.Job = surgeJob(2)
				p.AppendAlloc(versioned(alloc("new", "n1", "web", 100), 2))
			},
			committed: []string{"n1"},
		},
		{
			name: "drover.surge: a third allocation is rejected",
			snap: snapshotOf([]*structs.Node{node("n1")}, versioned(alloc("old", "n1", "web", 100), 1),
				versioned(alloc("mid", "n1", "web", 100), 2)),
			plan: func(p *structs.Plan) {
				p.Job = surgeJob(3)
				p.AppendAlloc(versioned(alloc("new", "n1", "web", 100), 3))
			},
			rejected: []string{"n1"},
		},
		{
			name: "drover.surge: two allocations of one version are rejected",
			snap: snapshotOf([]*structs.Node{node("n1")}, versioned(alloc("old", "n1", "web", 100), 2)),
			plan: func(p *structs.Plan) {
				p.Job = surgeJob(2)
				p.AppendAlloc(versioned(alloc("new", "n1", "web", 100), 2))
			},
			rejected: []string{"n1"},
		},
		{
			name: "a replacement that stops the old allocation in the same plan commits",
			snap: snapshotOf([]*structs.Node{node("n1")}, alloc("old", "n1", "web", 900, 8080)),
			plan: func(p *structs.Plan) {
				p.AppendStop(alloc("old", "n1", "web", 900, 8080), "replaced")
				p.AppendAlloc(alloc("new", "n1", "web", 900, 8080))
			},
			committed: []string{"n1"},
		},
		{
			name: "resources exhausted by another job's allocation",
			snap: snapshotOf([]*structs.Node{node("n1")}, func() *structs.Allocation {
				a := alloc("other", "n1", "db", 800)
				a.JobID = "db"
				return a
			}()),
			plan: func(p *structs.Plan) {
				p.AppendAlloc(alloc("a1", "n1", "web", 300))
			},
			rejected: []string{"n1"},
		},
		{
			name: "an in-place update on a draining node commits",
			snap: snapshotOf([]*structs.Node{node("n1", draining)}, alloc("a1", "n1", "web", 100)),
			plan: func(p *structs.Plan) {
				p.AppendAlloc(alloc("a1", "n1", "web", 100))
			},
			committed: []string{"n1"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := &structs.Plan{EvalID: "e1"}
			tc.plan(plan)
			result, rejected, err := EvaluatePlan(tc.snap, plan)
			require.NoError(t, err)
			var got []string
			for id := range result.NodeAllocation {
				got = append(got, id)
			}
			require.ElementsMatch(t, tc.committed, got)
			var gotRejected []string
			for _, r := range rejected {
				gotRejected = append(gotRejected, r.NodeID)
				require.NotEmpty(t, r.Reason)
			}
			require.Equal(t, tc.rejected, gotRejected, "rejections are sorted by node")
			if len(tc.rejected) > 0 {
				require.Equal(t, uint64(42), result.RefreshIndex)
			} else {
				require.Zero(t, result.RefreshIndex)
			}
		})
	}
}

func TestEvaluatePlanStopsOnRejectedNodesStillCommit(t *testing.T) {
	snap := snapshotOf([]*structs.Node{node("n1", func(n *structs.Node) { n.Status = structs.NodeStatusDown })},
		alloc("old", "n1", "web", 100))
	plan := &structs.Plan{}
	plan.AppendStop(alloc("old", "n1", "web", 100), "replaced")
	plan.AppendAlloc(alloc("new", "n1", "web", 100))
	result, rejected, err := EvaluatePlan(snap, plan)
	require.NoError(t, err)
	require.Len(t, rejected, 1)
	require.Len(t, result.NodeUpdate["n1"], 1)
	require.Empty(t, result.NodeAllocation)
	require.False(t, result.FullCommit(plan))
}

func versioned(a *structs.Allocation, v uint64) *structs.Allocation {
	a.JobVersion = v
	return a
}

// surgeJob is system job "web" at version v whose group "web" has
// drover.surge.
func surgeJob(v uint64) *structs.Job {
	return &structs.Job{ID: "web", Namespace: "default", Type: structs.JobTypeSystem, Version: v,
		TaskGroups: []*structs.TaskGroup{{Name: "web", Meta: map[string]string{structs.DroverMetaSurge: "true"}}}}
}
