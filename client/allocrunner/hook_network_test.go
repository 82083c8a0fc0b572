package allocrunner

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

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
