package e2e

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// catalogJob is a raw_exec service job of count allocations (at most one
// per node), each with a
// group service "catalog-web" on a dynamic port and a task service
// "catalog-task", neither naming a provider.
func catalogJob(count int) *api.Job {
	job := api.NewServiceJob("catalog", "catalog", "global", 50)
	job.Datacenters = []string{"dc1"}
	task := api.NewTask("server", "raw_exec").SetConfig("command", "/bin/sleep").SetConfig("args", []string{"3600"})
	task.Resources = &api.Resources{CPU: new(50), MemoryMB: new(32)}
	task.Services = []*api.Service{{Name: "catalog-task", Tags: []string{"${NOMAD_TASK_NAME}"}}}
	tg := api.NewTaskGroup("web", count).AddTask(task)
	tg.Constraints = []*api.Constraint{{Operand: "distinct_hosts", RTarget: "true"}}
	tg.Networks = []*api.NetworkResource{{DynamicPorts: []api.Port{{Label: "http"}}}}
	tg.Services = []*api.Service{{Name: "catalog-web", PortLabel: "http", Tags: []string{"v1"}}}
	tg.Update = &api.UpdateStrategy{MaxParallel: new(3), MinHealthyTime: new(time.Second),
		HealthyDeadline: new(time.Minute), ProgressDeadline: new(2 * time.Minute)}
	job.AddTaskGroup(tg)
	return job
}

// waitCatalogFollows waits until the registrations of "catalog-web" are
// exactly one per running allocation of job catalog (want of them), each
// on its allocation's node with its host port, and returns them.
func waitCatalogFollows(t *testing.T, c *api.Client, want int) []*api.ServiceRegistration {
	t.Helper()
	var regs []*api.ServiceRegistration
	var last string
	require.Eventually(t, func() bool {
		running := map[string]*api.AllocationListStub{}
		allocs, _, err := c.Jobs().Allocations("catalog", false, nil)
		if err != nil {
			return false
		}
		for _, a := range allocs {
			if a.DesiredStatus == "run" && a.ClientStatus == "running" {
				running[a.ID] = a
			}
		}
		regs, _, err = c.Services().Get("catalog-web", nil)
		if err != nil {
			last = err.Error()
			return false
		}
		last = summary(regs)
		if len(running) != want || len(regs) != want {
			return false
		}
		for _, r := range regs {
			a := running[r.AllocID]
			if a == nil || a.NodeID != r.NodeID {
				return false
			}
			full, _, err := c.Allocations().Info(a.ID, nil)
			if err != nil || full.AllocatedResources == nil || len(full.AllocatedResources.Shared.Ports) != 1 ||
				full.AllocatedResources.Shared.Ports[0].Value != r.Port || r.Address == "" {
				return false
			}
		}
		return true
	}, 60*time.Second, 200*time.Millisecond, "want %d registrations following the running allocations; last: %s", want, last)
	return regs
}

func summary(regs []*api.ServiceRegistration) string {
	out := []string{}
	for _, r := range regs {
		out = append(out, r.AllocID[:8]+"@"+r.NodeID[:8])
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// TestServiceCatalog_FollowsAllocations: with a real client, a service is
// in the catalog while its task runs, follows the allocations as the job
// scales up and down, leaves with a node that goes down, and is gone when
// the job stops; `drover service` reads it.
func TestServiceCatalog_FollowsAllocations(t *testing.T) {
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1,
		extra: `min_heartbeat_ttl = "2s"
  heartbeat_grace = "1s"`})
	waitLeader(t, srv)
	c := srv.client(t)
	newClientAgent(t, "client-1", srv.httpHostPort())
	victim := newClientAgent(t, "client-2", srv.httpHostPort())
	waitReadyNodes(t, c, 2)

	resp, _, err := c.Jobs().Register(catalogJob(1), nil)
	require.NoError(t, err)
	require.Contains(t, resp.Warnings, `service "catalog-web": no provider: registered in Drover's native service catalog (provider "nomad"); Nomad would have used Consul`)
	regs := waitCatalogFollows(t, c, 1)
	require.Equal(t, []string{"v1"}, regs[0].Tags)
	task, _, err := c.Services().Get("catalog-task", nil)
	require.NoError(t, err)
	require.Len(t, task, 1)
	require.Equal(t, []string{"server"}, task[0].Tags, "tags are interpolated")

	code, out := drover(t, srv.httpAddr(), "service", "list")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "catalog-web")
	require.Contains(t, out, "[v1]")
	code, out = drover(t, srv.httpAddr(), "service", "info", "catalog-web")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, regs[0].AllocID[:8])

	// Scale up and down: the registrations follow (one allocation per
	// node).
	scale := func(n int) []*api.ServiceRegistration {
		t.Helper()
		// A scale waits for the running deployment to end.
		var err error
		require.Eventually(t, func() bool {
			_, _, err = c.Jobs().Scale("catalog", "web", new(n), "test", false, nil, nil)
			return err == nil || !strings.Contains(err.Error(), "active deployment")
		}, 60*time.Second, 200*time.Millisecond)
		require.NoError(t, err)
		return waitCatalogFollows(t, c, n)
	}
	scale(2)
	scale(1)
	regs = scale(2)

	// A node that goes down takes its services with it; the other node's
	// stay.
	victimID := nodeIDOf(t, c, "client-2")
	require.Contains(t, []string{regs[0].NodeID, regs[1].NodeID}, victimID)
	victim.kill()
	require.Eventually(t, func() bool {
		all, _, err := c.Services().Get("catalog-web", nil)
		if err != nil || len(all) != 1 {
			return false
		}
		return all[0].NodeID != victimID
	}, 30*time.Second, 200*time.Millisecond, "the down node's registration is removed")
	n, _, err := c.Nodes().Info(victimID, nil)
	require.NoError(t, err)
	require.Equal(t, "down", n.Status)

	// Stopping the job empties the catalog.
	_, _, err = c.Jobs().Deregister("catalog", false, nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		list, _, err := c.Services().List(nil)
		return err == nil && len(list) == 0
	}, 30*time.Second, 200*time.Millisecond, "the catalog empties when the job stops")
	code, out = drover(t, srv.httpAddr(), "service", "list")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "No service registrations found")
}
