package health

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

func resolveAlloc() *structs.Allocation {
	job := &structs.Job{ID: "web", Name: "web", Type: structs.JobTypeSystem, TaskGroups: []*structs.TaskGroup{{
		Name: "g",
		Services: []*structs.Service{
			{Name: "web", PortLabel: "http", Provider: "nomad", Checks: []structs.ServiceCheck{
				{Name: "alive", Type: "http", Path: "health/${NOMAD_ALLOC_INDEX}", Interval: 5 * time.Second, Timeout: time.Second,
					Method: "HEAD", Header: map[string][]string{"X-Alloc": {"${NOMAD_SHORT_ALLOC_ID}"}}, InitialStatus: "passing", TaskName: "app"},
				{Name: "port", Type: "tcp", PortLabel: "admin"},
				{Name: "ready", Type: "tcp", OnUpdate: "ignore"},
				{Name: "script", Type: "script", Command: "/bin/sh", Args: []string{"-c", "test -f ${NOMAD_TASK_NAME}.ready"}, TaskName: "app",
					Interval: 3 * time.Second, Timeout: 2 * time.Second, OnUpdate: "ignore_warnings",
					CheckRestart: &structs.CheckRestart{Limit: 2, Grace: 5 * time.Second}},
				{Name: "taskless", Type: "script", Command: "/bin/true"},
				{Name: "grpc", Type: "grpc", PortLabel: "http"},
				{Name: "missing", Type: "tcp", PortLabel: "db"},
				{Type: "tcp", PortLabel: "9000"},
			}, CheckRestart: &structs.CheckRestart{Limit: 3, Grace: time.Second, IgnoreWarnings: true}},
			{Name: "elsewhere", PortLabel: "http", Provider: "consul", Checks: []structs.ServiceCheck{{Name: "consul", Type: "tcp"}}},
		},
		Tasks: []*structs.Task{{Name: "app", Services: []*structs.Service{
			{Name: "app-${NOMAD_TASK_NAME}", PortLabel: "http", Checks: []structs.ServiceCheck{{Name: "task", Type: "http", Protocol: "https", Path: "/"}}},
		}}},
	}}}
	return &structs.Allocation{
		ID: "0123456789abcdef", Name: "web.g[3]", Job: job, TaskGroup: "g",
		AllocatedResources: &structs.AllocatedResources{Shared: structs.AllocatedSharedResources{Ports: []structs.AllocatedPortMapping{
			{Label: "http", Value: 25000, To: 8080},
			{Label: "admin", Value: 25001, HostIP: "192.168.1.5"},
		}}},
	}
}

func TestResolveChecks(t *testing.T) {
	node := &structs.Node{Attributes: map[string]string{"unique.network.ip-address": "10.0.0.7"}}
	got, skipped := ResolveChecks(resolveAlloc(), node)
	require.Equal(t, []string{`check "grpc" of service "web": type "grpc" is not supported`}, skipped)
	require.Len(t, got, 8, "consul services are skipped")
	byName := map[string]CheckDef{}
	ids := map[string]bool{}
	for _, c := range got {
		byName[c.Name] = c
		require.Len(t, c.ID, 32)
		require.False(t, ids[c.ID], "IDs are distinct")
		ids[c.ID] = true
		require.Equal(t, "g", c.Group)
	}

	alive := byName["alive"]
	require.Equal(t, CheckDef{
		ID: alive.ID, Name: "alive", Group: "g", Task: "app", Service: "web", Mode: ModeHealthiness,
		Type: "http", Address: "10.0.0.7:25000", Method: "HEAD", Path: "health/3",
		Header: map[string][]string{"X-Alloc": {"01234567"}}, Interval: 5 * time.Second, Timeout: time.Second, InitialPassed: true,
		Restart: CheckRestart{Limit: 3, Grace: time.Second, IgnoreWarnings: true},
	}, alive)

	script := byName["script"]
	require.Equal(t, CheckDef{
		ID: script.ID, Name: "script", Group: "g", Task: "app", Service: "web", Mode: ModeHealthiness,
		Type: "script", Command: []string{"/bin/sh", "-c", "test -f app.ready"},
		Interval: 3 * time.Second, Timeout: 2 * time.Second, IgnoreWarnings: true,
		Restart: CheckRestart{Limit: 2, Grace: 5 * time.Second, IgnoreWarnings: true},
	}, script, "command interpolated with its task's environment; check_restart merged over the service's")
	require.Equal(t, "script check has no task to run in", byName["taskless"].Err)
	require.Equal(t, "192.168.1.5:25001", byName["port"].Address, "the check's own port label and the port's host IP")
	require.Equal(t, ModeReadiness, byName["ready"].Mode)
	require.Equal(t, "10.0.0.7:25000", byName["ready"].Address, "the service's port label")
	require.Equal(t, `port label "db" is not a port of the allocation`, byName["missing"].Err)
	require.Equal(t, "10.0.0.7:9000", byName[`service: "web" check`].Address, "a numeric label is a port on the node")

	task := byName["task"]
	require.Equal(t, "app", task.Task)
	require.Equal(t, "app-app", task.Service)
	require.Equal(t, "https", task.Protocol)
	require.Equal(t, "https://10.0.0.7:25000/", checkURL(task))

	again, _ := ResolveChecks(resolveAlloc(), node)
	require.Equal(t, got, again, "deterministic")

	// Without a node address, ports are on 127.0.0.1.
	got, _ = ResolveChecks(resolveAlloc(), nil)
	require.Equal(t, "127.0.0.1:25000", got[0].Address)

	a := resolveAlloc()
	a.TaskGroup = "nope"
	got, skipped = ResolveChecks(a, node)
	require.Empty(t, got)
	require.Empty(t, skipped)
}
