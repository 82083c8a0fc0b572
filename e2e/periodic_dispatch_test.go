package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// TestPeriodicAndDispatchEndToEnd runs on one server and one raw_exec
// client: a periodic job with a seconds-level cron fires on schedule and
// its children complete; a dispatched parameterized job's task finds the
// payload in its dispatch_payload file and the dispatch meta in its env,
// and `alloc logs` shows both.
func TestPeriodicAndDispatchEndToEnd(t *testing.T) {
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(t, srv)
	c := srv.client(t)
	newClientAgent(t, "client-1", srv.httpHostPort())
	waitReadyNodes(t, c, 1)

	// Periodic: every two seconds.
	tick := api.NewBatchJob("tick", "tick", "global", 50)
	tick.Datacenters = []string{"dc1"}
	tick.Periodic = &api.PeriodicConfig{Specs: []string{"*/2 * * * * * *"}, ProhibitOverlap: new(true)}
	tick.AddTaskGroup(api.NewTaskGroup("g", 1).AddTask(
		api.NewTask("run", "raw_exec").SetConfig("command", "/bin/sh").SetConfig("args", []string{"-c", "echo tick"})))
	start := time.Now()
	_, _, err := c.Jobs().Register(tick, nil)
	require.NoError(t, err)
	completed := func() int {
		stubs, _, err := c.Jobs().List(&api.QueryOptions{Prefix: "tick/periodic-"})
		require.NoError(t, err)
		n := 0
		for _, s := range stubs {
			allocs, _, err := c.Jobs().Allocations(s.ID, true, nil)
			require.NoError(t, err)
			if len(allocs) == 1 && allocs[0].ClientStatus == "complete" {
				n++
			}
		}
		return n
	}
	require.Eventually(t, func() bool { return completed() >= 2 }, 30*time.Second, 250*time.Millisecond,
		"two periodic children ran to completion")
	t.Logf("two periodic launches completed %s after registration", time.Since(start).Round(time.Millisecond))
	code, out := drover(t, srv.httpAddr(), "job", "status", "tick")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Next Periodic Launch")
	require.Contains(t, out, "Previously Launched Jobs")
	require.Contains(t, out, "tick/periodic-")
	code, out = drover(t, srv.httpAddr(), "job", "periodic", "force", "-detach", "tick")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Evaluation ID: ")
	code, out = drover(t, srv.httpAddr(), "job", "stop", "-detach", "tick")
	require.Equal(t, 0, code, out)

	// Parameterized: payload in a file, meta in the env.
	render := api.NewBatchJob("render", "render", "global", 50)
	render.Datacenters = []string{"dc1"}
	render.ParameterizedJob = &api.ParameterizedJobConfig{Payload: "required", MetaRequired: []string{"greeting"}}
	task := api.NewTask("render", "raw_exec").SetConfig("command", "/bin/sh").
		SetConfig("args", []string{"-c", `cat "$NOMAD_TASK_DIR/input/payload.txt"; echo "greeting=$NOMAD_META_greeting"`})
	task.DispatchPayload = &api.DispatchPayloadConfig{File: "input/payload.txt"}
	render.AddTaskGroup(api.NewTaskGroup("g", 1).AddTask(task))
	_, _, err = c.Jobs().Register(render, nil)
	require.NoError(t, err)

	payload := writeJobFile(t, "the payload bytes\n")
	code, out = drover(t, srv.httpAddr(), "job", "dispatch", "-detach", "-meta", "greeting=hello", "render", payload)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Dispatched Job ID")
	var childID string
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == "Dispatched Job ID" {
			childID = strings.TrimSpace(v)
		}
	}
	require.True(t, strings.HasPrefix(childID, "render/dispatch-"), out)
	var allocID string
	require.Eventually(t, func() bool {
		allocs, _, err := c.Jobs().Allocations(childID, true, nil)
		if err != nil || len(allocs) != 1 || allocs[0].ClientStatus != "complete" {
			return false
		}
		allocID = allocs[0].ID
		return true
	}, 30*time.Second, 200*time.Millisecond, "the dispatched child completes")
	code, out = drover(t, srv.httpAddr(), "alloc", "logs", allocID)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "the payload bytes")
	require.Contains(t, out, "greeting=hello")

	code, out = drover(t, srv.httpAddr(), "job", "dispatch", "render")
	require.Equal(t, 1, code)
	require.Contains(t, out, "Payload is not provided but required by parameterized job")

	// Scaling a service group through the CLI, within its scaling bounds,
	// once its deployment is over (scaling is refused while one is active).
	svc := genericServiceJob("scaled", 1, "1")
	svc.TaskGroups[0].Update = &api.UpdateStrategy{MinHealthyTime: new(500 * time.Millisecond)}
	svc.TaskGroups[0].Scaling = &api.ScalingPolicy{Min: new(int64(1)), Max: new(int64(2))}
	_, _, err = c.Jobs().Register(svc, nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		d, _, err := c.Jobs().LatestDeployment("scaled", nil)
		return err == nil && d != nil && d.Status == "successful"
	}, 30*time.Second, 200*time.Millisecond, "the first version's deployment succeeds")
	code, out = drover(t, srv.httpAddr(), "job", "scale", "-detach", "scaled", "3")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "group count was greater than scaling policy maximum: 3 > 2")
	code, out = drover(t, srv.httpAddr(), "job", "scale", "-detach", "scaled", "2")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Job scale successful")
	require.Eventually(t, func() bool {
		running := 0
		for _, a := range liveAllocs(t, c, "scaled") {
			if a.ClientStatus == "running" {
				running++
			}
		}
		return running == 2
	}, 30*time.Second, 200*time.Millisecond, "the scaled group runs two allocations")
	code, out = drover(t, srv.httpAddr(), "job", "scaling-events", "-verbose", "scaled")
	require.Equal(t, 0, code, out)
	require.Regexp(t, `web +2 +1 +false .* submitted using the Drover CLI`, out)
}
