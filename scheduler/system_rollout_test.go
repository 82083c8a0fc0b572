package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// TestRollout_UpdateBlock walks the update-block scenarios upstream tests
// (ten nodes, two groups, one evaluation after a destructive change), with
// the outcomes our specification gives them, plus each of our fixes.
func TestRollout_UpdateBlock(t *testing.T) {
	st := func(desired, desiredCanaries int, promoted bool) *structs.DeploymentState {
		return &structs.DeploymentState{DesiredTotal: desired, DesiredCanaries: desiredCanaries, Promoted: promoted}
	}
	cases := []struct {
		name     string
		setup    func(f *fleet)
		u1, u2   *structs.UpdateStrategy
		tg1, tg2 string // gateSummary
		check    func(t *testing.T, f *fleet, res SystemReconcileResult)
	}{
		{
			name: "no update blocks: everything at once, no deployment",
			tg1:  "place=10 destructive=0 canary=0 inplace=0 deferred=0 stop=0 | none",
			tg2:  "place=10 destructive=0 canary=0 inplace=0 deferred=0 stop=0 | none",
		},
		{
			name: "new deployment: max_parallel group waves, group without update block all at once",
			u1:   update(2, 0),
			setup: func(f *fleet) {
				f.deployPrev()
				f.old("tg1", span(0, 10)...)
				f.old("tg2", span(0, 10)...)
			},
			tg1: "place=0 destructive=2 canary=0 inplace=0 deferred=8 stop=0 | total=10 placed=2 canaries=0/0",
			tg2: "place=0 destructive=10 canary=0 inplace=0 deferred=0 stop=0 | untracked",
			check: func(t *testing.T, f *fleet, res SystemReconcileResult) {
				require.Equal(t, []string{"n00", "n01"}, nodesOf(groupNamed(res, "tg1").DestructiveUpdate), "node order")
				require.Empty(t, res.DeploymentUpdates, "a successful deployment is not cancelled")
			},
		},
		{
			name: "mid-deployment: healthy allocations free their slots",
			u1:   update(2, 0), u2: update(3, 0),
			setup: func(f *fleet) {
				f.deploy(structs.DeploymentStatusRunning, map[string]*structs.DeploymentState{"tg1": st(10, 0, false), "tg2": st(10, 0, false)})
				f.old("tg1", span(2, 10)...)
				f.cur("tg1", healthy, false, 0, 1)
				f.old("tg2", span(3, 10)...)
				f.cur("tg2", healthy, false, 0, 1, 2)
			},
			tg1: "place=0 destructive=2 canary=0 inplace=0 deferred=6 stop=0 | total=10 placed=4 canaries=0/0",
			tg2: "place=0 destructive=3 canary=0 inplace=0 deferred=4 stop=0 | total=10 placed=6 canaries=0/0",
		},
		{
			name: "no deployment of the version yet, new version already on some nodes: a deployment is created and still waves",
			u1:   update(2, 0), u2: update(3, 0),
			setup: func(f *fleet) {
				f.old("tg1", span(2, 10)...)
				f.cur("tg1", healthy, false, 0, 1)
				f.old("tg2", span(3, 10)...)
				f.cur("tg2", healthy, false, 0, 1, 2)
			},
			tg1: "place=0 destructive=2 canary=0 inplace=0 deferred=6 stop=0 | total=10 placed=2 canaries=0/0",
			tg2: "place=0 destructive=3 canary=0 inplace=0 deferred=4 stop=0 | total=10 placed=3 canaries=0/0",
			check: func(t *testing.T, f *fleet, res SystemReconcileResult) {
				require.Empty(t, res.Deployment.ID, "created")
			},
		},
		{
			name: "failed allocations are retried on their nodes within max_parallel, before more updates",
			u1:   update(2, 0), u2: update(3, 0),
			setup: func(f *fleet) {
				f.deploy(structs.DeploymentStatusRunning, map[string]*structs.DeploymentState{"tg1": st(10, 0, false), "tg2": st(10, 0, false)})
				f.old("tg1", span(2, 10)...)
				f.cur("tg1", failed, false, 0, 1)
				f.old("tg2", span(3, 10)...)
				f.cur("tg2", failed, false, 0, 1)
				f.cur("tg2", pending, false, 2)
			},
			tg1: "place=2 destructive=0 canary=0 inplace=0 deferred=8 stop=0 | total=10 placed=4 canaries=0/0",
			tg2: "place=2 destructive=0 canary=0 inplace=0 deferred=7 stop=0 | total=10 placed=5 canaries=0/0",
		},
		{
			name: "unhealthy allocations that still run keep their slots",
			u1:   update(2, 0),
			setup: func(f *fleet) {
				f.deploy(structs.DeploymentStatusRunning, map[string]*structs.DeploymentState{"tg1": st(10, 0, false)})
				f.old("tg1", span(2, 10)...)
				f.cur("tg1", unhealthy, false, 0)
				f.cur("tg1", pending, false, 1)
			},
			tg1: "place=0 destructive=0 canary=0 inplace=0 deferred=8 stop=0 | total=10 placed=2 canaries=0/0",
			tg2: "place=10 destructive=0 canary=0 inplace=0 deferred=0 stop=0 | untracked",
		},
		{
			name: "underprovisioned: empty nodes filled at once plus one wave",
			u1:   update(2, 0), u2: update(3, 0),
			setup: func(f *fleet) {
				f.deployPrev()
				f.old("tg1", span(0, 5)...)
				f.old("tg2", span(0, 3)...)
			},
			tg1: "place=5 destructive=2 canary=0 inplace=0 deferred=3 stop=0 | total=10 placed=7 canaries=0/0",
			tg2: "place=7 destructive=3 canary=0 inplace=0 deferred=0 stop=0 | total=10 placed=10 canaries=0/0",
		},
		{
			name: "new deployment with canaries: percentage rounded up, capped by max_parallel; the other group waves",
			u1:   update(2, 30), u2: update(5, 0),
			setup: func(f *fleet) {
				f.deployPrev()
				f.old("tg1", span(0, 10)...)
				f.old("tg2", span(0, 8)...)
			},
			tg1: "place=0 destructive=2 canary=2 inplace=0 deferred=8 stop=0 | total=10 placed=2 canaries=2/2",
			tg2: "place=2 destructive=5 canary=0 inplace=0 deferred=3 stop=0 | total=10 placed=7 canaries=0/0",
			check: func(t *testing.T, f *fleet, res SystemReconcileResult) {
				require.Equal(t, []string{"n00*", "n01*"}, nodesOf(groupNamed(res, "tg1").DestructiveUpdate))
				require.Equal(t, structs.DeploymentStatusDescriptionRunningNeedsPromotion, res.Deployment.StatusDescription,
					"set on the first plan")
			},
		},
		{
			name: "failed canary: retried as a canary on its node, one more canary, the empty node waits",
			u1:   update(3, 30), u2: update(5, 0),
			setup: func(f *fleet) {
				f.deploy(structs.DeploymentStatusRunning, map[string]*structs.DeploymentState{"tg1": st(10, 3, false), "tg2": st(10, 0, false)})
				f.old("tg1", span(3, 10)...)
				f.cur("tg1", healthy, true, 0)
				f.cur("tg1", failed, true, 1)
				f.old("tg2", span(0, 10)...)
			},
			tg1: "place=1 destructive=1 canary=2 inplace=0 deferred=7 stop=0 | total=10 placed=4 canaries=4/3",
			tg2: "place=0 destructive=5 canary=0 inplace=0 deferred=5 stop=0 | total=10 placed=5 canaries=0/0",
			check: func(t *testing.T, f *fleet, res SystemReconcileResult) {
				g := groupNamed(res, "tg1")
				require.Equal(t, []string{"n01*"}, nodesOf(g.Place), "the failed canary's node")
				require.Equal(t, []string{"n03*"}, nodesOf(g.DestructiveUpdate))
				require.Contains(t, nodesOf(g.Deferred), "n02", "joined during canaries")
			},
		},
		{
			name: "canaries partly placed: the rest of them only",
			u1:   update(2, 30), u2: update(5, 0),
			setup: func(f *fleet) {
				f.deploy(structs.DeploymentStatusRunning, map[string]*structs.DeploymentState{"tg1": st(10, 2, false), "tg2": st(10, 0, false)})
				f.old("tg1", span(1, 10)...)
				f.cur("tg1", healthy, true, 0)
				f.old("tg2", span(5, 10)...)
				f.cur("tg2", healthy, false, span(0, 5)...)
			},
			tg1: "place=0 destructive=1 canary=1 inplace=0 deferred=8 stop=0 | total=10 placed=2 canaries=2/2",
			tg2: "place=0 destructive=5 canary=0 inplace=0 deferred=0 stop=0 | total=10 placed=10 canaries=0/0",
		},
		{
			name: "canaries awaiting promotion: nothing moves",
			u1:   update(3, 30), u2: update(3, 30),
			setup: func(f *fleet) {
				f.deploy(structs.DeploymentStatusRunning, map[string]*structs.DeploymentState{"tg1": st(10, 3, false), "tg2": st(10, 3, false)})
				f.d.TaskGroups["tg2"].AutoPromote = true
				f.old("tg1", span(3, 10)...)
				f.cur("tg1", healthy, true, 0, 1, 2)
				f.old("tg2", span(3, 10)...)
				f.cur("tg2", healthy, true, 0, 1, 2)
			},
			tg1: "place=0 destructive=0 canary=0 inplace=0 deferred=7 stop=0 | total=10 placed=3 canaries=3/3",
			tg2: "place=0 destructive=0 canary=0 inplace=0 deferred=7 stop=0 | total=10 placed=3 canaries=3/3",
			check: func(t *testing.T, f *fleet, res SystemReconcileResult) {
				require.Equal(t, structs.DeploymentStatusDescriptionRunningNeedsPromotion, res.Deployment.StatusDescription,
					"one group needs a manual promotion")
			},
		},
		{
			name: "canaries promoted: waves of max_parallel",
			u1:   update(2, 30), u2: update(5, 0),
			setup: func(f *fleet) {
				f.deploy(structs.DeploymentStatusRunning, map[string]*structs.DeploymentState{"tg1": st(10, 2, true), "tg2": st(10, 0, false)})
				f.d.StatusDescription = structs.DeploymentStatusDescriptionRunningNeedsPromotion
				f.old("tg1", span(3, 10)...)
				f.cur("tg1", healthy, true, 0, 1)
				f.cur("tg1", healthy, false, 2)
				f.old("tg2", span(0, 10)...)
			},
			tg1: "place=0 destructive=2 canary=0 inplace=0 deferred=5 stop=0 | total=10 placed=5 canaries=2/2",
			tg2: "place=0 destructive=5 canary=0 inplace=0 deferred=5 stop=0 | total=10 placed=5 canaries=0/0",
			check: func(t *testing.T, f *fleet, res SystemReconcileResult) {
				require.Equal(t, structs.DeploymentStatusDescriptionRunning, res.Deployment.StatusDescription)
			},
		},
		{
			name: "ineligible nodes keep the old version and leave DesiredTotal",
			u1:   update(10, 30), u2: update(10, 0),
			setup: func(f *fleet) {
				ineligible(f.nodes[0])
				ineligible(f.nodes[1])
				f.deploy(structs.DeploymentStatusRunning, map[string]*structs.DeploymentState{"tg1": st(10, 3, true), "tg2": st(10, 0, false)})
				f.old("tg1", span(0, 2)...)
				f.old("tg1", span(5, 10)...)
				f.cur("tg1", healthy, true, 2, 3, 4)
				f.old("tg2", span(0, 10)...)
			},
			tg1: "place=0 destructive=5 canary=0 inplace=0 deferred=0 stop=0 | total=8 placed=8 canaries=3/3",
			tg2: "place=0 destructive=8 canary=0 inplace=0 deferred=0 stop=0 | total=8 placed=8 canaries=0/0",
		},
		{
			name: "nothing destructive: no canaries, everything placed",
			u1:   update(2, 30), u2: update(2, 30),
			setup: func(f *fleet) {
				f.deploy(structs.DeploymentStatusRunning, map[string]*structs.DeploymentState{})
			},
			tg1: "place=10 destructive=0 canary=0 inplace=0 deferred=0 stop=0 | total=10 placed=10 canaries=0/0",
			tg2: "place=10 destructive=0 canary=0 inplace=0 deferred=0 stop=0 | total=10 placed=10 canaries=0/0",
		},
		{
			name: "changing constraints: canaries counted on the feasible nodes, the infeasible one stops",
			u1:   update(10, 30), u2: update(10, 0),
			setup: func(f *fleet) {
				for i, n := range f.nodes {
					n.Meta = map[string]string{"rack": "r1"}
					if i == 0 {
						n.Meta = map[string]string{"rack": "r2"}
					}
				}
				f.v1 = changeGroup(f.v1, 0, func(tg *structs.TaskGroup) {
					tg.Constraints = []*structs.Constraint{{LTarget: "${meta.rack}", Operand: "=", RTarget: "r1"}}
				})
				f.deployPrev()
				f.old("tg1", span(0, 10)...)
				f.old("tg2", span(0, 10)...)
			},
			tg1: "place=0 destructive=3 canary=3 inplace=0 deferred=6 stop=1 | total=9 placed=3 canaries=3/3",
			tg2: "place=0 destructive=10 canary=0 inplace=0 deferred=0 stop=0 | total=10 placed=10 canaries=0/0",
		},
		{
			name: "paused: nothing placed, replaced or updated; the draining node's allocations are left to the drainer",
			u1:   update(2, 0), u2: update(2, 0),
			setup: func(f *fleet) {
				draining(f.nodes[9])
				f.nodes = append(f.nodes, testNode("n10"))
				f.deploy(structs.DeploymentStatusPaused, map[string]*structs.DeploymentState{"tg1": st(10, 0, false), "tg2": st(10, 0, false)})
				f.d.StatusDescription = structs.DeploymentStatusDescriptionPaused
				f.old("tg1", span(2, 10)...)
				f.cur("tg1", failed, false, 0)
				f.cur("tg1", healthy, false, 1)
				f.old("tg2", span(0, 10)...)
			},
			tg1: "place=0 destructive=0 canary=0 inplace=0 deferred=9 stop=0 | total=10 placed=2 canaries=0/0",
			tg2: "place=0 destructive=0 canary=0 inplace=0 deferred=10 stop=0 | total=10 placed=0 canaries=0/0",
			check: func(t *testing.T, f *fleet, res SystemReconcileResult) {
				require.Equal(t, structs.DeploymentStatusPaused, res.Deployment.Status)
				require.Equal(t, structs.DeploymentStatusDescriptionPaused, res.Deployment.StatusDescription)
			},
		},
		{
			name: "failed deployment of the version: no more nodes get it, joining ones included",
			u1:   update(2, 0), u2: nil,
			setup: func(f *fleet) {
				f.nodes = append(f.nodes, testNode("n10"))
				f.deploy(structs.DeploymentStatusFailed, map[string]*structs.DeploymentState{"tg1": st(10, 0, false)})
				f.old("tg1", span(2, 10)...)
				f.cur("tg1", healthy, false, 0)
				f.cur("tg1", failed, false, 1)
				f.old("tg2", span(0, 10)...)
			},
			tg1: "place=0 destructive=0 canary=0 inplace=0 deferred=10 stop=0 | none",
			tg2: "place=1 destructive=10 canary=0 inplace=0 deferred=0 stop=0 | none",
			check: func(t *testing.T, f *fleet, res SystemReconcileResult) {
				require.Empty(t, res.DeploymentUpdates)
			},
		},
		{
			name: "cancelled deployment of the version: nothing more of it",
			u1:   update(2, 0), u2: update(2, 0),
			setup: func(f *fleet) {
				f.deploy(structs.DeploymentStatusCancelled, map[string]*structs.DeploymentState{"tg1": st(10, 0, false), "tg2": st(10, 0, false)})
				f.old("tg1", span(0, 10)...)
				f.old("tg2", span(0, 10)...)
			},
			tg1: "place=0 destructive=0 canary=0 inplace=0 deferred=10 stop=0 | none",
			tg2: "place=0 destructive=0 canary=0 inplace=0 deferred=10 stop=0 | none",
		},
		{
			name: "nodes joining while canaries await promotion get nothing",
			u1:   update(2, 50), u2: update(2, 0),
			setup: func(f *fleet) {
				f.nodes = append(f.nodes, testNode("n10"), testNode("n11"))
				f.deploy(structs.DeploymentStatusRunning, map[string]*structs.DeploymentState{"tg1": st(10, 2, false), "tg2": st(10, 0, false)})
				f.old("tg1", span(2, 10)...)
				f.cur("tg1", healthy, true, 0, 1)
				f.old("tg2", span(2, 10)...)
				f.cur("tg2", healthy, false, 0, 1)
			},
			tg1: "place=0 destructive=0 canary=0 inplace=0 deferred=10 stop=0 | total=12 placed=2 canaries=2/2",
			tg2: "place=2 destructive=2 canary=0 inplace=0 deferred=6 stop=0 | total=12 placed=6 canaries=0/0",
			check: func(t *testing.T, f *fleet, res SystemReconcileResult) {
				require.Equal(t, []string{"n10", "n11"}, nodesOf(groupNamed(res, "tg2").Place), "not canarying: joins are placed")
			},
		},
		{
			name: "draining node leaves DesiredTotal: it never stalls the deployment",
			u1:   update(2, 0), u2: nil,
			setup: func(f *fleet) {
				draining(f.nodes[0])
				f.deploy(structs.DeploymentStatusRunning, map[string]*structs.DeploymentState{"tg1": st(10, 0, false)})
				f.cur("tg1", healthy, false, span(0, 10)...)
				f.old("tg2", span(0, 10)...)
			},
			tg1: "place=0 destructive=0 canary=0 inplace=0 deferred=0 stop=0 | total=9 placed=10 canaries=0/0",
			tg2: "place=0 destructive=9 canary=0 inplace=0 deferred=0 stop=0 | untracked",
		},
		{
			name: "canary above 100 percent is clamped to every node",
			u1:   update(20, 250), u2: nil,
			setup: func(f *fleet) {
				f.nodes = f.nodes[:4]
				f.old("tg1", span(0, 4)...)
			},
			tg1: "place=0 destructive=4 canary=4 inplace=0 deferred=0 stop=0 | total=4 placed=4 canaries=4/4",
			tg2: "place=4 destructive=0 canary=0 inplace=0 deferred=0 stop=0 | untracked",
		},
		{
			name: "canaries prefer nodes that ran canaries of an earlier version",
			u1:   update(2, 20), u2: nil,
			setup: func(f *fleet) {
				f.deployPrev()
				f.prev.TaskGroups["tg1"] = &structs.DeploymentState{PlacedCanaries: []string{"tg1-n07-v0"}}
				f.old("tg1", span(0, 10)...)
				for _, a := range f.allocs {
					if a.NodeID == "n04" {
						a.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: true}
					}
				}
			},
			tg1: "place=0 destructive=2 canary=2 inplace=0 deferred=8 stop=0 | total=10 placed=2 canaries=2/2",
			tg2: "place=10 destructive=0 canary=0 inplace=0 deferred=0 stop=0 | untracked",
			check: func(t *testing.T, f *fleet, res SystemReconcileResult) {
				require.Equal(t, []string{"n04*", "n07*"}, nodesOf(groupNamed(res, "tg1").DestructiveUpdate))
			},
		},
		{
			name: "pending allocations of the deployment use the budget of their group only",
			u1:   update(2, 0), u2: update(2, 0),
			setup: func(f *fleet) {
				f.nodes = f.nodes[:4]
				f.deploy(structs.DeploymentStatusRunning, map[string]*structs.DeploymentState{"tg1": st(4, 0, false), "tg2": st(4, 0, false)})
				f.old("tg1", span(2, 4)...)
				f.cur("tg1", pending, false, 0, 1)
				f.old("tg2", span(0, 4)...)
			},
			tg1: "place=0 destructive=0 canary=0 inplace=0 deferred=2 stop=0 | total=4 placed=2 canaries=0/0",
			tg2: "place=0 destructive=2 canary=0 inplace=0 deferred=2 stop=0 | total=4 placed=2 canaries=0/0",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFleet(10, tc.u1, tc.u2)
			if tc.setup != nil {
				tc.setup(f)
			}
			res := f.reconcile()
			require.Equal(t, tc.tg1, gateSummary(res, "tg1"), "tg1")
			require.Equal(t, tc.tg2, gateSummary(res, "tg2"), "tg2")
			if tc.check != nil {
				tc.check(t, f, res)
			}
		})
	}
}

func TestRollout_InfeasibleNodes(t *testing.T) {
	linuxOnly := func(f *fleet) {
		f.nodes = f.nodes[:4]
		f.nodes[2].Attributes = map[string]string{"kernel.name": "windows"}
		f.nodes[3].Attributes = map[string]string{"kernel.name": "windows"}
		for _, j := range []*structs.Job{f.v0, f.v1} {
			j.Constraints = []*structs.Constraint{{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "linux"}}
		}
	}
	t.Run("unchanged job after success: nothing to do, no deployment", func(t *testing.T) {
		f := newFleet(4, update(4, 100), nil)
		linuxOnly(f)
		f.deployPrev()
		f.old("tg1", 0, 1)
		f.old("tg2", 0, 1)
		res := f.reconcile(f.v0)
		require.Nil(t, res.Deployment)
		require.Equal(t, "place=0 destructive=0 canary=0 inplace=0 deferred=0 stop=0 | none", gateSummary(res, "tg1"))
	})
	t.Run("canary 100 percent counts feasible nodes only", func(t *testing.T) {
		f := newFleet(4, update(4, 100), nil)
		linuxOnly(f)
		f.deployPrev()
		f.old("tg1", 0, 1)
		res := f.reconcile()
		require.Equal(t, "place=0 destructive=2 canary=2 inplace=0 deferred=0 stop=0 | total=2 placed=2 canaries=2/2", gateSummary(res, "tg1"))
	})
	t.Run("a node turning infeasible: its allocation stops, one canary on the other", func(t *testing.T) {
		f := newFleet(2, update(1, 50), nil)
		f.old("tg1", 0, 1)
		f.nodes[1].Attributes = map[string]string{"kernel.name": "windows"}
		f.v1.Constraints = []*structs.Constraint{{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "linux"}}
		res := f.reconcile()
		require.Equal(t, "place=0 destructive=1 canary=1 inplace=0 deferred=0 stop=1 | total=1 placed=1 canaries=1/1", gateSummary(res, "tg1"))
	})
}

func TestRollout_Stagger(t *testing.T) {
	setup := func(lastWave time.Duration) *fleet {
		u := update(2, 0)
		u.Stagger = 30 * time.Second
		f := newFleet(6, u, nil)
		f.deploy(structs.DeploymentStatusRunning, map[string]*structs.DeploymentState{"tg1": {DesiredTotal: 6}})
		f.old("tg1", span(2, 5)...)
		for _, a := range f.cur("tg1", healthy, false, 0, 1) {
			a.CreateTime = f.now.Add(-lastWave).UnixNano()
		}
		return f
	}
	t.Run("the next wave waits until stagger after the last one started", func(t *testing.T) {
		f := setup(10 * time.Second)
		res := f.reconcile()
		require.Equal(t, "place=1 destructive=0 canary=0 inplace=0 deferred=3 stop=0 | total=6 placed=3 canaries=0/0",
			gateSummary(res, "tg1"), "the empty node is not a wave")
		require.Equal(t, f.now.Add(20*time.Second), res.FollowupAt)
	})
	t.Run("after stagger the wave starts", func(t *testing.T) {
		f := setup(30 * time.Second)
		res := f.reconcile()
		require.Equal(t, "place=1 destructive=2 canary=0 inplace=0 deferred=1 stop=0 | total=6 placed=5 canaries=0/0", gateSummary(res, "tg1"))
		require.True(t, res.FollowupAt.IsZero())
	})
	t.Run("no follow-up while the budget is used: health changes bring the next evaluation", func(t *testing.T) {
		f := setup(10 * time.Second)
		for _, a := range f.allocs {
			if a.DeploymentID == "d1" {
				a.DeploymentStatus.Healthy = nil
			}
		}
		res := f.reconcile()
		require.True(t, res.FollowupAt.IsZero())
	})
}

func TestRollout_InplaceUpdates(t *testing.T) {
	inplace := func(tg *structs.TaskGroup) { tg.Meta = map[string]string{"v": "2"} }
	t.Run("not limited by max_parallel, and they report health again", func(t *testing.T) {
		f := newFleet(5, update(1, 50), nil)
		f.v1 = changeGroup(nextVersion(f.v0, inplace), 1, inplace)
		f.old("tg1", span(0, 5)...)
		res := f.reconcile()
		require.Equal(t, "place=0 destructive=0 canary=0 inplace=5 deferred=0 stop=0 | total=5 placed=5 canaries=0/0", gateSummary(res, "tg1"))
	})
	t.Run("held while paused", func(t *testing.T) {
		f := newFleet(3, update(1, 0), nil)
		f.v1 = nextVersion(f.v0, inplace)
		f.deploy(structs.DeploymentStatusPaused, map[string]*structs.DeploymentState{"tg1": {DesiredTotal: 3}})
		f.old("tg1", span(0, 3)...)
		res := f.reconcile()
		require.Equal(t, "place=0 destructive=0 canary=0 inplace=0 deferred=0 stop=0 | total=3 placed=0 canaries=0/0", gateSummary(res, "tg1"))
		require.Len(t, groupNamed(res, "tg1").Ignore, 3)
	})
}

func TestRollout_Version0HasNoCanaries(t *testing.T) {
	f := newFleet(4, update(1, 50), nil)
	f.v0.TaskGroups[0].Update = update(1, 50)
	res := f.reconcile(f.v0)
	require.Equal(t, "place=4 destructive=0 canary=0 inplace=0 deferred=0 stop=0 | total=4 placed=4 canaries=0/0", gateSummary(res, "tg1"))
}

func TestRollout_RevertGetsItsOwnDeployment(t *testing.T) {
	f := newFleet(3, update(1, 0), nil)
	f.deploy(structs.DeploymentStatusFailed, map[string]*structs.DeploymentState{"tg1": {DesiredTotal: 3}})
	f.old("tg1", 1, 2)
	f.cur("tg1", unhealthy, false, 0)
	revert := f.v0.Copy()
	revert.Version, revert.JobModifyIndex = 2, 40
	res := f.reconcile(revert)
	require.NotNil(t, res.Deployment)
	require.Empty(t, res.Deployment.ID, "a new deployment")
	require.Equal(t, uint64(2), res.Deployment.JobVersion)
	require.Empty(t, res.DeploymentUpdates, "the failed one is left alone")
	require.Equal(t, "place=0 destructive=1 canary=0 inplace=2 deferred=0 stop=0 | total=3 placed=3 canaries=0/0", gateSummary(res, "tg1"),
		"the failed node is replaced; the others already run the reverted spec and move in place")
}

func TestRollout_NilGroupState(t *testing.T) {
	f := newFleet(2, update(1, 0), update(1, 0))
	f.deploy(structs.DeploymentStatusRunning, map[string]*structs.DeploymentState{"tg1": nil, "tg2": {DesiredTotal: 2}})
	f.old("tg1", 0, 1)
	f.old("tg2", 0, 1)
	res := f.reconcile()
	require.Equal(t, "place=0 destructive=1 canary=0 inplace=0 deferred=1 stop=0 | total=2 placed=1 canaries=0/0", gateSummary(res, "tg1"))
}

// A rollback to a spec that already proved itself (an auto-revert or a `job
// revert` to a stable version) gets no canaries, so it never waits for a
// manual promotion; it still rolls in waves of max_parallel.
func TestRollout_RevertToStableSpecSkipsCanaries(t *testing.T) {
	f := newFleet(4, update(2, 50), nil)
	f.deploy(structs.DeploymentStatusFailed, map[string]*structs.DeploymentState{"tg1": {DesiredTotal: 4}})
	f.old("tg1", span(0, 4)...)
	revert := f.v1.Copy()
	revert.Version, revert.JobModifyIndex = 5, 50
	in := SystemReconcileInput{Job: revert, Nodes: f.nodes, Allocs: f.allocs, Deployment: f.d, Now: f.now, Feasible: NewFeasibleFunc(revert)}

	withCanaries := ReconcileSystem(in)
	require.Equal(t, uint64(2), withCanaries.DesiredTGUpdates["tg1"].Canary, "an ordinary new version canaries 50%")

	in.RevertsToStable = true
	res := ReconcileSystem(in)
	require.Equal(t, "place=0 destructive=2 canary=0 inplace=0 deferred=2 stop=0 | total=4 placed=2 canaries=0/0", gateSummary(res, "tg1"))
	require.Equal(t, structs.DeploymentStatusDescriptionRunning, res.Deployment.StatusDescription)
}

func TestRevertsToStable(t *testing.T) {
	v0 := &structs.Job{ID: "web", Version: 0, Stable: true, Priority: 50}
	v1 := &structs.Job{ID: "web", Version: 1, Stable: false, Priority: 60}
	revert := &structs.Job{ID: "web", Version: 2, Priority: 50}
	require.True(t, revertsToStable(revert, []*structs.Job{revert, v1, v0}))
	unstable := *v0
	unstable.Stable = false
	require.False(t, revertsToStable(revert, []*structs.Job{revert, v1, &unstable}), "only stable versions count")
	require.False(t, revertsToStable(v1, []*structs.Job{v1, v0}), "a changed spec is no revert")
}
