package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// upstreamsTemplate lists the registrations of service "tsvc-web", one
// "address:port" line each, sorted by consul-template's nomadService.
const upstreamsTemplate = `{{ range nomadService "tsvc-web" }}{{ .Address }}:{{ .Port }}
{{ end }}`

// tsvcWebJob is a raw_exec service job of count allocations, each with a
// group service "tsvc-web" on a dynamic port.
func tsvcWebJob(count int) *api.Job {
	job := api.NewServiceJob("tsvc-web", "tsvc-web", "global", 50)
	job.Datacenters = []string{"dc1"}
	task := api.NewTask("server", "raw_exec").SetConfig("command", "/bin/sleep").SetConfig("args", []string{"3600"})
	task.Resources = &api.Resources{CPU: new(20), MemoryMB: new(16)}
	tg := api.NewTaskGroup("web", count).AddTask(task)
	tg.Networks = []*api.NetworkResource{{DynamicPorts: []api.Port{{Label: "http"}}}}
	tg.Services = []*api.Service{{Name: "tsvc-web", PortLabel: "http", Provider: "nomad"}}
	job.AddTaskGroup(tg)
	return job
}

// tsvcWatcherJob renders upstreamsTemplate into local/upstreams.txt; a
// change re-renders the file and leaves the task running.
func tsvcWatcherJob() *api.Job {
	job := api.NewServiceJob("tsvc-watch", "tsvc-watch", "global", 50)
	job.Datacenters = []string{"dc1"}
	task := api.NewTask("watch", "raw_exec").SetConfig("command", "/bin/sleep").SetConfig("args", []string{"3600"})
	task.Resources = &api.Resources{CPU: new(20), MemoryMB: new(16)}
	task.Templates = []*api.Template{{
		EmbeddedTmpl: new(upstreamsTemplate),
		DestPath:     new("local/upstreams.txt"),
		ChangeMode:   new("noop"),
		Splay:        new(time.Duration(0)),
	}}
	job.AddTaskGroup(api.NewTaskGroup("watch", 1).AddTask(task))
	return job
}

// TestTemplateFollowsNomadService: a template listing nomadService
// "tsvc-web" is rendered before its task starts and follows the service as
// its allocations come and go: every re-render lists exactly the catalog's
// registrations (address:port of the running allocations).
func TestTemplateFollowsNomadService(t *testing.T) {
	srv := newServer(t, serverSpec{name: "tsvc-s1", bootstrapExpect: 1})
	waitLeader(t, srv)
	c := srv.client(t)
	cl := newClientAgent(t, "tsvc-c1", srv.httpHostPort())
	waitReadyNodes(t, c, 1)

	_, _, err := c.Jobs().Register(tsvcWebJob(1), nil)
	require.NoError(t, err)
	_, _, err = c.Jobs().Register(tsvcWatcherJob(), nil)
	require.NoError(t, err)

	var watchAlloc string
	require.Eventually(t, func() bool {
		allocs, _, err := c.Jobs().Allocations("tsvc-watch", false, nil)
		if err != nil || len(allocs) != 1 || allocs[0].ClientStatus != "running" {
			return false
		}
		watchAlloc = allocs[0].ID
		return true
	}, 60*time.Second, 100*time.Millisecond, "the watcher runs")
	rendered := filepath.Join(cl.dataDir, "alloc", watchAlloc, "watch", "local", "upstreams.txt")

	// follows waits until the rendered file lists exactly the catalog's
	// registrations of tsvc-web, want of them.
	follows := func(want int) {
		t.Helper()
		var file, catalog string
		require.Eventually(t, func() bool {
			regs, _, err := c.Services().Get("tsvc-web", nil)
			if err != nil || len(regs) != want {
				return false
			}
			lines := make([]string, 0, len(regs))
			for _, r := range regs {
				lines = append(lines, fmt.Sprintf("%s:%d", r.Address, r.Port))
			}
			sort.Strings(lines)
			catalog = strings.Join(lines, "\n")
			b, err := os.ReadFile(rendered)
			if err != nil {
				return false
			}
			got := strings.Fields(string(b))
			sort.Strings(got)
			file = strings.Join(got, "\n")
			return file == catalog
		}, 60*time.Second, 200*time.Millisecond, "want %d upstreams rendered; file:\n%s\ncatalog:\n%s", want, file, catalog)
	}
	follows(1)
	scale := func(n int) {
		t.Helper()
		var err error
		require.Eventually(t, func() bool {
			_, _, err = c.Jobs().Scale("tsvc-web", "web", new(n), "test", false, nil, nil)
			return err == nil || !strings.Contains(err.Error(), "active deployment")
		}, 60*time.Second, 200*time.Millisecond)
		require.NoError(t, err)
		follows(n)
	}
	scale(3)
	scale(2)

	// Stopping the service empties the list; the watcher keeps running
	// (change_mode noop).
	_, _, err = c.Jobs().Deregister("tsvc-web", true, nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(rendered)
		return err == nil && strings.TrimSpace(string(b)) == ""
	}, 60*time.Second, 200*time.Millisecond, "the rendered list is empty once the service is gone")
	a, _, err := c.Allocations().Info(watchAlloc, nil)
	require.NoError(t, err)
	require.Equal(t, "running", a.ClientStatus)
	require.Zero(t, a.TaskStates["watch"].Restarts)
	_, _, err = c.Jobs().Deregister("tsvc-watch", true, nil)
	require.NoError(t, err)
}
