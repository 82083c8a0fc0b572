package client

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/drivers/mock"
	"github.com/drover-project/drover/drivers/rawexec"
	"github.com/drover-project/drover/testutil/taskprocs"
	"github.com/drover-project/drover/version"
)

func TestMain(m *testing.M) {
	rawexec.MaybeRunExecutor() // the catalog links raw_exec
	os.Exit(m.Run())
}

const (
	waitFor = 10 * time.Second
	tick    = 10 * time.Millisecond
)

func testLogger() hclog.Logger {
	if os.Getenv("DROVER_TEST_LOG") == "" {
		return hclog.NewNullLogger()
	}
	return hclog.New(&hclog.LoggerOptions{Level: hclog.Trace, Output: os.Stderr})
}

// testConfig is a client of srv on dataDir, reading the x86 fixture /proc.
func testConfig(srv *fakeServer, dataDir string) *Config {
	return &Config{
		NodeName:   "node-1",
		Datacenter: "dc2",
		NodeClass:  "workers",
		NodePool:   "pool-a",
		Meta:       map[string]string{"rack": "r1"},
		Options:    map[string]string{OptionReservedCPU: "100", OptionReservedMemory: "256"},
		DataDir:    dataDir,
		Servers:    []string{srv.addr()},
		HTTPAddr:   "127.0.0.1:4646",
		Logger:     testLogger(),
		timing:     timing{allocWait: 5 * time.Second, retry: 20 * time.Millisecond, maxRetry: 200 * time.Millisecond},
		procRoot:   "fingerprint/testdata/x86",
	}
}

// startClient starts a client on cfg, shut down when the test ends; the
// raw_exec executors it leaves (Shutdown leaves tasks running, on purpose)
// are killed after that.
func startClient(t *testing.T, cfg *Config) *Client {
	t.Helper()
	taskprocs.Cleanup(t, cfg.DataDir)
	c, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Shutdown() })
	return c
}

func ptr[T any](v T) *T { return &v }

// mockAlloc is a sysbatch allocation of one mock task "t" on nodeID.
func mockAlloc(nodeID string, config map[string]any) *api.Allocation {
	return &api.Allocation{
		ID:            uuid.NewString(),
		Namespace:     "default",
		Name:          "job.g[0]",
		NodeID:        nodeID,
		JobID:         "job",
		TaskGroup:     "g",
		DesiredStatus: "run",
		ClientStatus:  "pending",
		Job: &api.Job{
			ID: ptr("job"), Name: ptr("job"), Type: ptr("sysbatch"), Datacenters: []string{"dc2"},
			TaskGroups: []*api.TaskGroup{{
				Name:  ptr("g"),
				Tasks: []*api.Task{{Name: "t", Driver: "mock", Config: config}},
			}},
		},
	}
}

func waitRegistered(t *testing.T, c *Client) {
	t.Helper()
	select {
	case <-c.registered:
	case <-time.After(waitFor):
		t.Fatal("client did not register")
	}
}

func TestRegister_SendsNode(t *testing.T) {
	srv := newFakeServer(t)
	cfg := testConfig(srv, t.TempDir())
	cfg.MinDynamicPort, cfg.MaxDynamicPort = 21000, 21099
	c := startClient(t, cfg)
	waitRegistered(t, c)

	n := srv.lastRegistration()
	require.NotNil(t, n)
	require.Equal(t, c.NodeID(), n.ID)
	require.Equal(t, "node-1", n.Name)
	require.Equal(t, "dc2", n.Datacenter)
	require.Equal(t, "workers", n.NodeClass)
	require.Equal(t, "pool-a", n.NodePool)
	require.Equal(t, "127.0.0.1:4646", n.HTTPAddr)
	require.Equal(t, "ready", n.Status)
	require.Equal(t, "eligible", n.SchedulingEligibility)
	require.Equal(t, withDefaultMeta(map[string]string{"rack": "r1"}), n.Meta)

	require.NotNil(t, n.NodeResources)
	require.Equal(t, int64(10000), n.NodeResources.Cpu.CpuShares)
	require.Equal(t, uint16(4), n.NodeResources.Cpu.TotalCpuCores)
	require.Equal(t, int64(8048576/1024), n.NodeResources.Memory.MemoryMB)
	require.Positive(t, n.NodeResources.Disk.DiskMB)
	require.Equal(t, 21000, n.NodeResources.MinDynamicPort)
	require.Equal(t, 21099, n.NodeResources.MaxDynamicPort)
	require.NotNil(t, n.ReservedResources)
	require.EqualValues(t, 100, n.ReservedResources.Cpu.CpuShares)
	require.EqualValues(t, 256, n.ReservedResources.Memory.MemoryMB)

	a := n.Attributes
	require.Equal(t, runtime.GOOS, a["kernel.name"])
	require.Equal(t, "6.8.0-45-generic", a["kernel.version"])
	require.Equal(t, "ubuntu", a["os.name"])
	require.Equal(t, "24.04", a["os.version"])
	require.Equal(t, runtime.GOARCH, a["cpu.arch"])
	require.Equal(t, "4", a["cpu.numcores"])
	require.Equal(t, "10000", a["cpu.totalcompute"])
	require.Equal(t, "8241741824", a["memory.totalbytes"])
	require.NotEmpty(t, a["unique.hostname"])
	require.Equal(t, "127.0.0.1", a["unique.network.ip-address"])
	require.Equal(t, version.NomadAPIVersion, a["nomad.version"])
	require.Equal(t, version.Version, a["drover.version"])
	require.Equal(t, "1", a["driver.mock"])

	require.Contains(t, n.Drivers, "mock")
	require.True(t, n.Drivers["mock"].Healthy)
	require.True(t, n.Drivers["mock"].Detected)
	require.Contains(t, n.Drivers, "raw_exec")

	srv.mu.Lock()
	require.Equal(t, srv.secrets[n.ID], c.secretID)
	require.Zero(t, srv.badTokens, "every call carries the node secret")
	srv.mu.Unlock()
	require.Equal(t, c.secretID, c.Node().SecretID)
}

func TestHeartbeats_AndReregisterOn404(t *testing.T) {
	srv := newFakeServer(t) // TTL 200ms
	c := startClient(t, testConfig(srv, t.TempDir()))
	waitRegistered(t, c)
	require.Eventually(t, func() bool { _, hb := srv.counts(); return hb >= 3 }, waitFor, tick)
	regs, _ := srv.counts()
	require.Equal(t, 1, regs)

	srv.forgetNodes() // the server lost its state: heartbeats get 404
	require.Eventually(t, func() bool { r, _ := srv.counts(); return r == 2 }, waitFor, tick)
	require.Equal(t, c.NodeID(), srv.lastRegistration().ID, "the node keeps its ID")
}

func TestServersRotateOnFailure(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	deadAddr := strings.TrimPrefix(dead.URL, "http://")
	dead.Close() // nothing listens there any more
	srv := newFakeServer(t)
	cfg := testConfig(srv, t.TempDir())
	cfg.Servers = []string{deadAddr, srv.addr()}
	c := startClient(t, cfg)
	waitRegistered(t, c)
	require.Eventually(t, func() bool { _, hb := srv.counts(); return hb >= 1 }, waitFor, tick)
}

// A server behind the client (a stale read: its list is older than the
// one applied) must not make the client collect a running allocation,
// nor, once an up-to-date server lists it again, run it a second time.
func TestAllocListFromAServerBehindIsRefused(t *testing.T) {
	srv := newFakeServer(t)
	cfg := testConfig(srv, t.TempDir())
	cfg.timing.flushInterval = 20 * time.Millisecond
	c := startClient(t, cfg)
	waitRegistered(t, c)

	a := mockAlloc(c.NodeID(), map[string]any{"run_for": "1h"})
	srv.upsertAlloc(a)
	require.Eventually(t, func() bool { return srv.clientStatus(a.ID) == "running" }, waitFor, tick)
	started := srv.taskState(a.ID, "t").StartedAt

	srv.setBehind(1) // a server far behind: its list is empty
	require.Eventually(t, func() bool { return srv.behindCount() >= 3 }, waitFor, tick, "the client asks again")
	srv.setBehind(0)
	srv.setDesired(a.ID, "run") // a newer list (from a server up to date)
	require.Eventually(t, func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.index > 0 && srv.allocs[a.ID] != nil
	}, waitFor, tick)
	time.Sleep(200 * time.Millisecond) // the client applies the newer list; nothing to wait on
	require.True(t, c.tracks(a.ID), "the allocation was collected on a list from a server behind")
	require.Equal(t, "running", srv.clientStatus(a.ID))
	require.Equal(t, started, srv.taskState(a.ID, "t").StartedAt, "the task was started again")
	// The client may report "pending" more than once before the task
	// runs; once it ran, "pending" again means it was started again.
	reported := srv.reported(a.ID)
	firstRun := slices.Index(reported, "running")
	require.GreaterOrEqual(t, firstRun, 0)
	require.NotContains(t, reported[firstRun:], "pending", "the allocation ran again: %v", reported)
}

func TestAllocRunsToComplete(t *testing.T) {
	srv := newFakeServer(t)
	cfg := testConfig(srv, t.TempDir())
	cfg.timing.flushInterval = 20 * time.Millisecond // observe the short running phase
	c := startClient(t, cfg)
	waitRegistered(t, c)

	a := mockAlloc(c.NodeID(), map[string]any{"run_for": "100ms"})
	srv.upsertAlloc(a)
	require.Eventually(t, func() bool { return srv.clientStatus(a.ID) == "complete" }, waitFor, tick)
	reported := srv.reported(a.ID)
	require.Contains(t, reported, "running")
	require.Equal(t, "complete", reported[len(reported)-1])
	ts := srv.taskState(a.ID, "t")
	require.NotNil(t, ts)
	require.Equal(t, "dead", ts.State)
	require.False(t, ts.Failed)
}

func TestAllocDesiredStopStopsIt(t *testing.T) {
	srv := newFakeServer(t)
	c := startClient(t, testConfig(srv, t.TempDir()))
	waitRegistered(t, c)

	a := mockAlloc(c.NodeID(), map[string]any{}) // runs until stopped
	srv.upsertAlloc(a)
	require.Eventually(t, func() bool { return srv.clientStatus(a.ID) == "running" }, waitFor, tick)

	srv.stopAlloc(a.ID)
	require.Eventually(t, func() bool {
		ts := srv.taskState(a.ID, "t")
		return ts != nil && ts.State == "dead" && srv.clientStatus(a.ID) != "running"
	}, waitFor, tick)
	require.NotEqual(t, "failed", srv.clientStatus(a.ID))
}

func TestAllocCollectedIsDestroyed(t *testing.T) {
	srv := newFakeServer(t)
	c := startClient(t, testConfig(srv, t.TempDir()))
	waitRegistered(t, c)

	a := mockAlloc(c.NodeID(), map[string]any{"run_for": "50ms"})
	srv.upsertAlloc(a)
	require.Eventually(t, func() bool { return srv.clientStatus(a.ID) == "complete" }, waitFor, tick)
	stored, err := c.db.Alloc(a.ID)
	require.NoError(t, err)
	require.NotNil(t, stored)

	srv.deleteAlloc(a.ID)
	require.Eventually(t, func() bool { return !c.tracks(a.ID) }, waitFor, tick)
	require.Eventually(t, func() bool {
		ids, err := c.db.AllocIDs()
		return err == nil && len(ids) == 0
	}, waitFor, tick, "the runner's Destroy deletes the alloc's state")
}

func TestStatusUpdatesAreBatched(t *testing.T) {
	srv := newFakeServer(t)
	c := startClient(t, testConfig(srv, t.TempDir())) // 200ms flush interval
	waitRegistered(t, c)

	var ids []string
	for range 5 {
		a := mockAlloc(c.NodeID(), map[string]any{"run_for": "100ms"})
		ids = append(ids, a.ID)
		srv.upsertAlloc(a)
	}
	require.Eventually(t, func() bool {
		for _, id := range ids {
			if srv.clientStatus(id) != "complete" {
				return false
			}
		}
		return true
	}, waitFor, tick)

	batches := srv.batchesCopy()
	multi := false
	for i, b := range batches {
		seen := map[string]bool{}
		for _, a := range b.allocs {
			require.False(t, seen[a.ID], "updates are coalesced by alloc ID within a batch")
			seen[a.ID] = true
		}
		multi = multi || len(b.allocs) > 1
		if i > 0 {
			// Sends start at least 200ms apart; these are arrival times at the
			// server, which a loaded machine delays unevenly, so half the
			// interval is the bound (without batching the gaps are ~0).
			require.GreaterOrEqual(t, b.at.Sub(batches[i-1].at), 100*time.Millisecond, "flushes are about 200ms apart")
		}
	}
	require.True(t, multi, "several allocations share a batch")
}

func TestStatusUpdatesRetriedWithoutLoss(t *testing.T) {
	srv := newFakeServer(t)
	c := startClient(t, testConfig(srv, t.TempDir()))
	waitRegistered(t, c)
	srv.mu.Lock()
	srv.failUpdates = 3
	srv.mu.Unlock()

	a := mockAlloc(c.NodeID(), map[string]any{"run_for": "50ms"})
	srv.upsertAlloc(a)
	require.Eventually(t, func() bool { return srv.clientStatus(a.ID) == "complete" }, waitFor, tick)
	srv.mu.Lock()
	defer srv.mu.Unlock()
	require.Zero(t, srv.failUpdates)
}

func TestDriverChangeReregisters(t *testing.T) {
	srv := newFakeServer(t)
	cfg := testConfig(srv, t.TempDir())
	cfg.timing.driverInterval = 20 * time.Millisecond
	c := startClient(t, cfg)
	waitRegistered(t, c)

	require.NoError(t, c.drivers["mock"].(*mock.Driver).SetConfig(map[string]any{"enabled": false}))
	require.Eventually(t, func() bool {
		n := srv.lastRegistration()
		return n.Drivers["mock"] != nil && !n.Drivers["mock"].Healthy
	}, waitFor, tick)
	n := srv.lastRegistration()
	require.NotContains(t, n.Attributes, "driver.mock")
	require.False(t, c.Node().Drivers["mock"].Healthy)
}

func TestRestart_KeepsNodeAndReattachesTasks(t *testing.T) {
	srv := newFakeServer(t)
	dataDir := t.TempDir()
	c1, err := New(testConfig(srv, dataDir))
	require.NoError(t, err)
	waitRegistered(t, c1)
	nodeID := c1.NodeID()

	a := mockAlloc(nodeID, map[string]any{"run_for": "1h", "stdout_string": "hello\n"})
	srv.upsertAlloc(a)
	require.Eventually(t, func() bool { return srv.clientStatus(a.ID) == "running" }, waitFor, tick)
	before := srv.taskState(a.ID, "t")
	logPath, err := c1.runner(a.ID).LogPath("t", "stdout")
	require.NoError(t, err)
	require.NoError(t, c1.Shutdown())

	srv.resetBatches()
	c2 := startClient(t, testConfig(srv, dataDir))
	require.Equal(t, nodeID, c2.NodeID(), "a restarted client keeps its node ID")
	require.NotNil(t, c2.runner(a.ID), "the allocation is restored before any server contact")
	waitRegistered(t, c2)
	require.Eventually(t, func() bool {
		r := srv.reported(a.ID)
		return len(r) > 0 && r[len(r)-1] == "running"
	}, waitFor, tick, "the restored allocation reports running")

	// StartTask writes stdout_string; RecoverTask does not. One copy means
	// the task was reattached, not started again.
	out, err := os.ReadFile(logPath)
	require.NoError(t, err)
	require.Equal(t, "hello\n", string(out))
	after := srv.taskState(a.ID, "t")
	require.Equal(t, "running", after.State)
	require.True(t, before.StartedAt.Equal(after.StartedAt), "the task was not restarted")
	require.Equal(t, countEvents(before, "Started"), countEvents(after, "Started"))
	regs, _ := srv.counts()
	require.Equal(t, 2, regs)
}

func countEvents(ts *api.TaskState, typ string) int {
	n := 0
	for _, e := range ts.Events {
		if e.Type == typ {
			n++
		}
	}
	return n
}

func TestRestart_FinishedAllocIsNotRunAgain(t *testing.T) {
	srv := newFakeServer(t)
	dataDir := t.TempDir()
	c1, err := New(testConfig(srv, dataDir))
	require.NoError(t, err)
	waitRegistered(t, c1)
	a := mockAlloc(c1.NodeID(), map[string]any{"run_for": "20ms", "stdout_string": "once\n"})
	srv.upsertAlloc(a)
	require.Eventually(t, func() bool { return srv.clientStatus(a.ID) == "complete" }, waitFor, tick)
	logPath, err := c1.runner(a.ID).LogPath("t", "stdout")
	require.NoError(t, err)
	require.NoError(t, c1.Shutdown())

	c2 := startClient(t, testConfig(srv, dataDir))
	waitRegistered(t, c2)
	require.True(t, c2.tracks(a.ID))
	require.Nil(t, c2.runner(a.ID))
	require.Eventually(t, func() bool {
		r := srv.reported(a.ID)
		return len(r) > 0 && r[len(r)-1] == "complete"
	}, waitFor, tick)
	// A finished allocation gets no runner, so nothing can start it again.
	require.Nil(t, c2.runner(a.ID))
	out, err := os.ReadFile(logPath)
	require.NoError(t, err)
	require.Equal(t, "once\n", string(out))
	require.Equal(t, "complete", srv.clientStatus(a.ID))
}

func TestNew_InvalidConfig(t *testing.T) {
	_, err := New(&Config{})
	require.ErrorContains(t, err, "data_dir is required")
	require.ErrorContains(t, err, "servers must list")
	_, err = New(&Config{DataDir: t.TempDir(), Servers: []string{"x:1"}, Options: map[string]string{OptionReservedCPU: "lots"}})
	require.ErrorContains(t, err, `option "reserved.cpu" must be a non-negative integer`)
}

func TestNodeIsACopy(t *testing.T) {
	srv := newFakeServer(t)
	c := startClient(t, testConfig(srv, t.TempDir()))
	n := c.Node()
	n.Attributes["kernel.name"] = "plan9"
	n.Drivers["mock"].Healthy = false
	require.Equal(t, runtime.GOOS, c.Node().Attributes["kernel.name"])
	require.True(t, c.Node().Drivers["mock"].Healthy)
	require.FileExists(t, filepath.Join(c.cfg.StateDir(), "state.db"))
}

func getJSON(t *testing.T, h http.Handler, path string, out any) int {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if out != nil && rec.Code == http.StatusOK {
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), out))
	}
	return rec.Code
}

func getBody(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, _ := io.ReadAll(rec.Body)
	return rec.Code, string(body)
}

// TestReplacementPreparesBeforeThePreviousStops: a destructive update stops
// the old allocation and places its replacement at once; the client keeps
// the old one running until the replacement is prepared.
func TestReplacementPreparesBeforeThePreviousStops(t *testing.T) {
	srv := newFakeServer(t)
	cfg := testConfig(srv, t.TempDir())
	cfg.timing.flushInterval = 20 * time.Millisecond
	c := startClient(t, cfg)
	waitRegistered(t, c)

	old := mockAlloc(c.NodeID(), map[string]any{})
	srv.upsertAlloc(old)
	require.Eventually(t, func() bool { return srv.clientStatus(old.ID) == "running" }, waitFor, tick)

	repl := mockAlloc(c.NodeID(), map[string]any{"prepare_for": "300ms", "run_for": "1h"})
	began := time.Now()
	srv.replaceAlloc(old.ID, repl)
	require.Eventually(t, func() bool { return srv.clientStatus(repl.ID) == "running" }, waitFor, tick)
	require.Eventually(t, func() bool { return srv.clientStatus(old.ID) == "complete" }, waitFor, tick)
	oldState := srv.taskState(old.ID, "t")
	require.GreaterOrEqual(t, oldState.FinishedAt.Sub(began), 250*time.Millisecond,
		"the old allocation ran until the replacement was prepared")
	require.LessOrEqual(t, oldState.FinishedAt, srv.taskState(repl.ID, "t").StartedAt)
}

// TestFailedPrepareLeavesThePreviousRunning: the old allocation survives a
// replacement whose prepare fails, until the server stops the replacement.
func TestFailedPrepareLeavesThePreviousRunning(t *testing.T) {
	srv := newFakeServer(t)
	cfg := testConfig(srv, t.TempDir())
	cfg.timing.flushInterval = 20 * time.Millisecond
	c := startClient(t, cfg)
	waitRegistered(t, c)

	old := mockAlloc(c.NodeID(), map[string]any{})
	srv.upsertAlloc(old)
	require.Eventually(t, func() bool { return srv.clientStatus(old.ID) == "running" }, waitFor, tick)

	repl := mockAlloc(c.NodeID(), map[string]any{"prepare_error": "manifest unknown"})
	srv.replaceAlloc(old.ID, repl)
	require.Eventually(t, func() bool { return srv.clientStatus(repl.ID) == "failed" }, waitFor, tick)
	require.Equal(t, "running", srv.clientStatus(old.ID))
	require.Equal(t, "running", c.runner(old.ID).Alloc().ClientStatus)

	srv.setDesired(repl.ID, "stop") // e.g. the deployment failed and reverted
	require.Eventually(t, func() bool { return srv.clientStatus(old.ID) == "complete" }, waitFor, tick,
		"with no replacement waiting, the held stop is delivered")
}

// TestAllocFirstSeenStoppedIsSettled: an allocation the server stopped
// before this client ever saw it is never run, and is reported complete so
// the server does not count it as starting forever.
func TestAllocFirstSeenStoppedIsSettled(t *testing.T) {
	srv := newFakeServer(t)
	cfg := testConfig(srv, t.TempDir())
	cfg.timing.flushInterval = 20 * time.Millisecond
	c := startClient(t, cfg)
	waitRegistered(t, c)

	a := mockAlloc(c.NodeID(), map[string]any{})
	a.DesiredStatus = "stop"
	srv.upsertAlloc(a)
	failed := mockAlloc(c.NodeID(), map[string]any{})
	failed.DesiredStatus, failed.ClientStatus = "stop", "failed"
	srv.upsertAlloc(failed)

	require.Eventually(t, func() bool { return srv.clientStatus(a.ID) == "complete" }, waitFor, tick)
	require.Equal(t, []string{"complete"}, srv.reported(a.ID), "reported once, never as running")
	require.Nil(t, srv.taskState(a.ID, "t"), "no task ran")
	require.Nil(t, c.runner(a.ID))
	require.True(t, c.tracks(a.ID))
	srv.mu.Lock()
	desc := srv.allocs[a.ID].ClientDescription
	srv.mu.Unlock()
	require.Equal(t, neverRanDescription, desc)
	require.Empty(t, srv.reported(failed.ID), "an allocation with a final client status is not reported again")
}

// TestBurstOfReplacementsSettlesEveryAllocation: versions replace each other
// on one node faster than they can prepare (each names the one before as its
// previous allocation, and each is stopped before it started). Every
// allocation but the newest ends with a terminal client status; the newest
// runs.
func TestBurstOfReplacementsSettlesEveryAllocation(t *testing.T) {
	srv := newFakeServer(t)
	cfg := testConfig(srv, t.TempDir())
	cfg.timing.flushInterval = 20 * time.Millisecond
	c := startClient(t, cfg)
	waitRegistered(t, c)

	first := mockAlloc(c.NodeID(), map[string]any{})
	srv.upsertAlloc(first)
	require.Eventually(t, func() bool { return srv.clientStatus(first.ID) == "running" }, waitFor, tick)

	ids := []string{first.ID}
	prev := first.ID
	for range 8 {
		repl := mockAlloc(c.NodeID(), map[string]any{"prepare_for": "200ms", "run_for": "1h"})
		srv.replaceAlloc(prev, repl)
		ids = append(ids, repl.ID)
		prev = repl.ID
		time.Sleep(30 * time.Millisecond) // the client sees most versions, not only the last
	}
	newest := ids[len(ids)-1]
	require.Eventually(t, func() bool { return srv.clientStatus(newest) == "running" }, waitFor, tick)
	require.Eventually(t, func() bool {
		for _, id := range ids[:len(ids)-1] {
			switch srv.clientStatus(id) {
			case "complete", "failed":
			default:
				return false
			}
		}
		return true
	}, waitFor, tick, "every replaced allocation settles")
}

// A server behind the one that answered before (a follower catching up, a
// deposed leader) answers the alloc query at once with its older view,
// which lacks the allocation placed since: the client does not take it
// (the allocation keeps running, its runner untouched) until the servers
// have stayed behind for the patience; then it takes their view.
func TestAllocsFromAServerBehindAreNotApplied(t *testing.T) {
	srv := newFakeServer(t)
	cfg := testConfig(srv, t.TempDir())
	cfg.timing.behindPatience = time.Hour
	c := startClient(t, cfg)
	waitRegistered(t, c)

	before := srv.currentIndex()
	a := mockAlloc(c.NodeID(), map[string]any{}) // runs until stopped
	srv.upsertAlloc(a)
	require.Eventually(t, func() bool { return srv.clientStatus(a.ID) == "running" }, waitFor, tick)

	srv.setBehind(before) // a view from before a was placed
	time.Sleep(500 * time.Millisecond)
	require.True(t, c.tracks(a.ID), "an older view does not collect the allocation")
	require.Equal(t, "running", srv.clientStatus(a.ID))

	srv.setBehind(0)
	b := mockAlloc(c.NodeID(), map[string]any{})
	srv.upsertAlloc(b)
	require.Eventually(t, func() bool { return srv.clientStatus(b.ID) == "running" }, waitFor, tick, "the client polls on")
	require.True(t, c.tracks(a.ID))
	require.Equal(t, "running", srv.clientStatus(a.ID))
}

func TestAllocsFromServersBehindPastThePatienceAreApplied(t *testing.T) {
	srv := newFakeServer(t)
	cfg := testConfig(srv, t.TempDir())
	cfg.timing.behindPatience = 300 * time.Millisecond
	c := startClient(t, cfg)
	waitRegistered(t, c)

	before := srv.currentIndex()
	a := mockAlloc(c.NodeID(), map[string]any{})
	srv.upsertAlloc(a)
	require.Eventually(t, func() bool { return srv.clientStatus(a.ID) == "running" }, waitFor, tick)

	srv.setBehind(before) // the cluster's state went back (a snapshot restored)
	require.Eventually(t, func() bool { return !c.tracks(a.ID) }, waitFor, tick)
}

func TestBehindVerdict(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p := 30 * time.Second
	for name, tc := range map[string]struct {
		applied, answered uint64
		since, now        time.Time
		apply             bool
		wantSince         time.Time
	}{
		"newer":                     {applied: 10, answered: 12, now: t0, apply: true},
		"same index (a timeout)":    {applied: 10, answered: 10, now: t0, apply: true},
		"newer ends a behind spell": {applied: 10, answered: 11, since: t0, now: t0.Add(time.Second), apply: true},
		"first behind":              {applied: 10, answered: 3, now: t0, wantSince: t0},
		"still behind":              {applied: 10, answered: 3, since: t0, now: t0.Add(p - time.Millisecond), wantSince: t0},
		"behind for the patience":   {applied: 10, answered: 3, since: t0, now: t0.Add(p), apply: true},
	} {
		t.Run(name, func(t *testing.T) {
			apply, since := behindVerdict(tc.applied, tc.answered, false, tc.since, tc.now, p)
			require.Equal(t, tc.apply, apply)
			require.True(t, tc.wantSince.Equal(since), "since %v, want %v", since, tc.wantSince)
		})
	}
}

// After a restart, the allocations restored from the client's state count
// as applied: a first answer from a server behind them (one that does not
// know the allocation yet) does not collect it.
func TestRestart_ServerBehindTheRestoredAllocsIsNotApplied(t *testing.T) {
	srv := newFakeServer(t)
	dataDir := t.TempDir()
	cfg := testConfig(srv, dataDir)
	cfg.timing.behindPatience = time.Hour
	c1, err := New(cfg)
	require.NoError(t, err)
	waitRegistered(t, c1)
	before := srv.currentIndex()
	a := mockAlloc(c1.NodeID(), map[string]any{"run_for": "1h"})
	srv.upsertAlloc(a)
	require.Eventually(t, func() bool { return srv.clientStatus(a.ID) == "running" }, waitFor, tick)
	require.NoError(t, c1.Shutdown())

	srv.setBehind(before)
	c2 := startClient(t, cfg)
	waitRegistered(t, c2)
	time.Sleep(500 * time.Millisecond)
	require.True(t, c2.tracks(a.ID), "an answer older than the restored allocation does not collect it")
	require.NotNil(t, c2.runner(a.ID))

	srv.setBehind(0)
	b := mockAlloc(c2.NodeID(), map[string]any{"run_for": "1h"})
	srv.upsertAlloc(b)
	require.Eventually(t, func() bool { return srv.clientStatus(b.ID) == "running" }, waitFor, tick)
	require.True(t, c2.tracks(a.ID))
}
