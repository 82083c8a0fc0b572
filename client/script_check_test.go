package client

import (
	"net/http"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// scriptCheckClient starts a client with raw_exec enabled and runs a's
// task "t" as a raw_exec sleep under it, with the given task services.
func scriptCheckClient(t *testing.T, services []*api.Service, restart *api.RestartPolicy) (*Client, *fakeServer, *api.Allocation) {
	t.Helper()
	srv := newFakeServer(t)
	cfg := testConfig(srv, t.TempDir())
	cfg.timing.flushInterval = 20 * time.Millisecond
	cfg.Plugins = map[string]map[string]any{"raw_exec": {"enabled": true}}
	c := startClient(t, cfg)
	waitRegistered(t, c)
	a := mockAlloc(c.NodeID(), map[string]any{"command": "/bin/sleep", "args": []any{"3600"}})
	a.Job.Type = ptr("service")
	tg := a.Job.TaskGroups[0]
	tg.RestartPolicy = restart
	tg.Tasks[0].Driver = "raw_exec"
	tg.Tasks[0].Services = services
	srv.upsertAlloc(a)
	t.Cleanup(func() { srv.stopAlloc(a.ID) })
	return c, srv, a
}

func shCheck(name, script string, timeout time.Duration) api.ServiceCheck {
	return api.ServiceCheck{Name: name, Type: "script", Command: "/bin/sh", Args: []string{"-c", script},
		Interval: 200 * time.Millisecond, Timeout: timeout}
}

// TestScriptChecks_StatusFromExitCode: script checks run inside a real
// raw_exec task (in its directory, with its environment): exit 0 passes,
// 1 warns, 2 fails, and a command that outlives the timeout fails.
func TestScriptChecks_StatusFromExitCode(t *testing.T) {
	c, srv, a := scriptCheckClient(t, []*api.Service{{Name: "db", Provider: "nomad", Checks: []api.ServiceCheck{
		shCheck("passes", `echo "in $NOMAD_TASK_NAME"; test -d "$NOMAD_TASK_DIR"`, 5*time.Second),
		shCheck("warns", "echo behind; exit 1", 5*time.Second),
		shCheck("fails", "echo broken >&2; exit 2", 5*time.Second),
		shCheck("times out", "exec sleep 30", 300*time.Millisecond),
	}}}, nil)
	require.Eventually(t, func() bool { return srv.clientStatus(a.ID) == "running" }, waitFor, tick)

	want := map[string]string{"passes": "success", "warns": "warning", "fails": "failure", "times out": "failure"}
	var checks api.AllocCheckStatuses
	require.Eventually(t, func() bool {
		checks = nil
		if getJSON(t, c.Handler(), "/v1/client/allocation/"+a.ID+"/checks", &checks) != http.StatusOK || len(checks) != len(want) {
			return false
		}
		for _, st := range checks {
			if want[st.Check] != st.Status {
				return false
			}
		}
		return true
	}, waitFor, tick, "statuses: %+v", checks)

	outputs := map[string]string{}
	for _, st := range checks {
		require.Equal(t, "t", st.Task)
		require.Equal(t, "db", st.Service)
		outputs[st.Check] = st.Output
	}
	require.Equal(t, map[string]string{
		"passes": "in t", "warns": "behind", "fails": "exit code 2: broken", "times out": "check timed out after 300ms",
	}, outputs)
}

// TestCheckRestart_RestartsThroughThePolicy: a failing check with
// check_restart restarts its task ("Restart Signaled" with Nomad's
// reason); the restarts count against the restart policy, so with one
// attempt the second restart fails the task.
func TestCheckRestart_RestartsThroughThePolicy(t *testing.T) {
	check := shCheck("ready", "exit 2", time.Second)
	check.CheckRestart = &api.CheckRestart{Limit: 2, Grace: ptr(100 * time.Millisecond)}
	_, srv, a := scriptCheckClient(t, []*api.Service{{Name: "db", Provider: "nomad", Checks: []api.ServiceCheck{check}}},
		&api.RestartPolicy{Attempts: ptr(1), Interval: ptr(time.Hour), Delay: ptr(100 * time.Millisecond), Mode: ptr("fail")})

	var ts *api.TaskState
	require.Eventually(t, func() bool {
		ts = srv.taskState(a.ID, "t")
		return ts != nil && ts.State == "dead"
	}, 2*waitFor, tick)
	require.True(t, ts.Failed)
	require.Equal(t, uint64(1), ts.Restarts)
	require.Equal(t, "failed", srv.clientStatus(a.ID))

	var types []string
	for _, e := range ts.Events {
		switch e.Type {
		case "Restart Signaled":
			require.Equal(t, `health check: check "ready" unhealthy`, e.DisplayMessage)
			require.Equal(t, `health check: check "ready" unhealthy`, e.Details["restart_reason"])
			types = append(types, e.Type)
		case "Restarting", "Not Restarting", "Started":
			types = append(types, e.Type)
		}
	}
	// A task keeps its last ten events, so the first start may have been
	// dropped (how many events a start takes varies); the restart and the
	// refusal that follow it are always there.
	want := []string{"Restart Signaled", "Restarting", "Started", "Restart Signaled", "Not Restarting"}
	require.GreaterOrEqual(t, len(types), len(want), "%v", types)
	require.Equal(t, want, types[len(types)-len(want):])
	// The refusal is the last restart event; a deployment-health event may
	// follow it.
	var refusal *api.TaskEvent
	for _, e := range ts.Events {
		if e.Type == "Not Restarting" {
			refusal = e
		}
	}
	require.NotNil(t, refusal)
	require.Equal(t, `Exceeded allowed attempts 1 in interval 1h0m0s and mode is "fail"`, refusal.DisplayMessage)
}
