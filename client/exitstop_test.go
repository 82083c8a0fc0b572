package client

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/client/allocrunner/taskrunner"
	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/drivers/mock"
	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/testutil/taskprocs"
)

func TestExitStopBound(t *testing.T) {
	alloc := func(group string, kills ...time.Duration) *structs.Allocation {
		tg := &structs.TaskGroup{Name: "g"}
		for _, k := range kills {
			tg.Tasks = append(tg.Tasks, &structs.Task{Name: "t", KillTimeout: k})
		}
		return &structs.Allocation{TaskGroup: group, Job: &structs.Job{TaskGroups: []*structs.TaskGroup{tg}}}
	}
	cases := []struct {
		name   string
		allocs []*structs.Allocation
		want   time.Duration
	}{
		{"no allocations", nil, exitStopGrace},
		{"unset kill_timeout is the default", []*structs.Allocation{alloc("g", 0)}, taskrunner.DefaultKillTimeout + exitStopGrace},
		{"the longest task of all allocations, not the sum", []*structs.Allocation{
			alloc("g", time.Second, 30*time.Second), alloc("g", 20*time.Second),
		}, 30*time.Second + exitStopGrace},
		{"a short kill_timeout is kept short", []*structs.Allocation{alloc("g", time.Second)}, time.Second + exitStopGrace},
		{"an allocation without its job or group counts nothing", []*structs.Allocation{
			{TaskGroup: "g"}, alloc("other", time.Hour), nil, alloc("g", 2*time.Second),
		}, 2*time.Second + exitStopGrace},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, exitStopBound(tc.allocs, exitStopGrace))
		})
	}
}

// rawExecAlloc is mockAlloc with a raw_exec task "t" running command with
// args, with kill_timeout.
func rawExecAlloc(nodeID string, killTimeout time.Duration, command string, args ...any) *api.Allocation {
	a := mockAlloc(nodeID, map[string]any{"command": command, "args": args})
	a.Job.TaskGroups[0].Tasks[0].Driver = "raw_exec"
	a.Job.TaskGroups[0].Tasks[0].KillTimeout = &killTimeout
	a.Job.TaskGroups[0].Tasks[0].ShutdownDelay = time.Hour // skipped on exit
	return a
}

// With StopAllocsOnShutdown (the dev agent), Shutdown stops every task
// before it returns: one that exits on SIGTERM, and one that ignores it
// and is SIGKILLed after its kill_timeout. No executor or task process of
// the client is left and the allocation directories are gone.
func TestShutdown_StopAllocsOnShutdownLeavesNoTask(t *testing.T) {
	srv := newFakeServer(t)
	cfg := testConfig(srv, t.TempDir())
	cfg.Plugins = map[string]map[string]any{"raw_exec": {"enabled": true}}
	cfg.StopAllocsOnShutdown = true
	c := startClient(t, cfg)
	waitRegistered(t, c)
	polite := rawExecAlloc(c.NodeID(), 10*time.Second, "/bin/sleep", "3600")
	stubborn := rawExecAlloc(c.NodeID(), time.Second, "/bin/sh", "-c", "trap '' TERM; sleep 3600 & wait; wait")
	stubborn.Name = "job.g[1]"
	srv.upsertAlloc(polite)
	srv.upsertAlloc(stubborn)
	for _, a := range []*api.Allocation{polite, stubborn} {
		require.Eventually(t, func() bool { return srv.clientStatus(a.ID) == "running" }, waitFor, tick)
	}
	var procs []taskprocs.Process
	require.Eventually(t, func() bool { procs = taskprocs.Find(cfg.DataDir); return len(procs) >= 4 }, waitFor, tick,
		"two executors and their tasks: %v", &procs)

	start := time.Now()
	require.NoError(t, c.Shutdown())
	took := time.Since(start)
	require.Empty(t, taskprocs.Find(cfg.DataDir), "nothing of the client's tasks is left")
	for _, p := range procs {
		require.False(t, taskprocs.Alive(p.PID), "%v is gone", p)
	}
	require.GreaterOrEqual(t, took, time.Second, "the stubborn task got its kill_timeout")
	require.Less(t, took, 10*time.Second, "no shutdown_delay, and the polite task stopped on SIGTERM")
	for _, a := range []*api.Allocation{polite, stubborn} {
		_, err := os.Stat(filepath.Join(cfg.AllocDir(), a.ID))
		require.ErrorIs(t, err, os.ErrNotExist, "alloc dir %s removed", a.ID)
	}
}

// Without it (any client agent with a data dir), Shutdown leaves the tasks
// running for the next client process to reattach.
func TestShutdown_LeavesTasksRunningForReattach(t *testing.T) {
	srv := newFakeServer(t)
	cfg := testConfig(srv, t.TempDir())
	cfg.Plugins = map[string]map[string]any{"raw_exec": {"enabled": true}}
	c := startClient(t, cfg)
	waitRegistered(t, c)
	a := rawExecAlloc(c.NodeID(), time.Second, "/bin/sleep", "3600")
	srv.upsertAlloc(a)
	require.Eventually(t, func() bool { return srv.clientStatus(a.ID) == "running" }, waitFor, tick)
	require.NoError(t, c.Shutdown())
	procs := taskprocs.Find(cfg.DataDir)
	require.Len(t, procs, 2, "the executor and its task keep running: %v", procs)
	require.True(t, procs[0].Executor)
	require.Equal(t, "/bin/sleep 3600", procs[1].Cmdline)
	// startClient's cleanup kills them when the test ends.
}

// hangingStopDriver is the mock driver whose StopTask and DestroyTask hang
// until release is closed, like a Docker engine that stopped answering.
type hangingStopDriver struct {
	*mock.Driver
	release chan struct{}
}

func (d *hangingStopDriver) StopTask(taskID string, timeout time.Duration, signal string) error {
	<-d.release
	return d.Driver.StopTask(taskID, timeout, signal)
}

func (d *hangingStopDriver) DestroyTask(taskID string, force bool) error {
	<-d.release
	return d.Driver.DestroyTask(taskID, force)
}

// lockedBuffer is a bytes.Buffer safe for a logger and a reader at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A driver that never finishes stopping does not hold the exit: Shutdown
// returns once the bound (kill_timeout + grace) has passed, and says which
// allocation it left.
func TestShutdown_StopAllocsOnShutdownIsBounded(t *testing.T) {
	srv := newFakeServer(t)
	cfg := testConfig(srv, t.TempDir())
	hanging := &hangingStopDriver{Driver: mock.New(hclog.NewNullLogger()), release: make(chan struct{})}
	t.Cleanup(func() { close(hanging.release) })
	cfg.catalog = drivers.Catalog{"mock": hanging}
	cfg.StopAllocsOnShutdown = true
	cfg.timing.exitGrace = 200 * time.Millisecond
	var logs lockedBuffer
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: &logs})
	c := startClient(t, cfg)
	waitRegistered(t, c)
	a := mockAlloc(c.NodeID(), map[string]any{"run_for": "1h"})
	a.Job.TaskGroups[0].Tasks[0].KillTimeout = new(300 * time.Millisecond)
	srv.upsertAlloc(a)
	require.Eventually(t, func() bool { return srv.clientStatus(a.ID) == "running" }, waitFor, tick)

	start := time.Now()
	require.NoError(t, c.Shutdown())
	took := time.Since(start)
	require.GreaterOrEqual(t, took, 500*time.Millisecond, "it waited for the bound")
	require.Less(t, took, 5*time.Second, "and not much longer")
	require.Contains(t, logs.String(), "allocations still stopping at the bound")
	require.Contains(t, logs.String(), a.ID)
}
