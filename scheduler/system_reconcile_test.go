package scheduler

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// groupWant is the expected summary of one group: the names of the nodes in
// each set (sorted, as the result is).
type groupWant struct {
	place, inplace, destructive, stop, lost, ignore, filtered []string
	stopReasons                                               []string // optional, in stop order
}

// assertGroup compares a group's sets with want, naming the set that differs.
func assertGroup(t *testing.T, want groupWant, got *SystemGroupResult) {
	t.Helper()
	require.NotNil(t, got, "group missing from result")
	placements := func(ps []SystemPlacement) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Node.Name)
		}
		return out
	}
	allocNodes := func(as []*structs.Allocation) []string {
		var out []string
		for _, a := range as {
			out = append(out, a.NodeID)
		}
		return out
	}
	var stops, reasons, filtered []string
	for _, s := range got.Stop {
		stops, reasons = append(stops, s.Alloc.NodeID), append(reasons, s.Reason)
	}
	for _, f := range got.Filtered {
		filtered = append(filtered, f.Node.Name)
	}
	name := got.Name
	check := func(set string, want, got []string) {
		t.Helper()
		if len(want) == 0 && len(got) == 0 {
			return
		}
		require.Equal(t, want, got, "group %q: set %s", name, set)
	}
	check("Place", want.place, placements(got.Place))
	check("DestructiveUpdate", want.destructive, placements(got.DestructiveUpdate))
	check("InplaceUpdate", want.inplace, allocNodes(got.InplaceUpdate))
	check("Stop", want.stop, stops)
	check("Lost", want.lost, allocNodes(got.Lost))
	check("Ignore", want.ignore, allocNodes(got.Ignore))
	check("Filtered", want.filtered, filtered)
	if want.stopReasons != nil {
		check("Stop reasons", want.stopReasons, reasons)
	}
	d := got.desiredUpdates()
	require.Equal(t, uint64(len(want.place)), d.Place, "DesiredTGUpdates.Place")
	require.Equal(t, uint64(len(want.stop)+len(want.lost)), d.Stop, "DesiredTGUpdates.Stop")
}

func groupNamed(res SystemReconcileResult, name string) *SystemGroupResult {
	for _, g := range res.Groups {
		if g.Name == name {
			return g
		}
	}
	return nil
}

// reconcile runs ReconcileSystem with the job's real feasibility checks.
func reconcile(job *structs.Job, nodes []*structs.Node, allocs []*structs.Allocation, d *structs.Deployment) SystemReconcileResult {
	in := SystemReconcileInput{Job: job, Nodes: nodes, Allocs: allocs, Deployment: d, Now: time.Unix(1000, 0)}
	if job != nil {
		in.Feasible = NewFeasibleFunc(job)
	}
	return ReconcileSystem(in)
}

func TestReconcile(t *testing.T) {
	v0 := testJob("web")
	v1Destructive := nextVersion(v0, destructiveChange)
	v1Inplace := nextVersion(v0, inplaceChange)
	v1Rack := nextVersion(v0, func(tg *structs.TaskGroup) {
		tg.Constraints = []*structs.Constraint{{LTarget: "${meta.rack}", RTarget: "r1", Operand: "="}}
	})
	stopped := v0.Copy()
	stopped.Stop = true
	sysbatch := testJob("batch")
	sysbatch.Type = structs.JobTypeSysBatch
	sysbatchV1 := nextVersion(sysbatch, destructiveChange)
	sysbatchPurged, sysbatchAgain := sysbatch.Copy(), sysbatch.Copy() // the same ID, purged and registered again
	sysbatchPurged.CreateIndex, sysbatchAgain.CreateIndex = 10, 50
	sysbatchPurgedV2 := sysbatchPurged.Copy()
	sysbatchPurgedV2.Version = 2
	globJob := v0.Copy()
	globJob.Datacenters = []string{"us-*"}
	gpuJob, allPoolJob := v0.Copy(), v0.Copy()
	gpuJob.NodePool, allPoolJob.NodePool = "gpu", "all"
	rack := func(r string) nodeOpt {
		return func(n *structs.Node) { n.Meta = map[string]string{"rack": r} }
	}
	noRawExec := func(n *structs.Node) {
		n.Drivers = map[string]*structs.DriverInfo{"docker": {Detected: true, Healthy: true}}
	}
	initializing := func(n *structs.Node) { n.Status = structs.NodeStatusInit }
	dup := testAlloc("dup-old", v0, "a")
	dup.CreateIndex = 9
	dupCurrent := testAlloc("dup-new", v1Destructive, "a")
	dupCurrent.CreateIndex = 3

	cases := []struct {
		name   string
		job    *structs.Job
		nodes  []*structs.Node
		allocs []*structs.Allocation
		want   groupWant
	}{
		{
			name: "fresh placement on every eligible node only",
			job:  v0,
			nodes: []*structs.Node{testNode("a"), testNode("b"), testNode("c"), testNode("d", down),
				testNode("e", ineligible), testNode("f", draining), testNode("g", initializing)},
			want: groupWant{place: []string{"a", "b", "c"}},
		},
		{
			name:   "node join places there and keeps the others",
			job:    v0,
			nodes:  []*structs.Node{testNode("a"), testNode("b"), testNode("c")},
			allocs: []*structs.Allocation{testAlloc("1", v0, "a"), testAlloc("2", v0, "b")},
			want:   groupWant{place: []string{"c"}, ignore: []string{"a", "b"}},
		},
		{
			name:   "down node: live alloc lost, terminal one left alone",
			job:    v0,
			nodes:  []*structs.Node{testNode("a"), testNode("b", down), testNode("c", down)},
			allocs: []*structs.Allocation{testAlloc("1", v0, "a"), testAlloc("2", v0, "b"), withClientStatus(testAlloc("3", v0, "c"), structs.AllocClientStatusComplete)},
			want:   groupWant{ignore: []string{"a"}, lost: []string{"b"}},
		},
		{
			name:   "node removed from the cluster: alloc lost",
			job:    v0,
			nodes:  []*structs.Node{testNode("a")},
			allocs: []*structs.Allocation{testAlloc("1", v0, "a"), testAlloc("2", v0, "gone")},
			want:   groupWant{ignore: []string{"a"}, lost: []string{"gone"}},
		},
		{
			name:   "ineligible node keeps its alloc and gets no placement",
			job:    v0,
			nodes:  []*structs.Node{testNode("a"), testNode("b", ineligible), testNode("c", ineligible), testNode("d", initializing)},
			allocs: []*structs.Allocation{testAlloc("1", v0, "a"), testAlloc("2", v0, "b"), testAlloc("3", v0, "d")},
			want:   groupWant{ignore: []string{"a", "b", "d"}},
		},
		{
			name:   "ineligible node: no destructive update",
			job:    v1Destructive,
			nodes:  []*structs.Node{testNode("a"), testNode("b", ineligible)},
			allocs: []*structs.Allocation{testAlloc("1", v0, "a"), testAlloc("2", v0, "b")},
			want:   groupWant{destructive: []string{"a"}, ignore: []string{"b"}},
		},
		{
			name:   "ineligible node: in-place update goes ahead",
			job:    v1Inplace,
			nodes:  []*structs.Node{testNode("a"), testNode("b", ineligible)},
			allocs: []*structs.Allocation{testAlloc("1", v0, "a"), testAlloc("2", v0, "b")},
			want:   groupWant{inplace: []string{"a", "b"}},
		},
		{
			name:   "draining node keeps its alloc for the drainer to stop, gets no placement",
			job:    v0,
			nodes:  []*structs.Node{testNode("a"), testNode("b", draining), testNode("c", draining)},
			allocs: []*structs.Allocation{testAlloc("1", v0, "a"), testAlloc("2", v0, "b")},
			want:   groupWant{ignore: []string{"a", "b"}},
		},
		{
			name:  "infeasible node gets nothing",
			job:   v1Rack,
			nodes: []*structs.Node{testNode("a", rack("r1")), testNode("b", rack("r2")), testNode("c")},
			want:  groupWant{place: []string{"a"}, filtered: []string{"b", "c"}},
		},
		{
			name:   "constraint change stops the alloc on a node no longer feasible",
			job:    v1Rack,
			nodes:  []*structs.Node{testNode("a", rack("r1")), testNode("b", rack("r2"))},
			allocs: []*structs.Allocation{testAlloc("1", v0, "a"), testAlloc("2", v0, "b")},
			want: groupWant{inplace: []string{"a"}, stop: []string{"b"}, filtered: []string{"b"},
				stopReasons: []string{DescNotNeeded}},
		},
		{
			name:   "missing driver filters the node",
			job:    v0,
			nodes:  []*structs.Node{testNode("a"), testNode("b", noRawExec)},
			want:   groupWant{place: []string{"a"}, filtered: []string{"b"}},
			allocs: nil,
		},
		{
			name:   "in-place update",
			job:    v1Inplace,
			nodes:  []*structs.Node{testNode("a"), testNode("b")},
			allocs: []*structs.Allocation{testAlloc("1", v0, "a"), testAlloc("2", v0, "b")},
			want:   groupWant{inplace: []string{"a", "b"}},
		},
		{
			name:   "destructive update",
			job:    v1Destructive,
			nodes:  []*structs.Node{testNode("a"), testNode("b"), testNode("c")},
			allocs: []*structs.Allocation{testAlloc("1", v0, "a"), testAlloc("2", v0, "b"), testAlloc("3", v1Destructive, "c")},
			want:   groupWant{destructive: []string{"a", "b"}, ignore: []string{"c"}},
		},
		{
			name:   "job stopped: live allocs stop, those on down nodes are lost",
			job:    stopped,
			nodes:  []*structs.Node{testNode("a"), testNode("b", down), testNode("c")},
			allocs: []*structs.Allocation{testAlloc("1", v0, "a"), testAlloc("2", v0, "b"), withDesiredStop(testAlloc("3", v0, "c"))},
			want:   groupWant{stop: []string{"a"}, lost: []string{"b"}, stopReasons: []string{DescNotNeeded}},
		},
		{
			name:   "job purged: live allocs stop",
			job:    nil,
			nodes:  []*structs.Node{testNode("a"), testNode("b")},
			allocs: []*structs.Allocation{testAlloc("1", v0, "a"), testAlloc("2", v0, "b")},
			want:   groupWant{stop: []string{"a", "b"}},
		},
		{
			name:  "system: a finished alloc of the current version is placed again",
			job:   v0,
			nodes: []*structs.Node{testNode("a"), testNode("b")},
			allocs: []*structs.Allocation{withClientStatus(testAlloc("1", v0, "a"), structs.AllocClientStatusFailed),
				withClientStatus(testAlloc("2", v0, "b"), structs.AllocClientStatusComplete)},
			want: groupWant{place: []string{"a", "b"}},
		},
		{
			name:  "sysbatch: a node where the current version finished does not run it again",
			job:   sysbatch,
			nodes: []*structs.Node{testNode("a"), testNode("b"), testNode("c"), testNode("d")},
			allocs: []*structs.Allocation{
				withClientStatus(testAlloc("1", sysbatch, "a"), structs.AllocClientStatusComplete),
				withClientStatus(testAlloc("2", sysbatch, "b"), structs.AllocClientStatusFailed),
				withDesiredStop(testAlloc("3", sysbatch, "c")), // stopped before it finished
			},
			want: groupWant{place: []string{"c", "d"}, ignore: []string{"a", "b"}},
		},
		{
			name:  "sysbatch: a new version runs again everywhere",
			job:   sysbatchV1,
			nodes: []*structs.Node{testNode("a"), testNode("b")},
			allocs: []*structs.Allocation{
				withClientStatus(testAlloc("1", sysbatch, "a"), structs.AllocClientStatusComplete),
				withClientStatus(testAlloc("2", sysbatch, "b"), structs.AllocClientStatusFailed),
			},
			want: groupWant{place: []string{"a", "b"}},
		},
		{
			name:  "sysbatch: a purged job registered again runs again where its predecessor finished",
			job:   sysbatchAgain,
			nodes: []*structs.Node{testNode("a"), testNode("b"), testNode("c"), testNode("d")},
			allocs: []*structs.Allocation{
				withClientStatus(testAlloc("1", sysbatchPurged, "a"), structs.AllocClientStatusComplete),
				withClientStatus(testAlloc("2", sysbatchPurged, "b"), structs.AllocClientStatusFailed),
				withClientStatus(withDesiredStop(testAlloc("3", sysbatchPurged, "c")), structs.AllocClientStatusComplete), // stopped by the purge
				withClientStatus(testAlloc("4", sysbatchPurgedV2, "d"), structs.AllocClientStatusComplete),                // a later version of the purged job
			},
			want: groupWant{place: []string{"a", "b", "c", "d"}},
		},
		{
			name:  "sysbatch: the same incarnation and version does not run again",
			job:   sysbatchAgain,
			nodes: []*structs.Node{testNode("a"), testNode("b")},
			allocs: []*structs.Allocation{
				withClientStatus(testAlloc("1", sysbatchPurged, "a"), structs.AllocClientStatusComplete),
				withClientStatus(testAlloc("2", sysbatchAgain, "b"), structs.AllocClientStatusComplete),
			},
			want: groupWant{place: []string{"a"}, ignore: []string{"b"}},
		},
		{
			name:   "datacenter glob",
			job:    globJob,
			nodes:  []*structs.Node{testNode("a", inDC("us-east")), testNode("b", inDC("us-west")), testNode("c", inDC("eu-west"))},
			allocs: []*structs.Allocation{testAlloc("1", globJob, "c")},
			want:   groupWant{place: []string{"a", "b"}, stop: []string{"c"}},
		},
		{
			name:  "node pool",
			job:   gpuJob,
			nodes: []*structs.Node{testNode("a", inPool("gpu")), testNode("b")},
			want:  groupWant{place: []string{"a"}},
		},
		{
			name:  "node pool all",
			job:   allPoolJob,
			nodes: []*structs.Node{testNode("a", inPool("gpu")), testNode("b")},
			want:  groupWant{place: []string{"a", "b"}},
		},
		{
			name:   "two live allocs on one node: the current one is kept",
			job:    v1Destructive,
			nodes:  []*structs.Node{testNode("a")},
			allocs: []*structs.Allocation{dup, dupCurrent},
			want:   groupWant{ignore: []string{"a"}, stop: []string{"a"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := reconcile(tc.job, tc.nodes, tc.allocs, nil)
			assertGroup(t, tc.want, groupNamed(res, "web"))
		})
	}
}

func TestReconcile_KeepsCurrentOfDuplicates(t *testing.T) {
	v0 := testJob("web")
	v1 := nextVersion(v0, destructiveChange)
	old, cur := testAlloc("old", v0, "a"), testAlloc("cur", v1, "a")
	old.CreateIndex, cur.CreateIndex = 9, 3
	g := groupNamed(reconcile(v1, []*structs.Node{testNode("a")}, []*structs.Allocation{old, cur}, nil), "web")
	require.Equal(t, "cur", g.Ignore[0].ID)
	require.Equal(t, "old", g.Stop[0].Alloc.ID)
}

func TestReconcile_GroupRemoved(t *testing.T) {
	v0 := testJob("web")
	v1 := nextVersion(v0, func(tg *structs.TaskGroup) { tg.Name = "api" })
	nodes := []*structs.Node{testNode("a"), testNode("b")}
	res := reconcile(v1, nodes, []*structs.Allocation{testAlloc("1", v0, "a"), testAlloc("2", v0, "b")}, nil)
	require.Equal(t, []string{"api", "web"}, []string{res.Groups[0].Name, res.Groups[1].Name})
	assertGroup(t, groupWant{place: []string{"a", "b"}}, groupNamed(res, "api"))
	web := groupNamed(res, "web")
	require.Nil(t, web.Group)
	assertGroup(t, groupWant{stop: []string{"a", "b"}}, web)
	require.Equal(t, uint64(2), res.DesiredTGUpdates["web"].Stop)
	require.Equal(t, uint64(2), res.DesiredTGUpdates["api"].Place)
}

func TestReconcile_Deployment(t *testing.T) {
	now := time.Unix(1000, 0)
	v0 := withUpdate(testJob("web"))
	v0.CreateIndex = 10
	v1 := nextVersion(v0, destructiveChange)
	nodes := []*structs.Node{testNode("a"), testNode("b")}
	deploymentOf := func(job *structs.Job, id, status string) *structs.Deployment {
		return &structs.Deployment{ID: id, Namespace: job.Namespace, JobID: job.ID, JobVersion: job.Version,
			JobCreateIndex: job.CreateIndex, Status: status,
			TaskGroups: map[string]*structs.DeploymentState{"web": {DesiredTotal: 2, PlacedAllocs: 2}}}
	}
	inDeployment := func(a *structs.Allocation, id string) *structs.Allocation { a.DeploymentID = id; return a }
	stopped := v1.Copy()
	stopped.Stop = true
	sysbatch := withUpdate(testJob("batch"))
	sysbatch.Type = structs.JobTypeSysBatch
	noUpdate := testJob("plain")

	t.Run("created on first placement", func(t *testing.T) {
		res := reconcile(v0, nodes, nil, nil)
		d := res.Deployment
		require.NotNil(t, d)
		require.Empty(t, d.ID, "the plan builder assigns the ID")
		require.Equal(t, structs.DeploymentStatusRunning, d.Status)
		require.Equal(t, structs.DeploymentStatusDescriptionRunning, d.StatusDescription)
		require.Equal(t, uint64(10), d.JobCreateIndex)
		st := d.TaskGroups["web"]
		require.Equal(t, 2, st.DesiredTotal)
		require.Equal(t, 2, st.PlacedAllocs)
		require.True(t, st.AutoRevert)
		require.Equal(t, 10*time.Minute, st.ProgressDeadline)
		require.Equal(t, now.Add(10*time.Minute), st.RequireProgressBy)
		require.Empty(t, res.DeploymentUpdates)
	})
	t.Run("identical resubmission creates none", func(t *testing.T) {
		res := reconcile(v0, nodes, []*structs.Allocation{testAlloc("1", v0, "a"), testAlloc("2", v0, "b")}, nil)
		require.Nil(t, res.Deployment)
	})
	t.Run("newer version cancels the active one and creates its own", func(t *testing.T) {
		old := deploymentOf(v0, "d0", structs.DeploymentStatusRunning)
		res := reconcile(v1, nodes, []*structs.Allocation{testAlloc("1", v0, "a"), testAlloc("2", v0, "b")}, old)
		require.Equal(t, []*structs.DeploymentStatusUpdate{{DeploymentID: "d0", Status: structs.DeploymentStatusCancelled,
			StatusDescription: structs.DeploymentStatusDescriptionNewerJob}}, res.DeploymentUpdates)
		require.NotNil(t, res.Deployment)
		require.Empty(t, res.Deployment.ID)
		require.Equal(t, uint64(1), res.Deployment.JobVersion)
	})
	t.Run("stopped job cancels the active one", func(t *testing.T) {
		old := deploymentOf(v1, "d1", structs.DeploymentStatusRunning)
		res := reconcile(stopped, nodes, []*structs.Allocation{testAlloc("1", v1, "a")}, old)
		require.Nil(t, res.Deployment)
		require.Equal(t, structs.DeploymentStatusDescriptionStoppedJob, res.DeploymentUpdates[0].StatusDescription)
	})
	t.Run("purged job cancels the active one", func(t *testing.T) {
		res := reconcile(nil, nodes, nil, deploymentOf(v1, "d1", structs.DeploymentStatusPaused))
		require.Equal(t, structs.DeploymentStatusDescriptionStoppedJob, res.DeploymentUpdates[0].StatusDescription)
	})
	t.Run("active deployment of the version is reused and recounted", func(t *testing.T) {
		cur := deploymentOf(v1, "d1", structs.DeploymentStatusRunning)
		allocs := []*structs.Allocation{inDeployment(testAlloc("1", v1, "a"), "d1"), inDeployment(testAlloc("2", v1, "b"), "d1")}
		res := reconcile(v1, append(slices.Clone(nodes), testNode("c")), allocs, cur)
		require.Equal(t, "d1", res.Deployment.ID)
		require.Equal(t, 3, res.Deployment.TaskGroups["web"].DesiredTotal)
		require.Equal(t, 3, res.Deployment.TaskGroups["web"].PlacedAllocs)
		require.Equal(t, 2, cur.TaskGroups["web"].DesiredTotal, "the input is not modified")
		require.Empty(t, res.DeploymentUpdates)
	})
	t.Run("terminal deployment of the version: new allocations join none", func(t *testing.T) {
		cur := deploymentOf(v1, "d1", structs.DeploymentStatusSuccessful)
		res := reconcile(v1, append(slices.Clone(nodes), testNode("c")), []*structs.Allocation{testAlloc("1", v1, "a"), testAlloc("2", v1, "b")}, cur)
		require.Nil(t, res.Deployment)
		assertGroup(t, groupWant{place: []string{"c"}, ignore: []string{"a", "b"}}, groupNamed(res, "web"))
	})
	t.Run("in-place updates join a new deployment", func(t *testing.T) {
		v1i := nextVersion(v0, inplaceChange)
		res := reconcile(v1i, nodes, []*structs.Allocation{testAlloc("1", v0, "a"), testAlloc("2", v0, "b")}, nil)
		require.NotNil(t, res.Deployment)
		require.Equal(t, 2, res.Deployment.TaskGroups["web"].PlacedAllocs)
	})
	t.Run("sysbatch and groups without update block get none", func(t *testing.T) {
		require.Nil(t, reconcile(sysbatch, nodes, nil, nil).Deployment)
		require.Nil(t, reconcile(noUpdate, nodes, nil, nil).Deployment)
	})
	t.Run("down node leaves DesiredTotal", func(t *testing.T) {
		res := reconcile(v0, []*structs.Node{testNode("a"), testNode("b", down), testNode("c", ineligible)}, nil, nil)
		require.Equal(t, 1, res.Deployment.TaskGroups["web"].DesiredTotal)
	})
}
