package agent

import (
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// drainFixture is one agent with node "from" running a system job "sys", a
// service job "web" and a batch job "rep" (one allocation each), and an
// empty node "to".
type drainFixture struct {
	ta       *testAgent
	c        *api.Client
	from, to string
}

func newDrainFixture(t *testing.T) *drainFixture {
	t.Helper()
	ta := newTestAgent(t, "")
	f := &drainFixture{ta: ta, c: ta.client, from: ta.registerNode(t, "node-1")}
	sys := testJob("sys")
	sys.TaskGroups[0].Update = nil
	registerAndWait(t, f.c, sys)
	web := serviceJob("web", 1)
	web.Update = &api.UpdateStrategy{MaxParallel: new(0)}
	registerAndWait(t, f.c, web)
	rep := api.NewBatchJob("rep", "rep", "global", 50)
	rep.Datacenters = []string{"dc1"}
	task := api.NewTask("run", "raw_exec").SetConfig("command", "/bin/sleep").SetConfig("args", []string{"3600"})
	task.Resources = &api.Resources{CPU: new(100), MemoryMB: new(64)}
	rep.AddTaskGroup(api.NewTaskGroup("g", 1).AddTask(task))
	registerAndWait(t, f.c, rep)
	for _, id := range []string{"sys", "web", "rep"} {
		f.report(t, f.live(t, id, f.from), structs.AllocClientStatusRunning, true)
	}
	f.to = ta.registerNode(t, "node-2")
	return f
}

// live returns the allocation of job desired to run on node (nil if none).
func (f *drainFixture) live(t *testing.T, jobID, node string) *api.AllocationListStub {
	t.Helper()
	allocs, _, err := f.c.Jobs().Allocations(jobID, true, nil)
	require.NoError(t, err)
	var out *api.AllocationListStub
	for _, a := range allocs {
		if a.NodeID == node && a.DesiredStatus == structs.AllocDesiredStatusRun {
			require.Nil(t, out, "one live allocation of %s on the node", jobID)
			out = a
		}
	}
	return out
}

// desired returns the desired status of allocation id.
func (f *drainFixture) desired(t *testing.T, id string) string {
	t.Helper()
	a, _, err := f.c.Allocations().Info(id, nil)
	require.NoError(t, err)
	return a.DesiredStatus
}

// report plays the client of a: it reports status (healthy per the migrate
// block when healthy).
func (f *drainFixture) report(t *testing.T, a *api.AllocationListStub, status string, healthy bool) {
	t.Helper()
	require.NotNil(t, a)
	u := &structs.Allocation{ID: a.ID, ClientStatus: status}
	if healthy {
		u.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: new(true)}
	}
	_, err := f.ta.Server().AllocClientUpdate([]*structs.Allocation{u})
	require.NoError(t, err)
}

// waitDrainComplete waits until node's drain ends and returns the node.
func (f *drainFixture) waitDrainComplete(t *testing.T, within time.Duration) *api.Node {
	t.Helper()
	var node *api.Node
	require.Eventually(t, func() bool {
		n, _, err := f.c.Nodes().Info(f.from, nil)
		require.NoError(t, err)
		node = n
		return !n.Drain
	}, within, 20*time.Millisecond)
	require.Nil(t, node.DrainStrategy)
	require.Equal(t, "ineligible", node.SchedulingEligibility, "a completed drain leaves the node ineligible")
	require.Equal(t, api.DrainStatusComplete, node.LastDrain.Status)
	return node
}

func lastEvent(n *api.Node) *api.NodeEvent { return n.Events[len(n.Events)-1] }

// TestContractDrainOrderAndDeadline: the service allocation migrates at
// once; the batch one runs on and the system one waits for it, until the
// deadline stops both; the batch one is replaced elsewhere; the drain then
// completes with Nomad's event.
func TestContractDrainOrderAndDeadline(t *testing.T) {
	f := newDrainFixture(t)
	t0 := time.Now()
	sys, web, rep := f.live(t, "sys", f.from), f.live(t, "web", f.from), f.live(t, "rep", f.from)
	_, err := f.c.Nodes().UpdateDrainOpts(f.from, &api.DrainOptions{DrainSpec: &api.DrainSpec{Deadline: 3 * time.Second}}, nil)
	require.NoError(t, err)
	n, _, err := f.c.Nodes().Info(f.from, nil)
	require.NoError(t, err)
	require.Equal(t, "Node drain strategy set", lastEvent(n).Message)
	require.Equal(t, "Drain", lastEvent(n).Subsystem)

	// The service allocation migrates; its replacement becomes healthy
	// and the old one finishes.
	require.Eventually(t, func() bool { return f.live(t, "web", f.to) != nil }, 5*time.Second, 20*time.Millisecond)
	require.Equal(t, structs.AllocDesiredStatusStop, f.desired(t, web.ID))
	f.report(t, f.live(t, "web", f.to), structs.AllocClientStatusRunning, true)
	f.report(t, web, structs.AllocClientStatusComplete, false)

	// Before the deadline: the batch allocation runs on, so the system one
	// stays too.
	time.Sleep(time.Until(t0.Add(2 * time.Second)))
	require.Equal(t, structs.AllocDesiredStatusRun, f.desired(t, rep.ID), "batch runs on until the deadline")
	require.Equal(t, structs.AllocDesiredStatusRun, f.desired(t, sys.ID), "system allocations go last")

	// The deadline stops both; the batch allocation is replaced elsewhere.
	require.Eventually(t, func() bool {
		return f.desired(t, rep.ID) == structs.AllocDesiredStatusStop && f.desired(t, sys.ID) == structs.AllocDesiredStatusStop
	}, 5*time.Second, 20*time.Millisecond)
	require.GreaterOrEqual(t, time.Since(t0), 3*time.Second)
	require.Eventually(t, func() bool { return f.live(t, "rep", f.to) != nil }, 5*time.Second, 20*time.Millisecond)
	n, _, err = f.c.Nodes().Info(f.from, nil)
	require.NoError(t, err)
	require.True(t, n.Drain, "stopped allocations still hold the drain until their client reports them finished")

	f.report(t, rep, structs.AllocClientStatusComplete, false)
	f.report(t, sys, structs.AllocClientStatusComplete, false)
	n = f.waitDrainComplete(t, 5*time.Second)
	require.Equal(t, "Node drain complete", lastEvent(n).Message)
	require.Equal(t, "Drain", lastEvent(n).Subsystem)
	require.Equal(t, map[string]string{"deadline_reached": "true"}, lastEvent(n).Details)
}

// TestContractDrainSystemLastWithoutDeadline: with no deadline, the system
// allocation stops as soon as the node's other allocations are gone.
func TestContractDrainSystemLastWithoutDeadline(t *testing.T) {
	f := newDrainFixture(t)
	sys, web, rep := f.live(t, "sys", f.from), f.live(t, "web", f.from), f.live(t, "rep", f.from)
	_, err := f.c.Nodes().UpdateDrainOpts(f.from, &api.DrainOptions{DrainSpec: &api.DrainSpec{}}, nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return f.live(t, "web", f.to) != nil }, 5*time.Second, 20*time.Millisecond)
	f.report(t, web, structs.AllocClientStatusComplete, false)
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, structs.AllocDesiredStatusRun, f.desired(t, sys.ID), "the batch allocation still runs")

	f.report(t, rep, structs.AllocClientStatusComplete, false)
	require.Eventually(t, func() bool { return f.desired(t, sys.ID) == structs.AllocDesiredStatusStop }, 5*time.Second, 20*time.Millisecond)
	a, _, err := f.c.Allocations().Info(sys.ID, nil)
	require.NoError(t, err)
	require.Equal(t, "alloc is being migrated", a.DesiredDescription)
	require.Nil(t, f.live(t, "sys", f.from), "no new system allocation on the draining node")
	f.report(t, sys, structs.AllocClientStatusComplete, false)
	n := f.waitDrainComplete(t, 5*time.Second)
	require.Equal(t, "Node drain complete", lastEvent(n).Message)
	require.Empty(t, lastEvent(n).Details)
}

// TestContractDrainForceIgnoreSystem: -force stops everything at once
// (the deadline is now) except, with ignore_system_jobs, the system
// allocation, which keeps running after the drain completes.
func TestContractDrainForceIgnoreSystem(t *testing.T) {
	f := newDrainFixture(t)
	sys, web, rep := f.live(t, "sys", f.from), f.live(t, "web", f.from), f.live(t, "rep", f.from)
	_, err := f.c.Nodes().UpdateDrainOpts(f.from, &api.DrainOptions{DrainSpec: &api.DrainSpec{Deadline: -time.Second, IgnoreSystemJobs: true}}, nil)
	require.NoError(t, err)
	n, _, err := f.c.Nodes().Info(f.from, nil)
	require.NoError(t, err)
	require.NotNil(t, n.DrainStrategy)
	require.True(t, n.DrainStrategy.IgnoreSystemJobs)
	require.Eventually(t, func() bool {
		return f.desired(t, web.ID) == structs.AllocDesiredStatusStop && f.desired(t, rep.ID) == structs.AllocDesiredStatusStop
	}, 5*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool { return f.live(t, "web", f.to) != nil && f.live(t, "rep", f.to) != nil }, 5*time.Second, 20*time.Millisecond)
	f.report(t, web, structs.AllocClientStatusComplete, false)
	f.report(t, rep, structs.AllocClientStatusComplete, false)
	f.waitDrainComplete(t, 5*time.Second)
	require.Equal(t, structs.AllocDesiredStatusRun, f.desired(t, sys.ID), "ignore_system_jobs: never stopped")
}
