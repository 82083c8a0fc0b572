package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// lifecycleScript is a raw_exec task's shell script: log appends
// "<what> <unix nanos>" to order.log in the shared alloc dir.
func lifecycleScript(body string) string {
	return `export PATH=/usr/bin:/bin
log() { echo "$1 $(date +%s%N)" >> "$NOMAD_ALLOC_DIR/order.log"; }
` + body
}

// lifecycleTask is a raw_exec task running script, with hook (or "" for a
// main task).
func lifecycleTask(name, hook string, sidecar bool, script string) *api.Task {
	task := api.NewTask(name, "raw_exec").
		SetConfig("command", "/bin/sh").
		SetConfig("args", []string{"-c", lifecycleScript(script)})
	task.Resources = &api.Resources{CPU: new(20), MemoryMB: new(16)}
	task.KillTimeout = new(5 * time.Second)
	if hook != "" {
		task.Lifecycle = &api.TaskLifecycle{Hook: hook, Sidecar: sidecar}
	}
	return task
}

// untilStopped logs "<name> start", then runs until signalled and logs
// "<name> end".
func untilStopped(name string) string {
	return fmt.Sprintf(`trap 'log "%[1]s end"; exit 0' TERM INT
log "%[1]s start"
while :; do sleep 0.1; done`, name)
}

// lifecycleJob is a service job of five tasks: init (prestart, 1s),
// sidecar (prestart sidecar), main, announce (poststart), cleanup
// (poststop). initExit is init's exit code.
func lifecycleJob(id string, initExit int) *api.Job {
	job := api.NewServiceJob(id, id, "global", 50)
	job.Datacenters = []string{"dc1"}
	tg := api.NewTaskGroup("g", 1)
	tg.RestartPolicy = &api.RestartPolicy{Attempts: new(0), Interval: new(time.Hour), Delay: new(time.Second), Mode: new("fail")}
	tg.ReschedulePolicy = &api.ReschedulePolicy{Attempts: new(0), Unlimited: new(false)}
	tg.AddTask(lifecycleTask("init", "prestart", false, fmt.Sprintf(`log "init start"; sleep 1; log "init end"; exit %d`, initExit)))
	tg.AddTask(lifecycleTask("sidecar", "prestart", true, untilStopped("sidecar")))
	tg.AddTask(lifecycleTask("main", "", false, untilStopped("main")))
	// A poststart task starts once main's process runs, maybe before main's
	// shell wrote its first line: announce waits half a second before it
	// logs. Started with the prestart tasks, it would still log a good half
	// second before main (init takes a second).
	tg.AddTask(lifecycleTask("announce", "poststart", false, `sleep 0.5; log "announce start"`))
	tg.AddTask(lifecycleTask("cleanup", "poststop", false, `log "cleanup start"`))
	job.AddTaskGroup(tg)
	return job
}

// orderLog reads order.log of the allocation on client p: the time of
// each "<task> <start|end>" line.
func orderLog(t *testing.T, p *agentProc, allocID string) (map[string]int64, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(p.dataDir, "alloc", allocID, "alloc", "order.log"))
	if os.IsNotExist(err) {
		return map[string]int64{}, ""
	}
	require.NoError(t, err)
	out := map[string]int64{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		require.Len(t, f, 3, "line %q", line)
		ns, err := strconv.ParseInt(f[2], 10, 64)
		require.NoError(t, err, "line %q", line)
		key := f[0] + " " + f[1]
		require.NotContains(t, out, key, "%q logged twice:\n%s", key, b)
		out[key] = ns
	}
	return out, string(b)
}

// onlyAllocOf waits for the job's one allocation and returns its ID.
func onlyAllocOf(t *testing.T, c *api.Client, jobID string) string {
	t.Helper()
	var id string
	require.Eventually(t, func() bool {
		allocs, _, err := c.Jobs().Allocations(jobID, true, nil)
		if err != nil || len(allocs) != 1 {
			return false
		}
		id = allocs[0].ID
		return true
	}, 30*time.Second, 100*time.Millisecond)
	return id
}

// TestLifecycleOrderOfAFiveTaskGroup: a real client runs a five-task group
// in Nomad's order: the ephemeral prestart task completes before main
// starts, the prestart sidecar runs before main, the poststart task starts
// after main, and, once the job is stopped, the poststop task starts after
// main and the sidecar ended. The allocation ends complete, every task dead
// and none failed, init not restarted.
func TestLifecycleOrderOfAFiveTaskGroup(t *testing.T) {
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(t, srv)
	c := srv.client(t)
	cl := newClientAgent(t, "client-1", srv.httpHostPort())
	waitReadyNodes(t, c, 1)
	_, _, err := c.Jobs().Register(lifecycleJob("lifecycle-order", 0), nil)
	require.NoError(t, err)
	allocID := onlyAllocOf(t, c, "lifecycle-order")

	require.Eventually(t, func() bool {
		got, _ := orderLog(t, cl, allocID)
		_, ok := got["announce start"]
		return ok
	}, 60*time.Second, 100*time.Millisecond, "the poststart task runs\n%s", lastLines(cl.logs(), 30))
	got, raw := orderLog(t, cl, allocID)
	require.NotContains(t, got, "cleanup start", "poststop waits for the job to stop:\n%s", raw)
	a, _, err := c.Allocations().Info(allocID, nil)
	require.NoError(t, err)
	require.Equal(t, "running", a.ClientStatus)
	require.Equal(t, "dead", a.TaskStates["init"].State)
	require.False(t, a.TaskStates["init"].Failed)
	require.Zero(t, a.TaskStates["init"].Restarts, "an ephemeral prestart task of a service job is not restarted")

	_, _, err = c.Jobs().Deregister("lifecycle-order", false, nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		a, _, err = c.Allocations().Info(allocID, nil)
		return err == nil && a.ClientStatus == "complete"
	}, 60*time.Second, 100*time.Millisecond, "the stopped allocation completes\n%s", lastLines(cl.logs(), 30))
	got, raw = orderLog(t, cl, allocID)
	for _, key := range []string{"init start", "init end", "sidecar start", "main start", "announce start", "main end", "sidecar end", "cleanup start"} {
		require.Contains(t, got, key, "order.log:\n%s", raw)
	}
	require.Less(t, got["init end"], got["main start"], "init completed before main started:\n%s", raw)
	require.Less(t, got["sidecar start"], got["main start"], "the sidecar ran before main:\n%s", raw)
	require.Less(t, got["main start"], got["announce start"], "poststart after main started:\n%s", raw)
	// The client's own record agrees, to its clock's resolution.
	ts := a.TaskStates
	require.False(t, ts["main"].StartedAt.Before(ts["init"].FinishedAt), "main started after init finished")
	require.True(t, ts["sidecar"].StartedAt.Before(ts["main"].StartedAt), "the sidecar started before main")
	require.False(t, ts["announce"].StartedAt.Before(ts["main"].StartedAt), "announce started after main")
	require.False(t, ts["cleanup"].StartedAt.Before(ts["sidecar"].FinishedAt), "cleanup started after the sidecar finished")
	require.False(t, ts["sidecar"].FinishedAt.Before(ts["main"].FinishedAt), "the sidecar finished after main")
	require.LessOrEqual(t, got["main end"], got["sidecar end"], "the sidecar outlived main:\n%s", raw)
	require.Less(t, got["main end"], got["cleanup start"], "poststop after main ended:\n%s", raw)
	require.Less(t, got["sidecar end"], got["cleanup start"], "poststop after the sidecar ended:\n%s", raw)
	for name, st := range a.TaskStates {
		require.Equal(t, "dead", st.State, name)
		require.False(t, st.Failed, name)
	}
}

// TestLifecycleFailedPrestartFailsTheAllocation: the ephemeral prestart
// task exits 1 with no restarts left: the allocation fails, main and the
// poststart task never start, the sidecar is killed and the poststop task
// still runs.
func TestLifecycleFailedPrestartFailsTheAllocation(t *testing.T) {
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(t, srv)
	c := srv.client(t)
	cl := newClientAgent(t, "client-1", srv.httpHostPort())
	waitReadyNodes(t, c, 1)
	_, _, err := c.Jobs().Register(lifecycleJob("lifecycle-fail", 1), nil)
	require.NoError(t, err)
	allocID := onlyAllocOf(t, c, "lifecycle-fail")

	var a *api.Allocation
	require.Eventually(t, func() bool {
		a, _, err = c.Allocations().Info(allocID, nil)
		return err == nil && a.ClientStatus == "failed" && a.TaskStates["cleanup"] != nil && a.TaskStates["cleanup"].State == "dead"
	}, 60*time.Second, 100*time.Millisecond, "the allocation fails and its poststop task runs\n%s", lastLines(cl.logs(), 30))
	got, raw := orderLog(t, cl, allocID)
	require.NotContains(t, got, "main start", raw)
	require.NotContains(t, got, "announce start", raw)
	require.Contains(t, got, "sidecar end", raw)
	require.Contains(t, got, "cleanup start", raw)
	require.Less(t, got["init end"], got["cleanup start"], raw)
	require.True(t, a.TaskStates["init"].Failed)
	for _, name := range []string{"main", "announce"} {
		st := a.TaskStates[name]
		require.Equal(t, "dead", st.State, name)
		require.True(t, st.StartedAt.IsZero(), "%s never started", name)
		var types []string
		for _, e := range st.Events {
			types = append(types, e.Type)
		}
		require.Contains(t, types, "Sibling Task Failed", name)
	}
}
