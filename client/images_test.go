package client

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/client/imagegc"
	"github.com/drover-project/drover/client/state"
	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/drivers/mock"
	"github.com/drover-project/drover/nomad/structs"
)

// dockerAlloc is an allocation whose group runs one Docker task per image.
func dockerAlloc(id string, create uint64, images ...string) *structs.Allocation {
	tg := &structs.TaskGroup{Name: "g"}
	for i, img := range images {
		tg.Tasks = append(tg.Tasks, &structs.Task{Name: "t" + string(rune('0'+i)), Driver: "docker", Config: map[string]any{"image": img}})
	}
	tg.Tasks = append(tg.Tasks, &structs.Task{Name: "side", Driver: "raw_exec", Config: map[string]any{"command": "true"}})
	return &structs.Allocation{
		ID: id, CreateIndex: create, TaskGroup: "g", DesiredStatus: structs.AllocDesiredStatusRun,
		ClientStatus: structs.AllocClientStatusRunning,
		Job:          &structs.Job{ID: "web", TaskGroups: []*structs.TaskGroup{tg}},
	}
}

func started(a *structs.Allocation) *structs.Allocation {
	a.TaskStates = map[string]*structs.TaskState{"t0": {State: "running", StartedAt: time.Unix(1, 0)}}
	return a
}

func healthy(v bool) *structs.AllocDeploymentStatus {
	return &structs.AllocDeploymentStatus{Healthy: &v}
}

// resolver resolves refs from a table.
func resolver(table map[string]string) func(string) (string, bool) {
	return func(ref string) (string, bool) {
		id, ok := table[ref]
		return id, ok
	}
}

const (
	running  = imagegc.LeaseRunning
	prepared = imagegc.LeasePrepared
	previous = imagegc.LeasePrevious
)

func TestComputeLeases_RunningAndPrepared(t *testing.T) {
	run := started(dockerAlloc("run", 1, "img:1"))
	repl := dockerAlloc("repl", 2, "img:2") // pulled, waiting for its previous to stop
	repl.ClientStatus, repl.PreviousAllocation = structs.AllocClientStatusPending, "run"
	pulling := dockerAlloc("pulling", 3, "img:3") // not pulled yet: nothing to lease
	pulling.ClientStatus = structs.AllocClientStatusPending
	done := dockerAlloc("done", 4, "img:4")
	done.ClientStatus = structs.AllocClientStatusComplete
	stopping := started(dockerAlloc("stopping", 5, "img:5")) // desired stop, still running
	stopping.DesiredStatus = structs.AllocDesiredStatusStop

	views := []allocView{
		{alloc: stopping, handles: map[string]string{"t0": "sha256:5"}},
		{alloc: done},
		{alloc: pulling},
		{alloc: repl},
		{alloc: run, handles: map[string]string{"t0": "sha256:1"}},
	}
	var resolved []string
	resolve := func(ref string) (string, bool) {
		resolved = append(resolved, ref)
		return resolver(map[string]string{"img:1": "sha256:stale", "img:2": "sha256:2", "img:4": "sha256:4"})(ref)
	}
	leases, recs := computeLeases(views, nil, resolve)
	require.Equal(t, map[string]imagegc.LeaseReasons{"sha256:1": running, "sha256:2": prepared, "sha256:5": running}, leases)
	require.ElementsMatch(t, []string{"img:2", "img:3"}, resolved, "only non-terminal tasks without a handle are resolved")
	require.Equal(t, map[string]string{"t0": "sha256:2"}, recs["repl"].Tasks)
	require.Empty(t, recs["done"].Tasks)

	// The task restarts: its handle is gone but the alloc still needs it.
	views[4].handles = nil
	leases, _ = computeLeases(views, recs, resolver(nil))
	require.Equal(t, running, leases["sha256:1"], "remembered from the handle")

	// A finished allocation leases nothing, even with a remembered image.
	run.ClientStatus = structs.AllocClientStatusFailed
	leases, _ = computeLeases(views, recs, resolver(nil))
	require.NotContains(t, leases, "sha256:1")
}

func TestComputeLeases_PreviousVersionsOfAnUnfinishedDeployment(t *testing.T) {
	// v1 ran; v2 replaced it in deployment d2 and is not healthy yet.
	v1 := dockerAlloc("v1", 1, "img:1")
	v1.DesiredStatus, v1.ClientStatus, v1.NextAllocation = structs.AllocDesiredStatusStop, structs.AllocClientStatusComplete, "v2"
	v2 := started(dockerAlloc("v2", 2, "img:2"))
	v2.PreviousAllocation, v2.DeploymentID = "v1", "d2"
	prev := map[string]*state.AllocImages{"v1": {Tasks: map[string]string{"t0": "sha256:1"}}}
	views := []allocView{{alloc: v2, handles: map[string]string{"t0": "sha256:2"}}, {alloc: v1}}

	leases, recs := computeLeases(views, prev, resolver(nil))
	require.Equal(t, map[string]imagegc.LeaseReasons{"sha256:1": previous, "sha256:2": running}, leases)
	require.Equal(t, []string{"sha256:1"}, recs["v2"].Chain)

	// v1's runner and record are collected: v2 remembers its chain.
	delete(prev, "v1")
	leases, recs = computeLeases(views[:1], recs, resolver(nil))
	require.Equal(t, previous, leases["sha256:1"])

	// v2 failed (unhealthy, not replaced): a revert may come, keep it.
	v2.ClientStatus, v2.DeploymentStatus = structs.AllocClientStatusFailed, healthy(false)
	views[0].handles = nil
	leases, _ = computeLeases(views[:1], recs, resolver(nil))
	require.Equal(t, map[string]imagegc.LeaseReasons{"sha256:1": previous}, leases)

	// Finished and replaced (the revert): the replacement takes over.
	v2.NextAllocation = "v3"
	leases, _ = computeLeases(views[:1], recs, resolver(nil))
	require.Empty(t, leases)

	// Healthy: the deployment no longer needs v1.
	v2.ClientStatus, v2.NextAllocation, v2.DeploymentStatus = structs.AllocClientStatusRunning, "", healthy(true)
	views[0].handles = map[string]string{"t0": "sha256:2"}
	leases, recs = computeLeases(views[:1], recs, resolver(nil))
	require.Equal(t, map[string]imagegc.LeaseReasons{"sha256:2": running}, leases)
	require.True(t, recs["v2"].Healthy)
	// Health is sticky: a later status without it does not bring v1 back.
	v2.DeploymentStatus = nil
	leases, _ = computeLeases(views[:1], recs, resolver(nil))
	require.NotContains(t, leases, "sha256:1")

	// Stopped by the server (job stopped): nothing to revert to.
	v2b := started(dockerAlloc("v2b", 2, "img:2"))
	v2b.PreviousAllocation, v2b.DeploymentID, v2b.DesiredStatus = "v1", "d2", structs.AllocDesiredStatusStop
	leases, _ = computeLeases([]allocView{{alloc: v2b, handles: map[string]string{"t0": "sha256:2"}}}, map[string]*state.AllocImages{"v1": {Tasks: map[string]string{"t0": "sha256:1"}}}, resolver(nil))
	require.Equal(t, map[string]imagegc.LeaseReasons{"sha256:2": running}, leases)

	// No deployment: no revert, no chain.
	v2c := started(dockerAlloc("v2c", 2, "img:2"))
	v2c.PreviousAllocation = "v1"
	leases, _ = computeLeases([]allocView{{alloc: v2c}}, map[string]*state.AllocImages{"v1": {Tasks: map[string]string{"t0": "sha256:1"}}}, resolver(map[string]string{"img:2": "sha256:2"}))
	require.Equal(t, map[string]imagegc.LeaseReasons{"sha256:2": running}, leases)
}

func TestComputeLeases_ChainStopsAtTheNewestHealthyVersion(t *testing.T) {
	prev := map[string]*state.AllocImages{
		// v2 was healthy: a revert goes back at most to v2.
		"v2": {Tasks: map[string]string{"t0": "sha256:2"}, Chain: []string{"sha256:1"}, Healthy: true},
		// v3 never was: its own chain comes along.
		"v3": {Tasks: map[string]string{"t0": "sha256:3"}, Chain: []string{"sha256:2"}},
	}
	v4 := dockerAlloc("v4", 4, "img:4") // a replacement still preparing
	v4.ClientStatus, v4.PreviousAllocation, v4.DeploymentID = structs.AllocClientStatusPending, "v3", "d4"
	leases, recs := computeLeases([]allocView{{alloc: v4}}, prev, resolver(map[string]string{"img:4": "sha256:4"}))
	require.Equal(t, map[string]imagegc.LeaseReasons{"sha256:2": previous, "sha256:3": previous, "sha256:4": prepared}, leases)
	require.Equal(t, []string{"sha256:2", "sha256:3"}, recs["v4"].Chain)

	prev["v3"].Healthy = true
	leases, _ = computeLeases([]allocView{{alloc: v4}}, map[string]*state.AllocImages{"v3": prev["v3"]}, resolver(nil))
	require.Equal(t, map[string]imagegc.LeaseReasons{"sha256:3": previous}, leases)
	require.Len(t, prev["v2"].Chain, 1, "prev is not modified")
}

func TestHandleImageID(t *testing.T) {
	st, _ := json.Marshal(map[string]string{"ContainerID": "c1", "ImageID": "sha256:1", "Image": "img:1"})
	require.Equal(t, "sha256:1", handleImageID(&drivers.TaskHandle{TaskID: "a/t", DriverState: st}))
	require.Empty(t, handleImageID(&drivers.TaskHandle{TaskID: "", DriverState: st}), "a cleared handle")
	require.Empty(t, handleImageID(&drivers.TaskHandle{TaskID: "a/t", DriverState: []byte("nope")}))
	require.Empty(t, handleImageID(nil))
}

// fakeDocker is a docker-like driver: the mock driver, with an "image" key
// in the task config, the image ID in its DriverState, and image GC.
type fakeDocker struct {
	*mock.Driver
	images map[string]string // ref → image ID, all present locally

	mu      sync.Mutex
	removed []string
}

var _ imageDriver = (*fakeDocker)(nil)

func newFakeDocker(images map[string]string) *fakeDocker {
	return &fakeDocker{Driver: mock.New(hclog.NewNullLogger()), images: images}
}

func (d *fakeDocker) Name() string { return "docker" }

func withoutImage(cfg map[string]any) map[string]any {
	out := maps.Clone(cfg)
	delete(out, "image")
	return out
}

func (d *fakeDocker) ValidateTaskConfig(cfg map[string]any) error {
	return d.Driver.ValidateTaskConfig(withoutImage(cfg))
}

func (d *fakeDocker) PrepareTask(ctx context.Context, cfg *drivers.TaskConfig, p func(drivers.PrepareProgress)) error {
	c := cfg.Copy()
	c.Config = withoutImage(c.Config)
	return d.Driver.PrepareTask(ctx, c, p)
}

func (d *fakeDocker) StartTask(cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	ref, _ := cfg.Config["image"].(string)
	c := cfg.Copy()
	c.Config = withoutImage(c.Config)
	h, err := d.Driver.StartTask(c)
	if err != nil {
		return nil, err
	}
	var st map[string]any
	if err := json.Unmarshal(h.DriverState, &st); err != nil {
		return nil, err
	}
	st["ContainerID"], st["ImageID"], st["Image"] = "ctr-"+cfg.ID, d.images[ref], ref
	h.DriverState, err = json.Marshal(st)
	return h, err
}

func (d *fakeDocker) ImageID(_ context.Context, ref string) (string, error) {
	if id, ok := d.images[ref]; ok {
		return id, nil
	}
	return "", imagegc.ErrNotFound
}

func (d *fakeDocker) RemoveImage(_ context.Context, id string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.removed = append(d.removed, id)
	return nil
}

func (d *fakeDocker) ImageDelay() time.Duration { return 100 * time.Millisecond }

func (d *fakeDocker) removals() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.removed)
}

// dockerAPIAlloc is a service allocation of one docker task "t" running img.
func dockerAPIAlloc(nodeID, img, deploymentID string) *api.Allocation {
	a := mockAlloc(nodeID, map[string]any{"image": img})
	a.ID = uuid.NewString()
	a.Job.Type = ptr("service")
	a.Job.TaskGroups[0].Tasks[0].Driver = "docker"
	a.DeploymentID = deploymentID
	return a
}

func TestClient_ImageLeasesAndGC(t *testing.T) {
	srv := newFakeServer(t)
	docker := newFakeDocker(map[string]string{"img:1": "sha256:1", "img:2": "sha256:2", "other": "sha256:other"})
	cfg := testConfig(srv, t.TempDir())
	cfg.catalog = drivers.Catalog{"docker": docker, "mock": mock.New(hclog.NewNullLogger())}
	c := startClient(t, cfg)
	require.NotNil(t, c.images, "a catalog with an image-collecting docker driver enables image GC")
	waitRegistered(t, c)
	known := func() map[string]imagegc.KnownImage { return c.images.gc.Known() }

	v1 := dockerAPIAlloc(c.NodeID(), "img:1", "")
	srv.upsertAlloc(v1)
	require.Eventually(t, func() bool { return srv.clientStatus(v1.ID) == "running" }, waitFor, tick)
	require.Eventually(t, func() bool { _, ok := known()["sha256:1"]; return ok }, waitFor, tick)

	// A destructive update in deployment d2: v1 stops once v2 is prepared.
	v2 := dockerAPIAlloc(c.NodeID(), "img:2", "d2")
	srv.replaceAlloc(v1.ID, v2)
	require.Eventually(t, func() bool {
		return srv.clientStatus(v2.ID) == "running" && srv.clientStatus(v1.ID) == "complete"
	}, waitFor, tick)
	time.Sleep(5 * docker.ImageDelay())
	require.Empty(t, docker.removals(), "v1's image is kept while deployment d2 may revert")
	require.Equal(t, map[string]imagegc.KnownImage{"sha256:1": {}, "sha256:2": {}}, known())

	// v2 is healthy: v1's image goes after image_delay; v2's and the
	// image the client never leased stay.
	srv.mu.Lock()
	srv.allocs[v2.ID].DeploymentStatus = &api.AllocDeploymentStatus{Healthy: ptr(true)}
	idx := srv.bumpLocked()
	srv.allocs[v2.ID].ModifyIndex, srv.allocs[v2.ID].AllocModifyIndex = idx, idx
	srv.mu.Unlock()
	require.Eventually(t, func() bool { return slices.Equal(docker.removals(), []string{"sha256:1"}) }, waitFor, tick)
	require.Equal(t, map[string]imagegc.KnownImage{"sha256:2": {}}, known())

	// The collector's state survives a restart.
	require.NoError(t, c.Shutdown())
	db, err := state.Open(cfg.StateDir() + "/" + state.FileName)
	require.NoError(t, err)
	stored, err := db.KnownImages()
	require.NoError(t, err)
	require.Equal(t, map[string]state.KnownImage{"sha256:2": {}}, stored)
	rec, err := db.AllocImages(v2.ID)
	require.NoError(t, err)
	require.Equal(t, &state.AllocImages{Tasks: map[string]string{"t": "sha256:2"}, Chain: []string{"sha256:1"}, Healthy: true}, rec)
	require.NoError(t, db.Close())
	time.Sleep(3 * docker.ImageDelay())
	require.Equal(t, []string{"sha256:1"}, docker.removals())
}

// gcSwitch is a fakeDocker whose plugin config turned image GC off.
type gcSwitch struct{ *fakeDocker }

func (gcSwitch) ImageGCEnabled() bool { return false }

func TestClient_NoImageGC(t *testing.T) {
	srv := newFakeServer(t)
	for name, catalog := range map[string]drivers.Catalog{
		"no docker driver":     {"mock": mock.New(hclog.NewNullLogger())},
		"gc { image = false }": {"docker": gcSwitch{newFakeDocker(nil)}},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(srv, t.TempDir())
			cfg.catalog = catalog
			c := startClient(t, cfg)
			require.Nil(t, c.images)
			c.kickImages() // harmless
		})
	}
}
