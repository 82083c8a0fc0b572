package imagewatcher

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/helper/metrics"
	"github.com/drover-project/drover/nomad/imageresolve"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// maxParallelChecks bounds the checks in flight at once.
const maxParallelChecks = 8

// Backend is what the watcher needs of the server. The server implements it
// with raft writes and its job register path.
type Backend interface {
	State() *state.StateStore
	Now() time.Time
	// Resolve resolves ref's tag once (a manifest HEAD).
	Resolve(ctx context.Context, ref imageresolve.Ref, auth *imageresolve.Auth) (string, error)
	// Created reads the created time of the image config of ref at digest
	// (zero when the config has none).
	Created(ctx context.Context, ref imageresolve.Ref, digest string, auth *imageresolve.Auth) (time.Time, error)
	// ApplyImageWatch commits an update through raft.
	ApplyImageWatch(req *structs.ImageWatchUpdateRequest) error
	// RegisterJob registers job through the normal register path,
	// enforcing modifyIndex, and returns the new version.
	RegisterJob(job *structs.Job, modifyIndex uint64, tag *structs.JobVersionTag) (uint64, error)
}

// Metrics are the watcher's counters (Prometheus names in New).
type Metrics struct {
	Checks, RegistryErrors, Updates, BadDigests *metrics.Counter
	// Unresolved counts registered images whose tag could not be resolved
	// because their registry could not be reached (counted by the
	// register path).
	Unresolved *metrics.Counter
	// Pending is the number of tasks whose new digest waits, by the gate
	// that holds it (soak, min_age, notify, approval, window), as of the
	// watcher's last pass.
	Pending *metrics.Gauge
}

// NewMetrics registers the watcher's metrics on r.
func NewMetrics(r *metrics.Registry) *Metrics {
	return &Metrics{
		Checks:         r.Counter("drover_image_checks_total", "Image tag checks (manifest HEADs) sent by the image watcher.", "registry"),
		RegistryErrors: r.Counter("drover_image_registry_errors_total", "Image tag checks that failed (registry down, 429, unknown tag).", "registry"),
		Updates:        r.Counter("drover_image_updates_total", "Job versions registered by the image watcher with a new pinned digest."),
		BadDigests:     r.Counter("drover_image_bad_digests_total", "Digests marked bad after their deployment failed."),
		Unresolved: r.Counter("drover_image_unresolved_total",
			"Docker images registered while their registry could not be reached: stored by tag, or with the current version's pin kept.", "registry"),
		Pending: r.Gauge("drover_image_updates_pending",
			"Auto-updated tasks whose tag moved to a digest that is not rolled yet, by the gate holding it (soak, min_age, notify, approval, window).", "reason"),
	}
}

// Watcher is the leader's image watcher driver: one goroutine that waits
// (for the next wake, a change of jobs or deployments, or a "check now"),
// calls Decide, and carries its decision out. Create one per leadership
// term with New and run it with Run.
type Watcher struct {
	b       Backend
	logger  hclog.Logger
	metrics *Metrics

	mem Memory

	mu      sync.Mutex
	forced  map[string]bool
	waiters []*waiter
	kick    chan struct{}
}

type waiter struct {
	keys map[string]bool
	done chan struct{}
}

// New returns a watcher; budget is the per-registry checks per minute (0:
// DefaultRegistryBudget).
func New(b Backend, logger hclog.Logger, m *Metrics, budget int) *Watcher {
	if m == nil {
		m = NewMetrics(metrics.NewRegistry())
	}
	return &Watcher{b: b, logger: logger.Named("image_watcher"), metrics: m, mem: Memory{Budget: budget},
		forced: map[string]bool{}, kick: make(chan struct{}, 1)}
}

// Run runs passes until ctx ends.
func (w *Watcher) Run(ctx context.Context) {
	for ctx.Err() == nil {
		ws := memdb.NewWatchSet()
		next, worked := w.pass(ctx, ws)
		if worked {
			continue // re-read the state the pass just changed
		}
		wait := time.Until(next)
		if wait <= 0 {
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		go func() {
			select {
			case <-w.kick:
				cancel()
			case <-wctx.Done():
			}
		}()
		_ = ws.WatchCtx(wctx)
		cancel()
	}
	w.countPending(nil) // no longer the leader's count
	w.mu.Lock()
	for _, wt := range w.waiters {
		close(wt.done)
	}
	w.waiters = nil
	w.mu.Unlock()
}

// CheckNow checks the references of job's auto-updated tasks at once (the
// soak still applies) and returns when that pass is over or ctx ends. It
// reports false when the job has no auto-updated task.
func (w *Watcher) CheckNow(ctx context.Context, ns, jobID string) (bool, error) {
	job, err := w.b.State().JobByID(nil, ns, jobID)
	if err != nil {
		return false, err
	}
	keys := map[string]bool{}
	for _, t := range TargetsOf(job, JobHistory{}) {
		keys[t.Key()] = true
	}
	if len(keys) == 0 {
		return false, nil
	}
	wt := &waiter{keys: keys, done: make(chan struct{})}
	w.mu.Lock()
	for k := range keys {
		w.forced[k] = true
	}
	w.waiters = append(w.waiters, wt)
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
	select {
	case <-wt.done:
		return true, nil
	case <-ctx.Done():
		return true, ctx.Err()
	}
}

// Kick has the watcher run a pass soon. An approval does not need it (the
// watcher watches the watch records), it only saves the watch's wake-up.
func (w *Watcher) Kick() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// gather reads the decision input from state, watching jobs, deployments
// and watch records (approvals) in ws.
func (w *Watcher) gather(ws memdb.WatchSet, now time.Time) (Input, error) {
	snap := w.b.State().Snapshot()
	in := Input{Now: now, Checks: map[string]*structs.ImageCheck{},
		Watches: map[structs.ImageWatchID]*structs.ImageWatch{}, Keep: map[structs.NamespacedID]bool{}}
	jobs, err := snap.Jobs(ws, "*")
	if err != nil {
		return in, err
	}
	if _, err := snap.Deployments(ws, "*"); err != nil {
		return in, err
	}
	for _, j := range jobs {
		ts := TargetsOf(j, JobHistory{})
		if len(ts) == 0 {
			in.Keep[structs.NamespacedID{Namespace: j.Namespace, ID: j.ID}] = j.Stop
			continue
		}
		h := JobHistory{}
		if h.Versions, err = snap.JobVersionsByID(nil, j.Namespace, j.ID); err != nil {
			return in, err
		}
		if h.Deployments, err = snap.DeploymentsByJobID(nil, j.Namespace, j.ID, false); err != nil {
			return in, err
		}
		in.Targets = append(in.Targets, TargetsOf(j, h)...)
	}
	checks, err := snap.ImageChecks(nil)
	if err != nil {
		return in, err
	}
	for _, c := range checks {
		in.Checks[c.Key] = c
	}
	watches, err := snap.ImageWatches(ws) // an approval wakes the watcher
	if err != nil {
		return in, err
	}
	for _, wt := range watches {
		in.Watches[wt.ID()] = wt
	}
	bad, err := snap.ImageBadDigests(nil)
	if err != nil {
		return in, err
	}
	in.Bad = BadByReference(bad)
	return in, nil
}

// pass runs one decision and carries it out. It returns the next wake and
// whether it changed anything (then the caller runs another pass at once).
func (w *Watcher) pass(ctx context.Context, ws memdb.WatchSet) (time.Time, bool) {
	now := w.b.Now()
	in, err := w.gather(ws, now)
	if err != nil {
		w.logger.Error("reading state", "error", err)
		return now.Add(5 * time.Second), false
	}
	w.mu.Lock()
	in.Forced = w.forced
	w.forced = map[string]bool{}
	forced := in.Forced
	w.mu.Unlock()

	d := Decide(in, &w.mem)
	w.countPending(d.Waiting)
	worked := false
	if d.Update != nil {
		if err := w.b.ApplyImageWatch(d.Update); err != nil {
			w.logger.Error("recording image watch state", "error", err)
		} else {
			worked = true
			for _, b := range d.Update.BadDigests {
				if old := in.Bad[b.Reference][b.Digest]; old == nil || !old.IsBad() {
					w.metrics.BadDigests.Inc()
				}
				w.logger.Warn("digest marked bad for its image after a deployment failed; no job on the image is rolled to it until an operator clears it",
					"image", b.Reference, "digest", b.Digest, "job", b.JobID, "version", b.JobVersion)
			}
			for _, wt := range d.Update.Watches {
				old := in.Watches[wt.ID()]
				if wt.Held != "" && (old == nil || old.Held != wt.Held || old.HeldReason != wt.HeldReason) {
					w.logger.Info("moved image tag held for an operator", "job", wt.JobID, "task", wt.Task, "digest", wt.Held, "reason", wt.HeldReason)
				}
				if wt.Assumed != "" && (old == nil || old.Assumed != wt.Assumed || old.AssumedVersion != wt.AssumedVersion) {
					w.logger.Info("unpinned image: taking the tag's digest as what the nodes pulled; a later move of the tag rolls",
						"job", wt.JobID, "task", wt.Task, "version", wt.AssumedVersion, "digest", wt.Assumed)
				}
			}
		}
	}
	if len(d.Checks) > 0 {
		w.runChecks(ctx, d.Checks, in.Checks)
		worked = true
	}
	for _, r := range d.Rolls {
		w.roll(in, r)
		worked = true
	}
	w.release(forced, d.Checks)
	return d.NextWake, worked
}

// runChecks resolves the checks concurrently and records their results in
// one raft entry (as observations: the state store folds each into its
// record, so a registration's newer answer is never overwritten).
// With NeedCreated, a digest whose created time prev does not hold yet
// has its image config read too (a failure there records the digest
// without it: the min age waits for a later check).
func (w *Watcher) runChecks(ctx context.Context, checks []Check, prev map[string]*structs.ImageCheck) {
	results := make([]*structs.ImageObservation, len(checks))
	sem := make(chan struct{}, maxParallelChecks)
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			digest, err := w.b.Resolve(ctx, c.Ref, c.Auth)
			now := w.b.Now()
			w.metrics.Checks.WithLabels(c.Registry).Inc()
			if err != nil {
				w.metrics.RegistryErrors.WithLabels(c.Registry).Inc()
				w.logger.Warn("image check failed; nothing changes", "image", c.Ref.TagRef(), "error", err)
				var re *imageresolve.RegistryError
				if errors.As(err, &re) && (re.StatusCode == 429 || re.RetryAfter > 0) {
					w.mu.Lock()
					w.mem.HoldRegistry(c.Registry, now, re.RetryAfter)
					w.mu.Unlock()
				}
			}
			results[i] = Observation(c, digest, err, now, true)
			if err == nil && c.NeedCreated {
				if p := prev[c.Key]; p != nil && p.Digest == digest && p.Created != 0 {
					return
				}
				created, cerr := w.b.Created(ctx, c.Ref, digest, c.Auth)
				w.metrics.Checks.WithLabels(c.Registry).Inc()
				if cerr != nil {
					w.metrics.RegistryErrors.WithLabels(c.Registry).Inc()
					w.logger.Warn("reading the image's created time failed; auto_update_min_age waits for a later check", "image", c.Ref.Pinned(digest), "error", cerr)
					return
				}
				if created.IsZero() {
					w.logger.Warn("the image config has no created time; auto_update_min_age holds it", "image", c.Ref.Pinned(digest))
					return
				}
				// 0 means "not read": an image created at the epoch
				// (reproducible builds) is stored as 1ns after it.
				results[i].Created = max(created.UnixNano(), 1)
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return // leadership lost mid-check: record nothing
	}
	if err := w.b.ApplyImageWatch(&structs.ImageWatchUpdateRequest{Observations: results}); err != nil {
		w.logger.Error("recording image checks", "error", err)
	}
}

// roll registers a new version of the roll's job with the new pins.
func (w *Watcher) roll(in Input, r Roll) {
	jid := structs.NamespacedID{Namespace: r.Namespace, ID: r.JobID}
	job, err := w.b.State().JobByID(nil, r.Namespace, r.JobID)
	if err != nil || job == nil || job.JobModifyIndex != r.JobModifyIndex {
		return // changed since the decision: the next pass decides again
	}
	next := job
	desc := "image watcher:"
	for i, c := range r.Changes {
		var ok bool
		if next, ok = imageresolve.SetImage(next, c.Group, c.Task, c.Ref.Pinned(c.To)); !ok {
			return
		}
		if i > 0 {
			desc += ";"
		}
		desc += fmt.Sprintf(" task %q: %s moved from %s to %s", c.Task, c.Ref.TagRef(), orNone(c.From), c.To)
	}
	now := w.b.Now()
	tag := &structs.JobVersionTag{Name: "image-update-" + shortDigest(r.Changes[0].To), Description: desc, TaggedTime: now.UnixNano()}
	version, err := w.b.RegisterJob(next, r.JobModifyIndex, tag)
	if err != nil {
		w.logger.Error("registering the new pinned version failed", "job", r.JobID, "error", err)
		w.mem.HoldJob(jid, now)
		return
	}
	w.metrics.Updates.Inc()
	w.logger.Info("rolled a moved image tag", "job", r.JobID, "version", version, "reason", desc)
	upd := &structs.ImageWatchUpdateRequest{}
	for _, c := range r.Changes {
		id := structs.ImageWatchID{Namespace: r.Namespace, JobID: r.JobID, Group: c.Group, Task: c.Task}
		wt := in.Watches[id].Copy()
		if wt == nil {
			wt = &structs.ImageWatch{Namespace: id.Namespace, JobID: id.JobID, Group: id.Group, Task: id.Task,
				Key: c.Key}
		}
		wt.LastRoll = &structs.ImageRoll{From: c.From, To: c.To, JobVersion: version, Time: now.UnixNano()}
		wt.Held, wt.HeldReason = "", ""
		upd.Watches = append(upd.Watches, wt)
	}
	if err := w.b.ApplyImageWatch(upd); err != nil {
		w.logger.Error("recording the roll", "error", err)
	}
}

// countPending sets the pending gauge from the pass's waiting tasks.
func (w *Watcher) countPending(ws []Waiting) {
	n := map[string]int{}
	for _, x := range ws {
		n[x.Reason]++
	}
	for _, r := range []string{WaitSoak, WaitMinAge, WaitNotify, WaitApproval, WaitWindow} {
		w.metrics.Pending.WithLabels(r).Set(float64(n[r]))
	}
}

// release wakes CheckNow callers whose keys were all checked (or could not
// be: the registry is held off) in this pass.
func (w *Watcher) release(forced map[string]bool, done []Check) {
	if len(forced) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	kept := w.waiters[:0]
	for _, wt := range w.waiters {
		served := true
		for k := range wt.keys {
			if !forced[k] {
				served = false
			}
		}
		if served {
			close(wt.done)
		} else {
			kept = append(kept, wt)
		}
	}
	w.waiters = kept
}

func shortDigest(d string) string {
	if i := len("sha256:"); len(d) >= i+12 {
		return d[i : i+12]
	}
	return d
}

func orNone(d string) string {
	if d == "" {
		return "(unpinned)"
	}
	return d
}
