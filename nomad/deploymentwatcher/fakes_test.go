package deploymentwatcher

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/fsm"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// fakeClock is a Clock whose time moves only when the test advances it.
// Timers fire, each in its own goroutine, when Advance reaches them.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  map[*fakeTimer]struct{}
	changed chan struct{} // closed and replaced whenever timers change
}

type fakeTimer struct {
	c  *fakeClock
	at time.Time
	f  func()
}

func newFakeClock(now time.Time) *fakeClock {
	return &fakeClock{now: now, timers: map[*fakeTimer]struct{}{}, changed: make(chan struct{})}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	if d <= 0 {
		go f()
		return t
	}
	c.timers[t] = struct{}{}
	c.notifyLocked()
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	_, ok := t.c.timers[t]
	if ok {
		delete(t.c.timers, t)
		t.c.notifyLocked()
	}
	return ok
}

func (c *fakeClock) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Advance moves the time by d and fires the timers it reaches.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []func()
	for t := range c.timers {
		if !t.at.After(c.now) {
			due = append(due, t.f)
			delete(c.timers, t)
		}
	}
	c.notifyLocked()
	c.mu.Unlock()
	for _, f := range due {
		go f()
	}
}

// waitTimers waits until the pending timers (their times, sorted) satisfy
// cond. The real-time bound only turns a hang into a failure.
func (c *fakeClock) waitTimers(t *testing.T, what string, cond func(ats []time.Time) bool) {
	t.Helper()
	bound := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		var ats []time.Time
		for tm := range c.timers {
			ats = append(ats, tm.at)
		}
		ch := c.changed
		c.mu.Unlock()
		sort.Slice(ats, func(i, j int) bool { return ats[i].Before(ats[j]) })
		if cond(ats) {
			return
		}
		select {
		case <-ch:
		case <-bound:
			t.Fatalf("timed out waiting for %s; pending timers %v", what, ats)
		}
	}
}

// waitTimerAt waits until a timer is armed for exactly when.
func (c *fakeClock) waitTimerAt(t *testing.T, when time.Time) {
	t.Helper()
	c.waitTimers(t, fmt.Sprintf("a timer at %v", when), func(ats []time.Time) bool {
		for _, a := range ats {
			if a.Equal(when) {
				return true
			}
		}
		return false
	})
}

// waitNoTimers waits until no timer is pending.
func (c *fakeClock) waitNoTimers(t *testing.T) {
	t.Helper()
	c.waitTimers(t, "no timers", func(ats []time.Time) bool { return len(ats) == 0 })
}

// fakeBackend is a Backend backed by the real FSM and state store: every
// request is encoded and applied as a raft log entry would be. Test setup
// writes go through it too, so indexes grow as in a cluster.
type fakeBackend struct {
	fsm   *fsm.FSM
	clock *fakeClock

	mu    sync.Mutex // serialises applies
	index uint64

	evMu  sync.Mutex
	evals []*structs.Evaluation // every evaluation stored, in order
}

func newFakeBackend(clock *fakeClock) *fakeBackend {
	b := &fakeBackend{fsm: fsm.New(state.NewStateStore(), hclog.NewNullLogger()), clock: clock}
	b.fsm.SetEvalsHook(func(evals []*structs.Evaluation) {
		b.evMu.Lock()
		defer b.evMu.Unlock()
		b.evals = append(b.evals, evals...)
	})
	return b
}

func (b *fakeBackend) apply(mt structs.MessageType, msg any) (uint64, error) {
	buf, err := structs.Encode(mt, msg)
	if err != nil {
		return 0, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.index++
	if resp, ok := b.fsm.Apply(&raft.Log{Index: b.index, Data: buf}).(error); ok {
		return b.index, resp
	}
	return b.index, nil
}

func (b *fakeBackend) UpdateDeploymentStatus(req *structs.DeploymentStatusUpdateRequest) (uint64, error) {
	return b.apply(structs.DeploymentStatusUpdateRequestType, req)
}

func (b *fakeBackend) PromoteDeployment(req *structs.DeploymentPromoteRequest) (uint64, error) {
	return b.apply(structs.DeploymentPromoteRequestType, req)
}

func (b *fakeBackend) CreateEvals(evals []*structs.Evaluation) (uint64, error) {
	return b.apply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: evals})
}

func (b *fakeBackend) MarkJobStable(ns, jobID string, version uint64) (uint64, error) {
	return b.apply(structs.JobStabilityRequestType,
		&structs.JobStabilityRequest{Namespace: ns, JobID: jobID, Version: version, Stable: true})
}

func (b *fakeBackend) State() *state.StateStore { return b.fsm.State() }

func (b *fakeBackend) Now() time.Time { return b.clock.Now() }

// Test-side writes, as the rest of the server would make them.

// register registers job and returns the stored version.
func (b *fakeBackend) register(t *testing.T, job *structs.Job) *structs.Job {
	t.Helper()
	_, err := b.apply(structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job, SubmitTime: b.clock.Now().UnixNano()})
	require.NoError(t, err)
	stored, err := b.State().JobByID(nil, job.Namespace, job.ID)
	require.NoError(t, err)
	return stored
}

// plan commits a plan placing one allocation per id for deployment d.
func (b *fakeBackend) plan(t *testing.T, job *structs.Job, d *structs.Deployment, ids ...string) {
	t.Helper()
	var allocs []*structs.Allocation
	for _, id := range ids {
		a := testAlloc(id, unknown)
		a.DeploymentID, a.JobVersion, a.NodeID = d.ID, job.Version, "node-"+id
		a.ClientStatus = structs.AllocClientStatusPending
		allocs = append(allocs, a)
	}
	_, err := b.apply(structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{
		Job: job, AllocsUpdated: allocs, Deployment: d, UpdatedAt: b.clock.Now().UnixNano(),
	})
	require.NoError(t, err)
}

// health reports, as a client would, alloc id healthy or not, now.
func (b *fakeBackend) health(t *testing.T, id string, h bool) {
	t.Helper()
	now := b.clock.Now()
	_, err := b.apply(structs.AllocClientUpdateRequestType, &structs.AllocClientUpdateRequest{
		Allocs: []*structs.Allocation{{ID: id, ClientStatus: structs.AllocClientStatusRunning,
			DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: &h, Timestamp: now}}},
		UpdatedAt: now.UnixNano(),
	})
	require.NoError(t, err)
}

// setStatus pauses or resumes deployment id, as the endpoint does.
func (b *fakeBackend) setStatus(t *testing.T, id, status, desc string) {
	t.Helper()
	_, err := b.UpdateDeploymentStatus(&structs.DeploymentStatusUpdateRequest{
		Update:    &structs.DeploymentStatusUpdate{DeploymentID: id, Status: status, StatusDescription: desc},
		UpdatedAt: b.clock.Now().UnixNano(),
	})
	require.NoError(t, err)
}

// watcherEvals returns the evaluations the deployment watcher created.
func (b *fakeBackend) watcherEvals() []*structs.Evaluation {
	b.evMu.Lock()
	defer b.evMu.Unlock()
	var out []*structs.Evaluation
	for _, e := range b.evals {
		if e.TriggeredBy == structs.EvalTriggerDeploymentWatcher {
			out = append(out, e)
		}
	}
	return out
}

// waitState waits until cond, which must read through ws, holds in the
// store. The real-time bound only turns a hang into a failure.
func waitState(t *testing.T, s *state.StateStore, what string, cond func(ws memdb.WatchSet, snap *state.Snapshot) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var index uint64
	for {
		var ok bool
		_, idx, err := s.BlockingQuery(ctx, index, func(ws memdb.WatchSet, snap *state.Snapshot) (any, uint64, error) {
			ok = cond(ws, snap)
			if ok {
				// One raft entry may commit in several transactions at
				// the same index: answer now, whatever the index.
				return nil, max(snap.LatestIndex(), index+1), nil
			}
			return nil, snap.LatestIndex(), nil
		})
		require.NoError(t, err)
		if ok {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("timed out waiting for %s", what)
		}
		index = idx
	}
}

// deployment reads deployment id through ws.
func deployment(ws memdb.WatchSet, snap *state.Snapshot, id string) *structs.Deployment {
	d, err := snap.DeploymentByID(ws, id)
	if err != nil {
		panic(err)
	}
	return d
}
