package client

import (
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/client/allocrunner"
	"github.com/drover-project/drover/client/imagegc"
	"github.com/drover-project/drover/client/state"
	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/nomad/structs"
)

// Image leases: the client keeps the images its allocations need and lets
// the image collector (client/imagegc) remove the others after the Docker
// driver's image_delay. Leases are recomputed from the alloc runners after
// every alloc sync, on every runner state update and once a minute:
//
//   - running: the images of a non-terminal allocation's Docker tasks (from
//     the task handles' DriverState, else the task config's image ref
//     resolved with ImageID), and those of any task with a live handle;
//   - prepared: the same, for an allocation none of whose tasks has
//     started (a replacement waiting for its previous allocation to stop);
//   - previous: while an allocation of a deployment is not healthy — the
//     client cannot query deployments, so "its deployment is unfinished" is
//     approximated by "it is not healthy in it yet" — the images of its
//     PreviousAllocation chain, so that a revert never pulls again. The
//     chain is the previous allocation's images plus, when that one was
//     never healthy, its own chain (a revert goes back at most to the
//     newest version that was healthy). The lease ends when the allocation
//     is healthy (DeploymentStatus.Healthy == true), stopped by the server
//     (the job stopped, or a replacement took over — the replacement's own
//     chain then includes this allocation and its chain), or finished and
//     replaced (NextAllocation set).
//
// Each allocation's images and chain are remembered (state.AllocImages, in
// the allocation's bucket) since task handles go when tasks exit, and a
// restarted client must still know them.

// imageDriver is what the client needs of the Docker driver (the "docker"
// entry of its catalog).
type imageDriver interface {
	imagegc.ImageStore
	// ImageID returns the ID of the local image ref names; an error when
	// it is not present.
	ImageID(ctx context.Context, ref string) (string, error)
	// ImageDelay is how long an unused image stays (image_delay).
	ImageDelay() time.Duration
}

const (
	dockerDriverName = "docker"
	// dockerImageKey is the Docker task config key naming the image.
	dockerImageKey = "image"
	// imageLeaseResync is how often leases are recomputed without a change.
	imageLeaseResync = time.Minute
	// imageIDTimeout bounds one ImageID call.
	imageIDTimeout = 30 * time.Second
)

// imageLeases feeds the image collector the client's leases.
type imageLeases struct {
	drv    imageDriver
	gc     *imagegc.Collector
	logger hclog.Logger
	kick   chan struct{} // room for one token: recompute

	// records caches state.AllocImages by alloc ID (nil: none); owned by
	// the lease loop.
	records map[string]*state.AllocImages
}

// imageGCSwitch is implemented by a Docker driver whose plugin config can
// turn image GC off (gc { image = false }).
type imageGCSwitch interface{ ImageGCEnabled() bool }

// newImageLeases returns the image leases of a client whose catalog has a
// Docker driver offering image GC, or nil.
func newImageLeases(catalog drivers.Catalog, db *state.DB, logger hclog.Logger) *imageLeases {
	drv, ok := catalog[dockerDriverName].(imageDriver)
	if !ok {
		return nil
	}
	logger = logger.Named("image_gc")
	if sw, ok := drv.(imageGCSwitch); ok && !sw.ImageGCEnabled() {
		logger.Debug("image garbage collection disabled by the docker plugin config")
		return nil
	}
	gc, err := imagegc.NewCollector(imagegc.Config{
		Store:     drv,
		Persister: knownImagesDB{db},
		Delay:     drv.ImageDelay(),
		Logger:    logger,
	})
	if err != nil {
		// Unknown what this client leased before: remove nothing.
		logger.Error("image garbage collection disabled", "error", err)
		return nil
	}
	logger.Debug("image garbage collection enabled", "image_delay", drv.ImageDelay())
	return &imageLeases{drv: drv, gc: gc, logger: logger, kick: make(chan struct{}, 1), records: map[string]*state.AllocImages{}}
}

// kickImages asks for the leases to be recomputed. It does not block.
func (c *Client) kickImages() {
	if c.images == nil {
		return
	}
	select {
	case c.images.kick <- struct{}{}:
	default:
	}
}

// runnerUpdated is the alloc runners' StateUpdater.
func (c *Client) runnerUpdated(u *structs.Allocation) {
	c.updates.add(u)
	c.kickImages()
}

// imageLeaseLoop recomputes the leases when kicked and every
// imageLeaseResync, until ctx ends.
func (c *Client) imageLeaseLoop(ctx context.Context) {
	t := time.NewTicker(imageLeaseResync)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.images.kick:
		case <-t.C:
		}
		c.syncImageLeases(ctx)
	}
}

// syncImageLeases computes the leases from the alloc runners, persists the
// allocations' image records that changed, and hands the leases to the
// collector.
func (c *Client) syncImageLeases(ctx context.Context) {
	l := c.images
	c.allocsMu.Lock()
	ids := make(map[string]bool, len(c.allocs))
	var runners []*allocrunner.AllocRunner
	for id, e := range c.allocs {
		ids[id] = true
		if e.runner != nil {
			runners = append(runners, e.runner)
		}
	}
	c.allocsMu.Unlock()

	for id := range l.records {
		if !ids[id] {
			delete(l.records, id)
		}
	}
	for id := range ids {
		if _, ok := l.records[id]; ok {
			continue
		}
		rec, err := c.db.AllocImages(id)
		if err != nil {
			l.logger.Warn("failed to read the images of an allocation", "alloc_id", id, "error", err)
		}
		l.records[id] = rec
	}
	views := make([]allocView, 0, len(runners))
	for _, ar := range runners {
		a := ar.Alloc()
		views = append(views, allocView{alloc: a, handles: c.dockerHandleImages(a)})
	}
	resolve := func(ref string) (string, bool) {
		rctx, cancel := context.WithTimeout(ctx, imageIDTimeout)
		defer cancel()
		id, err := l.drv.ImageID(rctx, ref)
		if err != nil {
			l.logger.Trace("image not resolved", "image", ref, "error", err)
			return "", false
		}
		return id, id != ""
	}
	leases, recs := computeLeases(views, l.records, resolve)
	for _, id := range c.aheadImages() {
		leases[id] |= imagegc.LeaseAhead
	}
	if ctx.Err() != nil {
		return
	}
	for id, rec := range recs {
		old := l.records[id]
		l.records[id] = rec
		if sameRecord(old, rec) {
			continue
		}
		if err := c.db.PutAllocImages(id, rec); err != nil {
			l.logger.Warn("failed to persist the images of an allocation", "alloc_id", id, "error", err)
		}
	}
	l.gc.SetLeases(leases)
}

// dockerHandleImages returns the image IDs in the stored handles of a's
// Docker tasks, by task (tasks without a handle are left out).
func (c *Client) dockerHandleImages(a *structs.Allocation) map[string]string {
	out := map[string]string{}
	for _, t := range dockerTasks(a) {
		h, err := c.db.TaskHandle(a.ID, t.Name)
		if err != nil {
			c.images.logger.Warn("failed to read a task handle", "alloc_id", a.ID, "task", t.Name, "error", err)
			continue
		}
		if id := handleImageID(h); id != "" {
			out[t.Name] = id
		}
	}
	return out
}

// handleImageID returns the ImageID of a Docker task handle's DriverState,
// or "" (no handle, or none recorded).
func handleImageID(h *drivers.TaskHandle) string {
	if h == nil || h.TaskID == "" || len(h.DriverState) == 0 {
		return ""
	}
	var st struct{ ImageID string }
	if err := json.Unmarshal(h.DriverState, &st); err != nil {
		return ""
	}
	return st.ImageID
}

// dockerTasks returns the Docker tasks of a's group.
func dockerTasks(a *structs.Allocation) []*structs.Task {
	if a.Job == nil {
		return nil
	}
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	if tg == nil {
		return nil
	}
	var out []*structs.Task
	for _, t := range tg.Tasks {
		if t.Driver == dockerDriverName {
			out = append(out, t)
		}
	}
	return out
}

// allocView is an allocation with a runner, as lease computation sees it.
type allocView struct {
	// alloc is the runner's Alloc(): the latest server version with the
	// client's state and health decision.
	alloc *structs.Allocation
	// handles are the image IDs of the Docker tasks with a stored handle,
	// by task.
	handles map[string]string
}

// computeLeases returns the image leases of the allocations with a runner
// (views) and their updated image records; prev holds the records known so
// far by alloc ID (also of allocations without a runner, for the chains).
// resolve returns the ID of a local image ref, for a task without a handle.
// prev is not modified. See the comment at the top of this file.
func computeLeases(views []allocView, prev map[string]*state.AllocImages, resolve func(ref string) (string, bool)) (map[string]imagegc.LeaseReasons, map[string]*state.AllocImages) {
	views = slices.Clone(views)
	// Older first: a replacement reads its previous allocation's updated
	// record.
	slices.SortFunc(views, func(x, y allocView) int {
		return cmp.Or(cmp.Compare(x.alloc.CreateIndex, y.alloc.CreateIndex), cmp.Compare(x.alloc.ID, y.alloc.ID))
	})
	recs := make(map[string]*state.AllocImages, len(views))
	lookup := func(id string) *state.AllocImages {
		if r, ok := recs[id]; ok {
			return r
		}
		return prev[id]
	}
	leases := map[string]imagegc.LeaseReasons{}
	lease := func(id string, why imagegc.LeaseReasons) {
		if id != "" {
			leases[id] |= why
		}
	}
	for _, v := range views {
		a := v.alloc
		rec := copyRecord(prev[a.ID])
		for _, t := range dockerTasks(a) {
			if id := v.handles[t.Name]; id != "" {
				rec.Tasks[t.Name] = id
				continue
			}
			if a.ClientTerminal() || resolve == nil {
				continue
			}
			if ref, _ := t.Config[dockerImageKey].(string); ref != "" {
				if id, ok := resolve(ref); ok {
					rec.Tasks[t.Name] = id
				}
			}
		}
		rec.Healthy = rec.Healthy || a.DeploymentStatus.IsHealthy()
		active := chainLeaseActive(a, rec)
		if active && a.PreviousAllocation != "" {
			if p := lookup(a.PreviousAllocation); p != nil {
				add := mapValues(p.Tasks)
				if !p.Healthy {
					add = append(add, p.Chain...)
				}
				rec.Chain = sortedUnion(rec.Chain, add)
			}
		}
		recs[a.ID] = rec

		for _, id := range v.handles {
			lease(id, imagegc.LeaseRunning)
		}
		if !a.ClientTerminal() {
			why := imagegc.LeasePrepared
			if hasStarted(v) {
				why = imagegc.LeaseRunning
			}
			for _, id := range rec.Tasks {
				lease(id, why)
			}
		}
		if active {
			for _, id := range rec.Chain {
				lease(id, imagegc.LeasePrevious)
			}
		}
	}
	return leases, recs
}

// chainLeaseActive reports whether a keeps its previous versions' images:
// it is in a deployment, was never healthy, the server does not stop it,
// and it is not finished and replaced.
func chainLeaseActive(a *structs.Allocation, rec *state.AllocImages) bool {
	return a.DeploymentID != "" && !rec.Healthy && !a.ServerTerminal() &&
		!(a.ClientTerminal() && a.NextAllocation != "")
}

// hasStarted reports whether a task of v ever started.
func hasStarted(v allocView) bool {
	if len(v.handles) > 0 {
		return true
	}
	for _, st := range v.alloc.TaskStates {
		if st != nil && !st.StartedAt.IsZero() {
			return true
		}
	}
	return false
}

func copyRecord(r *state.AllocImages) *state.AllocImages {
	out := &state.AllocImages{Tasks: map[string]string{}}
	if r != nil {
		maps.Copy(out.Tasks, r.Tasks)
		out.Chain = slices.Clone(r.Chain)
		out.Healthy = r.Healthy
	}
	return out
}

// sameRecord reports whether a and b hold the same images (nil is empty).
func sameRecord(a, b *state.AllocImages) bool {
	if a == nil {
		a = &state.AllocImages{}
	}
	if b == nil {
		b = &state.AllocImages{}
	}
	return maps.Equal(a.Tasks, b.Tasks) && slices.Equal(a.Chain, b.Chain) && a.Healthy == b.Healthy
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// sortedUnion returns the sorted, deduplicated union of a and b without
// empty strings; nil when empty.
func sortedUnion(a, b []string) []string {
	out := slices.Concat(a, b)
	out = slices.DeleteFunc(out, func(s string) bool { return s == "" })
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) == 0 {
		return nil
	}
	return out
}

// knownImagesDB is the collector's Persister over the state database.
type knownImagesDB struct{ db *state.DB }

func (p knownImagesDB) LoadKnownImages() (map[string]imagegc.KnownImage, error) {
	m, err := p.db.KnownImages()
	if err != nil {
		return nil, err
	}
	out := make(map[string]imagegc.KnownImage, len(m))
	for id, k := range m {
		out[id] = imagegc.KnownImage{FirstUnleasedAt: k.FirstUnleasedAt, RetryAt: k.RetryAt}
	}
	return out, nil
}

func (p knownImagesDB) SaveKnownImages(known map[string]imagegc.KnownImage) error {
	m := make(map[string]state.KnownImage, len(known))
	for id, k := range known {
		m[id] = state.KnownImage{FirstUnleasedAt: k.FirstUnleasedAt, RetryAt: k.RetryAt}
	}
	return p.db.PutKnownImages(m)
}
