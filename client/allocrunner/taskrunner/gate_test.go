package taskrunner

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/client/allocrunner/allocdir"
	"github.com/drover-project/drover/drivers/mock"
	"github.com/drover-project/drover/nomad/structs"
)

// newRunnerWith is newRunner with Config changes.
func newRunnerWith(t *testing.T, task *structs.Task, d *recordingDriver, mutate func(*Config)) *TaskRunner {
	t.Helper()
	dir, err := allocdir.New(t.TempDir(), "a1")
	require.NoError(t, err)
	require.NoError(t, dir.Build([]string{task.Name}))
	cfg := &Config{Alloc: testAlloc(task), TaskName: task.Name, Driver: d, AllocDir: dir, StateDB: newFakeDB()}
	mutate(cfg)
	tr, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		tr.Kill(nil)
		<-runDone(tr)
	})
	return tr
}

// TestGateHoldsStarts: a task whose gate is closed does not start until it
// opens; a kill while it waits ends it dead, never started.
func TestGateHoldsStarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &recordingDriver{Driver: mock.New(nil)}
		gate := NewGate()
		tr := newRunnerWith(t, &structs.Task{Name: "web", Driver: "mock", Config: map[string]any{}}, d, func(c *Config) { c.Gate = gate })
		go tr.Run()
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Empty(t, d.Started())
		require.Equal(t, StatePending, tr.State().State)

		gate.Open()
		synctest.Wait()
		require.Len(t, d.Started(), 1)
		require.Equal(t, StateRunning, tr.State().State)

		// Closed again: a running task keeps running; its restart waits.
		gate.Close()
		require.False(t, gate.IsOpen())
		require.NoError(t, tr.Restart())
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Len(t, d.Started(), 1)
		require.Equal(t, StatePending, tr.State().State)
		gate.Open()
		synctest.Wait()
		require.Len(t, d.Started(), 2)

		held := newRunnerWith(t, &structs.Task{Name: "held", Driver: "mock", Config: map[string]any{}}, d, func(c *Config) { c.Gate = NewGate() })
		go held.Run()
		synctest.Wait()
		held.Kill(nil)
		<-held.WaitCh()
		st := held.State()
		require.Equal(t, StateDead, st.State)
		require.False(t, st.Failed)
		require.True(t, st.StartedAt.IsZero())
		require.Len(t, d.Started(), 2)
	})
}

// TestEphemeralTaskIsDoneOnSuccess: an ephemeral prestart task of a system
// job that exits 0 is dead, not restarted; with KeepAfterDone its runner
// waits, and ForceRestart runs it again.
func TestEphemeralTaskIsDoneOnSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &recordingDriver{Driver: mock.New(nil)}
		task := &structs.Task{Name: "init", Driver: "mock", Config: map[string]any{"run_for": "1s"},
			Lifecycle: &structs.TaskLifecycle{Hook: "prestart"}}
		tr := newRunnerWith(t, task, d, func(c *Config) { c.KeepAfterDone = true })
		require.ErrorIs(t, tr.ForceRestart(), ErrTaskNotRunning, "not started yet")
		go tr.Run()
		time.Sleep(time.Hour)
		synctest.Wait()
		st := tr.State()
		require.Equal(t, StateDead, st.State)
		require.False(t, st.Failed)
		require.Zero(t, st.Restarts)
		require.Len(t, d.Started(), 1)
		select {
		case <-tr.WaitCh():
			t.Fatal("a kept runner returned")
		default:
		}
		require.ErrorIs(t, tr.Restart(), ErrTaskNotRunning, "Restart is for running tasks")

		require.NoError(t, tr.ForceRestart())
		time.Sleep(500 * time.Millisecond)
		synctest.Wait()
		st = tr.State()
		require.Equal(t, StateRunning, st.State)
		require.Equal(t, uint64(1), st.Restarts)
		require.Equal(t, []string{"Terminated", "Restart Signaled", "Restarting", "Started"}, types(st)[len(st.Events)-4:])
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, StateDead, tr.State().State)
		require.Len(t, d.Started(), 2)

		tr.Kill(nil)
		<-tr.WaitCh()
		require.Equal(t, StateDead, tr.State().State)
		require.False(t, tr.State().Failed)
		require.ErrorIs(t, tr.ForceRestart(), ErrTaskNotRunning, "killed")
	})
}
