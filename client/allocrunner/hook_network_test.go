package allocrunner

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/client/allocrunner/taskrunner"
	"github.com/drover-project/drover/client/network"
	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/drivers/mock"
	"github.com/drover-project/drover/nomad/structs"
)

// fakeNetwork is a NetworkManager that records what the hook asks.
type fakeNetwork struct {
	mu        sync.Mutex
	setups    []*network.Spec
	creators  []drivers.NetworkCreator
	teardowns []string
	setupErr  error
}

func (f *fakeNetwork) Setup(_ context.Context, alloc *structs.Allocation, spec *network.Spec, creator drivers.NetworkCreator) (*network.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setups = append(f.setups, spec)
	f.creators = append(f.creators, creator)
	if f.setupErr != nil {
		return nil, f.setupErr
	}
	return &network.Status{
		Isolation: &drivers.NetworkIsolation{Path: "/netns/" + alloc.ID, Labels: map[string]string{"k": "v"}},
		Network:   &structs.AllocNetworkStatus{InterfaceName: "eth0", Address: "172.26.64.9"},
	}, nil
}

func (f *fakeNetwork) Teardown(_ context.Context, allocID string, _ drivers.NetworkCreator, _ *drivers.NetworkIsolation) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.teardowns = append(f.teardowns, allocID)
	return nil
}

// recordingDriver is the mock driver, remembering each start's config.
type recordingDriver struct {
	*mock.Driver
	mu      sync.Mutex
	configs []*drivers.TaskConfig
}

func (d *recordingDriver) StartTask(cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	d.mu.Lock()
	d.configs = append(d.configs, cfg.Copy())
	d.mu.Unlock()
	return d.Driver.StartTask(cfg)
}

// creatorDriver also owns namespaces, as the docker driver does.
type creatorDriver struct{ *recordingDriver }

func (creatorDriver) CreateNetwork(*drivers.NetworkCreateRequest) (*drivers.NetworkIsolation, bool, error) {
	return nil, false, errors.New("not called by the fake manager")
}
func (creatorDriver) DestroyNetwork(string, *drivers.NetworkIsolation) error { return nil }

func bridgeJob() *structs.Job {
	job := newJob(structs.JobTypeBatch, mockTask("web", map[string]any{"run_for": "50ms", "exit_code": 0}))
	job.TaskGroups[0].Networks = []*structs.NetworkResource{{Mode: "bridge", Hostname: "web-${NOMAD_ALLOC_INDEX}"}}
	return job
}

func bridgeAllocOf(job *structs.Job) *structs.Allocation {
	a := newAlloc(job)
	a.Name = "web.g[3]"
	a.AllocatedResources = &structs.AllocatedResources{Shared: structs.AllocatedSharedResources{
		Ports: []structs.AllocatedPortMapping{{Label: "http", Value: 25000, To: 8080}},
	}}
	return a
}

// TestNetworkHookBridge: a bridge-mode allocation gets its namespace
// before its task starts (the task's config and environment carry it, the
// allocation reports its address), and loses it once, when its task is
// dead, whatever else destroys the runner later.
func TestNetworkHookBridge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		rec := &recordingDriver{Driver: h.driver}
		fake := &fakeNetwork{}
		alloc := bridgeAllocOf(bridgeJob())
		ar := h.runner(alloc, func(c *Config) {
			c.Network = fake
			c.Drivers = drivers.Catalog{mock.Name: rec}
		})
		go ar.Run()
		<-ar.WaitCh()
		require.Equal(t, structs.AllocClientStatusComplete, ar.Alloc().ClientStatus)

		require.Len(t, fake.setups, 1)
		require.Equal(t, "web-3", fake.setups[0].Hostname, "hostname interpolated")
		require.Equal(t, []network.PortMapping{{HostPort: 25000, ContainerPort: 8080, Protocol: "tcp"}, {HostPort: 25000, ContainerPort: 8080, Protocol: "udp"}}, fake.setups[0].Ports)
		require.Nil(t, fake.creators[0], "the mock driver owns no namespaces")
		require.Len(t, rec.configs, 1)
		cfg := rec.configs[0]
		require.Equal(t, "/netns/"+alloc.ID, cfg.Network.Path)
		require.Equal(t, "172.26.64.9", cfg.Env["NOMAD_ALLOC_IP_http"])
		require.Equal(t, "8080", cfg.Env["NOMAD_ALLOC_PORT_http"])
		require.Equal(t, "25000", cfg.Env["NOMAD_HOST_PORT_http"])
		require.Equal(t, "172.26.64.9", ar.Alloc().NetworkStatus.Address)
		require.Equal(t, []string{alloc.ID}, fake.teardowns, "torn down when the task was dead")

		ar.Destroy()
		require.Equal(t, []string{alloc.ID}, fake.teardowns, "not twice")
	})
}

// TestNetworkHookCreator: the group's first driver that owns namespaces
// is handed to the manager.
func TestNetworkHookCreator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		cd := creatorDriver{&recordingDriver{Driver: h.driver}}
		fake := &fakeNetwork{}
		ar := h.runner(bridgeAllocOf(bridgeJob()), func(c *Config) {
			c.Network = fake
			c.Drivers = drivers.Catalog{mock.Name: cd}
		})
		go ar.Run()
		<-ar.WaitCh()
		require.Len(t, fake.creators, 1)
		require.Equal(t, cd, fake.creators[0])
	})
}

// TestNetworkHookFailures: a client without bridge networking, or a
// failed setup, fails the allocation before its task starts; an
// allocation in the host's network never asks for a namespace.
func TestNetworkHookFailures(t *testing.T) {
	cases := []struct {
		name    string
		mgr     NetworkManager
		job     *structs.Job
		failed  bool
		message string
	}{
		{name: "no manager", job: bridgeJob(), failed: true, message: "cannot set up"},
		{name: "setup fails", mgr: &fakeNetwork{setupErr: errors.New("CNI ADD failed")}, job: bridgeJob(), failed: true, message: "CNI ADD failed"},
		{name: "host network", mgr: &fakeNetwork{setupErr: errors.New("must not be called")},
			job: newJob(structs.JobTypeBatch, mockTask("web", map[string]any{"run_for": "10ms"}))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				ar := h.runner(bridgeAllocOf(tc.job), func(c *Config) { c.Network = tc.mgr })
				go ar.Run()
				<-ar.WaitCh()
				st := taskState(t, ar, "web")
				require.Equal(t, tc.failed, st.Failed)
				if tc.failed {
					require.Contains(t, findEvent(st, "Setup Failure").DisplayMessage, tc.message)
					require.Nil(t, findEvent(st, "Started"))
				}
			})
		})
	}
}

// bridgeReplacement is a running allocation and its replacement in
// bridge mode (both on fake's namespaces), the replacement's task
// preparing with config.
func bridgeReplacement(t *testing.T, h *harness, fake *fakeNetwork, config map[string]any) (prev, ar *AllocRunner, rec *recordingPrev) {
	t.Helper()
	withFake := func(c *Config) { c.Network = fake }
	prevAlloc := bridgeAllocOf(newJob(structs.JobTypeSystem, mockTask("web", nil)))
	prevAlloc.Job.TaskGroups[0].Networks = []*structs.NetworkResource{{Mode: "bridge"}}
	prev = h.runner(prevAlloc, withFake)
	go prev.Run()
	time.Sleep(time.Minute)
	synctest.Wait()
	require.Equal(t, structs.AllocClientStatusRunning, prev.Alloc().ClientStatus)

	job := newJob(structs.JobTypeSystem, mockTask("web", config))
	job.Version = 2
	job.TaskGroups[0].Networks = []*structs.NetworkResource{{Mode: "bridge"}}
	alloc := bridgeAllocOf(job)
	alloc.PreviousAllocation = prevAlloc.ID
	rec = &recordingPrev{inner: LocalPrevAlloc(prev)}
	ar = h.runner(alloc, withFake, func(c *Config) { c.PrevAlloc = rec })
	return prev, ar, rec
}

// TestNetworkBuiltBeforePreviousStops: a replacement's namespace is built
// during prepare, while the previous allocation still runs, so that the
// previous allocation's stop and the replacement's start are all the
// node's dark time; the previous allocation's namespace goes once its
// task is dead.
func TestNetworkBuiltBeforePreviousStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		fake := &fakeNetwork{}
		prev, ar, rec := bridgeReplacement(t, h, fake, map[string]any{"prepare_for": "2s"})
		var setupsAtStop int
		var teardownsAtStop []string
		rec.onStop = func() {
			fake.mu.Lock()
			setupsAtStop, teardownsAtStop = len(fake.setups), append([]string(nil), fake.teardowns...)
			fake.mu.Unlock()
		}
		// assert, not require: a runner left running would hold the bubble.
		go ar.Run()
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Empty(t, rec.Calls(), "mid-prepare")
		fake.mu.Lock()
		assert.Len(t, fake.setups, 2, "the replacement's namespace exists mid-prepare")
		fake.mu.Unlock()

		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.Equal(t, []string{"stop", "waited"}, rec.Calls())
		assert.Equal(t, 2, setupsAtStop, "built before the previous allocation was stopped")
		assert.Empty(t, teardownsAtStop, "the previous namespace stays until its task is dead")
		assert.Equal(t, []string{prev.id}, fake.teardowns, "the previous allocation's namespace went")
		assert.Equal(t, taskrunner.StateRunning, taskState(t, ar, "web").State)
		assert.Equal(t, "172.26.64.9", ar.Alloc().NetworkStatus.Address)
		ar.Destroy()
		prev.Destroy()
		assert.Equal(t, []string{prev.id, ar.id}, fake.teardowns)
	})
}

// TestNetworkBuiltThenPrepareFails: a replacement whose prepare fails
// never stops the previous allocation and removes the namespace it built.
func TestNetworkBuiltThenPrepareFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		fake := &fakeNetwork{}
		prev, ar, rec := bridgeReplacement(t, h, fake, map[string]any{"prepare_for": "1s", "prepare_error": "manifest unknown"})
		defer prev.Destroy()
		defer ar.Destroy()
		go ar.Run()
		<-ar.WaitCh()
		require.Equal(t, structs.AllocClientStatusFailed, ar.Alloc().ClientStatus)
		require.Empty(t, rec.Calls(), "the previous allocation was never asked to stop")
		require.Equal(t, structs.AllocClientStatusRunning, prev.Alloc().ClientStatus)
		require.Len(t, fake.setups, 2)
		require.Equal(t, []string{ar.id}, fake.teardowns, "only the failed replacement's namespace went")
	})
}
