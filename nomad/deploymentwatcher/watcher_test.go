package deploymentwatcher

import (
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// env is a watcher on a fake clock over a fake backend with job "web" and
// its running deployment "d1" (allocations a1 and a2, progress deadline
// t0+pd).
type env struct {
	clock   *fakeClock
	backend *fakeBackend
	watcher *Watcher
	job     *structs.Job
}

// newEnv registers the job (v0, or v1 after a stable v0 when autoRevert)
// and plans its deployment. The watcher is not enabled.
func newEnv(t *testing.T, autoRevert bool) *env {
	t.Helper()
	e := &env{clock: newFakeClock(t0)}
	e.backend = newFakeBackend(e.clock)
	if autoRevert {
		v0 := e.backend.register(t, testJob(0, "nginx:1"))
		_, err := e.backend.MarkJobStable(v0.Namespace, v0.ID, v0.Version)
		require.NoError(t, err)
	}
	e.job = e.backend.register(t, testJob(0, "nginx:2"))
	d := testDeployment(e.job)
	d.TaskGroups["web"].DesiredTotal = 2
	d.TaskGroups["web"].AutoRevert = autoRevert
	e.backend.plan(t, e.job, d, "a1", "a2")
	e.watcher = New(e.backend, nil, e.clock)
	t.Cleanup(func() { e.watcher.SetEnabled(false) })
	return e
}

func (e *env) store() *state.StateStore { return e.backend.State() }

// waitDeployment waits until deployment d1 satisfies cond.
func (e *env) waitDeployment(t *testing.T, what string, cond func(d *structs.Deployment) bool) {
	t.Helper()
	waitState(t, e.store(), what, func(ws memdb.WatchSet, snap *state.Snapshot) bool {
		return cond(deployment(ws, snap, "d1"))
	})
}

func (e *env) waitStatus(t *testing.T, status, desc string) {
	t.Helper()
	e.waitDeployment(t, "deployment "+status+": "+desc, func(d *structs.Deployment) bool {
		return d.Status == status && d.StatusDescription == desc
	})
}

// waitWatcherEvals waits until the job has n evaluations from the watcher.
func (e *env) waitWatcherEvals(t *testing.T, n int) []*structs.Evaluation {
	t.Helper()
	var out []*structs.Evaluation
	waitState(t, e.store(), "watcher evaluations", func(ws memdb.WatchSet, snap *state.Snapshot) bool {
		evals, err := snap.EvalsByJob(ws, e.job.Namespace, e.job.ID)
		require.NoError(t, err)
		out = out[:0]
		for _, ev := range evals {
			if ev.TriggeredBy == structs.EvalTriggerDeploymentWatcher {
				out = append(out, ev)
			}
		}
		return len(out) >= n
	})
	return out
}

func TestWatcher_ProgressDeadlineFiresOnAdvance(t *testing.T) {
	e := newEnv(t, false)
	e.watcher.SetEnabled(true)
	e.clock.waitTimerAt(t, at(pd))

	e.clock.Advance(pd - time.Second)
	e.clock.waitTimerAt(t, at(pd))
	require.Equal(t, structs.DeploymentStatusRunning, mustDeployment(t, e.store()).Status)

	e.clock.Advance(time.Second)
	e.waitStatus(t, structs.DeploymentStatusFailed, structs.DeploymentStatusDescriptionProgressDeadline)
	evals := e.waitWatcherEvals(t, 1)
	require.Equal(t, "d1", evals[0].DeploymentID)
	e.clock.waitNoTimers(t)
}

func TestWatcher_HealthChangeCreatesEvalAndSucceeds(t *testing.T) {
	e := newEnv(t, false)
	e.watcher.SetEnabled(true)
	e.clock.waitTimerAt(t, at(pd))

	e.clock.Advance(2 * time.Minute)
	e.backend.health(t, "a1", true)
	evals := e.waitWatcherEvals(t, 1)
	require.Equal(t, "d1", evals[0].DeploymentID)
	require.Equal(t, e.job.JobModifyIndex, evals[0].JobModifyIndex)
	e.clock.waitTimerAt(t, at(2*time.Minute+pd)) // the deadline moved with the progress

	e.clock.Advance(time.Minute)
	e.backend.health(t, "a2", true)
	e.waitStatus(t, structs.DeploymentStatusSuccessful, structs.DeploymentStatusDescriptionSuccessful)
	job, err := e.store().JobByID(nil, e.job.Namespace, e.job.ID)
	require.NoError(t, err)
	require.True(t, job.Stable, "a successful deployment marks its version stable")
	e.clock.waitNoTimers(t)
}

func TestWatcher_LeaderChangeKeepsDeadlines(t *testing.T) {
	e := newEnv(t, false)
	e.watcher.SetEnabled(true)
	e.clock.waitTimerAt(t, at(pd))
	e.clock.Advance(2 * time.Minute)
	e.backend.health(t, "a1", true)
	e.clock.waitTimerAt(t, at(2*time.Minute+pd))

	// Leadership lost: every goroutine and timer goes.
	e.watcher.SetEnabled(false)
	e.clock.waitNoTimers(t)
	e.clock.Advance(5 * time.Minute)

	// Regained: the machine is rebuilt from state with the deadline the
	// progress set, not one restarted at the new leader's clock.
	e.watcher.SetEnabled(true)
	e.clock.waitTimerAt(t, at(2*time.Minute+pd))
	e.clock.Advance(at(2*time.Minute + pd).Sub(e.clock.Now()))
	e.waitStatus(t, structs.DeploymentStatusFailed, structs.DeploymentStatusDescriptionProgressDeadline)
}

func TestWatcher_PauseFreezesDeadline(t *testing.T) {
	e := newEnv(t, false)
	e.watcher.SetEnabled(true)
	e.clock.waitTimerAt(t, at(pd))

	e.clock.Advance(time.Minute)
	e.backend.setStatus(t, "d1", structs.DeploymentStatusPaused, structs.DeploymentStatusDescriptionPaused)
	e.clock.waitNoTimers(t) // paused: no deadline to wait for
	e.clock.Advance(time.Hour)
	require.Equal(t, structs.DeploymentStatusPaused, mustDeployment(t, e.store()).Status)

	resumedAt := e.clock.Now()
	e.backend.setStatus(t, "d1", structs.DeploymentStatusRunning, structs.DeploymentStatusDescriptionRunning)
	e.clock.waitTimerAt(t, resumedAt.Add(pd)) // a fresh deadline, not the stale one
	require.True(t, resumedAt.Add(pd).Equal(mustDeployment(t, e.store()).TaskGroups["web"].RequireProgressBy))

	e.clock.Advance(pd)
	e.waitStatus(t, structs.DeploymentStatusFailed, structs.DeploymentStatusDescriptionProgressDeadline)
}

func TestWatcher_UnhealthyAutoRevertEvaluatesRevertedJob(t *testing.T) {
	e := newEnv(t, true) // v0 stable on nginx:1, deployment of v1 on nginx:2
	require.Equal(t, uint64(1), e.job.Version)
	e.watcher.SetEnabled(true)
	e.clock.waitTimerAt(t, at(pd))

	e.backend.health(t, "a1", false)
	e.waitStatus(t, structs.DeploymentStatusFailed,
		structs.DeploymentStatusDescriptionFailedAllocations+" - rolling back to job version 0")

	// The FSM registers the revert right after the status, from the same
	// raft entry.
	var job *structs.Job
	waitState(t, e.store(), "the reverted version", func(ws memdb.WatchSet, snap *state.Snapshot) bool {
		var err error
		job, err = snap.JobByID(ws, e.job.Namespace, e.job.ID)
		require.NoError(t, err)
		return job.Version == 2 // the revert is a new version
	})
	require.Equal(t, "nginx:1", job.TaskGroups[0].Tasks[0].Config["image"])
	require.False(t, job.Stable)

	evals := e.waitWatcherEvals(t, 1)
	require.Len(t, evals, 1)
	require.Equal(t, job.JobModifyIndex, evals[0].JobModifyIndex, "the evaluation is of the reverted version")
	require.Empty(t, evals[0].DeploymentID, "the reverted version gets a deployment of its own")
	require.Equal(t, structs.EvalStatusPending, evals[0].Status)
}

func TestWatcher_AutoPromotes(t *testing.T) {
	clock := newFakeClock(t0)
	b := newFakeBackend(clock)
	job := b.register(t, testJob(0, "nginx:2"))
	d := testDeployment(job)
	st := d.TaskGroups["web"]
	st.DesiredTotal, st.DesiredCanaries, st.PlacedCanaries, st.AutoPromote = 2, 1, []string{"c1"}, true
	d.StatusDescription = structs.DeploymentStatusDescriptionRunningAutoPromotion
	b.plan(t, job, d, "c1")
	w := New(b, nil, clock)
	w.SetEnabled(true)
	t.Cleanup(func() { w.SetEnabled(false) })
	clock.waitTimerAt(t, at(pd))

	clock.Advance(time.Minute)
	b.health(t, "c1", true)
	waitState(t, b.State(), "promotion", func(ws memdb.WatchSet, snap *state.Snapshot) bool {
		d := deployment(ws, snap, "d1")
		return d.TaskGroups["web"].Promoted && d.StatusDescription == structs.DeploymentStatusDescriptionRunning
	})
	// Promotion restarts the deadline; the rest of the rollout follows.
	clock.waitTimerAt(t, at(time.Minute+pd))
	require.NotEmpty(t, b.watcherEvals())
}

func TestWatcher_PicksUpNewDeployments(t *testing.T) {
	clock := newFakeClock(t0)
	b := newFakeBackend(clock)
	w := New(b, nil, clock)
	w.SetEnabled(true)
	t.Cleanup(func() { w.SetEnabled(false) })

	job := b.register(t, testJob(0, "nginx:2"))
	clock.Advance(time.Minute)
	d := testDeployment(job)
	d.TaskGroups["web"].RequireProgressBy = at(time.Minute + pd)
	b.plan(t, job, d, "a1")
	clock.waitTimerAt(t, at(time.Minute+pd))

	// A newer version: the machine stops (the scheduler cancels); it is
	// not restarted while the deployment stays active.
	b.register(t, testJob(0, "nginx:3"))
	clock.waitNoTimers(t)
	require.Equal(t, structs.DeploymentStatusRunning, mustDeployment(t, b.State()).Status)
}

func mustDeployment(t *testing.T, s *state.StateStore) *structs.Deployment {
	t.Helper()
	d, err := s.DeploymentByID(nil, "d1")
	require.NoError(t, err)
	require.NotNil(t, d)
	return d
}
