package agent

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// alloc stop records the operator's transition (migrate; reschedule and
// no_shutdown_delay when asked) and the scheduler replaces the allocation
// with one that names it as previous.
func TestContractAllocStopTransition(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	ta.registerNode(t, "node-1")
	registerAndWait(t, c, serviceJob("svc", 1))
	allocs, _, err := c.Jobs().Allocations("svc", false, nil)
	require.NoError(t, err)
	require.Len(t, allocs, 1)
	first := allocs[0]

	resp, err := c.Allocations().Stop(&api.Allocation{ID: first.ID}, &api.QueryOptions{
		Params: map[string]string{"reschedule": "true", "no_shutdown_delay": "true"}})
	require.NoError(t, err)
	require.NotEmpty(t, resp.EvalID)
	stopped, _, err := c.Allocations().Info(first.ID, &api.QueryOptions{WaitIndex: resp.LastIndex})
	require.NoError(t, err)
	require.Equal(t, "stop", stopped.DesiredStatus)
	require.True(t, stopped.DesiredTransition.ShouldMigrate())
	require.True(t, stopped.DesiredTransition.ShouldReschedule())
	require.True(t, stopped.DesiredTransition.ShouldIgnoreShutdownDelay())
	require.False(t, stopped.DesiredTransition.ShouldForceReschedule())

	waitEvalComplete(t, c, resp.EvalID)
	allocs, _, err = c.Jobs().Allocations("svc", false, nil)
	require.NoError(t, err)
	var repl *api.AllocationListStub
	for _, a := range allocs {
		if a.ID != first.ID {
			repl = a
		}
	}
	require.NotNil(t, repl, "the stopped allocation is replaced")
	full, _, err := c.Allocations().Info(repl.ID, nil)
	require.NoError(t, err)
	require.Equal(t, first.ID, full.PreviousAllocation)
	require.Equal(t, first.Name, full.Name)
	require.NotNil(t, full.RescheduleTracker, "reschedule=true: the replacement extends the reschedule history")
	require.Len(t, full.RescheduleTracker.Events, 1)
	stopped, _, err = c.Allocations().Info(first.ID, nil)
	require.NoError(t, err)
	require.Equal(t, repl.ID, stopped.NextAllocation)

	// A plain stop migrates without a reschedule; a bad flag is refused.
	resp, err = c.Allocations().Stop(&api.Allocation{ID: repl.ID}, nil)
	require.NoError(t, err)
	plain, _, err := c.Allocations().Info(repl.ID, &api.QueryOptions{WaitIndex: resp.LastIndex})
	require.NoError(t, err)
	require.True(t, plain.DesiredTransition.ShouldMigrate())
	require.False(t, plain.DesiredTransition.ShouldReschedule())
	require.False(t, plain.DesiredTransition.ShouldIgnoreShutdownDelay())
	_, err = c.Allocations().Stop(&api.Allocation{ID: repl.ID}, &api.QueryOptions{Params: map[string]string{"reschedule": "maybe"}})
	requireStatus(t, err, http.StatusBadRequest, `"reschedule"`)
	_, err = c.Allocations().Stop(&api.Allocation{ID: "nope"}, nil)
	requireStatus(t, err, http.StatusNotFound, "alloc not found")
}

// GET /v1/allocations: resources=true adds AllocatedResources,
// task_states=false drops TaskStates.
func TestContractAllocListResources(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	ta.registerNode(t, "node-1")
	registerAndWait(t, c, serviceJob("svc", 1))

	plain, _, err := c.Allocations().List(nil)
	require.NoError(t, err)
	require.Len(t, plain, 1)
	require.Nil(t, plain[0].AllocatedResources, "not asked for")

	with, _, err := c.Allocations().List(&api.QueryOptions{Params: map[string]string{"resources": "true", "task_states": "false"}})
	require.NoError(t, err)
	require.Len(t, with, 1)
	require.NotNil(t, with[0].AllocatedResources)
	require.Equal(t, int64(100), with[0].AllocatedResources.Tasks["server"].Cpu.CpuShares)
	require.Nil(t, with[0].TaskStates)

	_, _, err = c.Allocations().List(&api.QueryOptions{Params: map[string]string{"resources": "lots"}})
	requireStatus(t, err, http.StatusBadRequest, `"resources"`)
}

// GET /v1/evaluations pages oldest first (reverse=true: newest first), by
// ID with a prefix; the filter applies before paging.
func TestContractEvalListPaging(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	ta.registerNode(t, "node-1")
	var ids []string
	for _, id := range []string{"a", "b", "c"} {
		ids = append(ids, registerAndWait(t, c, serviceJob(id, 1)).ID)
	}

	var seen []string
	q := &api.QueryOptions{PerPage: 2, Filter: `TriggeredBy == "job-register"`}
	for range 3 {
		page, qm, err := c.Evaluations().List(q)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page), 2)
		// The client sorts each page newest first; the server's order is
		// oldest first across pages.
		for i := len(page) - 1; i >= 0; i-- {
			seen = append(seen, page[i].ID)
		}
		if qm.NextToken == "" {
			break
		}
		q.NextToken = qm.NextToken
	}
	require.Equal(t, ids, seen)

	page, qm, err := c.Evaluations().List(&api.QueryOptions{PerPage: 1, Reverse: true, Filter: `TriggeredBy == "job-register"`})
	require.NoError(t, err)
	require.Len(t, page, 1)
	require.Equal(t, ids[2], page[0].ID, "reverse: newest first")
	require.NotEmpty(t, qm.NextToken)

	_, _, err = c.Evaluations().List(&api.QueryOptions{NextToken: "garbage"})
	requireStatus(t, err, http.StatusBadRequest, "Invalid next_token")
	_, err = c.Raw().Response("/v1/evaluations?per_page=-3", nil)
	requireStatus(t, err, http.StatusBadRequest, "Invalid per_page")
}

// Job deregister: a missing job is no error (an evaluation finds nothing to
// do); eval_priority sets the evaluation's priority; a stopped job can be
// purged; out-of-range priorities are refused with nothing written.
func TestContractJobDeregisterOptions(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	ta.registerNode(t, "node-1")
	registerAndWait(t, c, serviceJob("svc", 1))

	evalID, _, err := c.Jobs().Deregister("nope", false, nil)
	require.NoError(t, err)
	e := waitEvalComplete(t, c, evalID)
	require.Equal(t, "job-deregister", e.TriggeredBy)
	require.Equal(t, 50, e.Priority)

	before := ta.Server().State().LatestIndex()
	_, _, err = c.Jobs().DeregisterOpts("svc", &api.DeregisterOptions{EvalPriority: 101}, nil)
	requireStatus(t, err, http.StatusBadRequest, "eval_priority must be between 1 and 100")
	require.Equal(t, before, ta.Server().State().LatestIndex(), "a refused stop writes nothing")

	evalID, _, err = c.Jobs().DeregisterOpts("svc", &api.DeregisterOptions{EvalPriority: 97, NoShutdownDelay: true, Global: true}, nil)
	require.NoError(t, err)
	e = waitEvalComplete(t, c, evalID)
	require.Equal(t, 97, e.Priority)
	job, _, err := c.Jobs().Info("svc", nil)
	require.NoError(t, err)
	require.True(t, *job.Stop, "not purged: still readable, stopped")
	allocs, _, err := c.Jobs().Allocations("svc", true, nil)
	require.NoError(t, err)
	require.NotEmpty(t, allocs)
	a, _, err := c.Allocations().Info(allocs[0].ID, nil)
	require.NoError(t, err)
	require.True(t, a.DesiredTransition.ShouldIgnoreShutdownDelay())

	// Stopping a stopped job again, then purging it.
	_, _, err = c.Jobs().Deregister("svc", false, nil)
	require.NoError(t, err)
	_, _, err = c.Jobs().Deregister("svc", true, nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		jobs, _, err := c.Jobs().List(nil)
		return err == nil && len(jobs) == 0
	}, 5*time.Second, 20*time.Millisecond)
}

// Plan: the diff only when asked; annotations and created evaluations
// always.
func TestContractPlanDiffOnlyWhenAsked(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	ta.registerNode(t, "node-1")
	job := serviceJob("svc", 1)
	registerAndWait(t, c, job)

	resp, _, err := c.Jobs().Plan(job, true, nil)
	require.NoError(t, err)
	require.NotNil(t, resp.Diff)
	require.NotNil(t, resp.Annotations)
	require.Positive(t, resp.JobModifyIndex)

	resp, _, err = c.Jobs().Plan(job, false, nil)
	require.NoError(t, err)
	require.Nil(t, resp.Diff)
	require.NotNil(t, resp.Annotations)
	require.Positive(t, resp.JobModifyIndex)
}

// On a dev agent: a batch task of the mock_driver driver without run_for
// completes once its output is written, and the logs API returns that
// output whole; the allocation reports its host network status; the node
// has the default metadata, static, with nothing dynamic.
func TestContractMockDriverLogsNetworkMeta(t *testing.T) {
	ag, c := newDevAgent(t)
	var want strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&want, "%d\n", i)
	}
	job := api.NewBatchJob("logger", "logger", "global", 50)
	job.Datacenters = []string{"dc1"}
	task := api.NewTask("logger", "mock_driver").SetConfig("stdout_string", want.String())
	job.AddTaskGroup(api.NewTaskGroup("g", 1).AddTask(task))
	registerAndWait(t, c, job)
	var alloc *api.Allocation
	require.Eventually(t, func() bool {
		stubs, _, err := c.Jobs().Allocations("logger", false, nil)
		if err != nil || len(stubs) != 1 || stubs[0].ClientStatus != "complete" {
			return false
		}
		alloc, _, err = c.Allocations().Info(stubs[0].ID, nil)
		return err == nil
	}, 20*time.Second, 50*time.Millisecond, "the task exits once its output is written")
	require.NotNil(t, alloc.NetworkStatus)
	require.Equal(t, "", alloc.NetworkStatus.InterfaceName, "host networking: no interface of its own")
	node, _, err := c.Nodes().Info(alloc.NodeID, nil)
	require.NoError(t, err)
	require.Equal(t, node.Attributes["unique.network.ip-address"], alloc.NetworkStatus.Address)

	stop := make(chan struct{})
	defer close(stop)
	frames, errs := c.AllocFS().Logs(alloc, false, "logger", "stdout", "start", 0, stop, nil)
	var got bytes.Buffer
	for done := false; !done; {
		select {
		case f := <-frames:
			if f == nil {
				done = true
				break
			}
			got.Write(f.Data)
		case err := <-errs:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("logs did not end")
		}
	}
	require.Equal(t, want.String(), got.String())

	meta, err := c.Nodes().Meta().Read(ag.Client().NodeID(), nil)
	require.NoError(t, err)
	require.Equal(t, "true", meta.Static["drover.prefetch"])
	require.Contains(t, []string{"host", "host,bridge"}, meta.Static["drover.network_modes"])
	var bridge bool
	for _, n := range node.NodeResources.Networks {
		bridge = bridge || n.Mode == "bridge"
	}
	require.Equal(t, bridge, meta.Static["drover.network_modes"] == "host,bridge", "the metadata says what the node offers")
	require.Equal(t, meta.Static, meta.Meta)
	require.Empty(t, meta.Dynamic)
	require.Equal(t, meta.Meta, node.Meta)
}

// Plan of an active periodic job answers when it would next launch; a
// plain job answers no time.
func TestContractPlanNextPeriodicLaunch(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	job := periodicJob("nightly", "0 3 * * *")
	resp, _, err := c.Jobs().Plan(job, false, nil)
	require.NoError(t, err)
	next := resp.NextPeriodicLaunch.UTC()
	require.Equal(t, 3, next.Hour())
	require.Zero(t, next.Minute())
	require.True(t, next.After(time.Now()))
	require.True(t, next.Before(time.Now().Add(25*time.Hour)))

	resp, _, err = c.Jobs().Plan(serviceJob("svc", 1), false, nil)
	require.NoError(t, err)
	require.True(t, resp.NextPeriodicLaunch.IsZero())
}
