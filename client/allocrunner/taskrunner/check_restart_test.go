package taskrunner

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/drivers/mock"
	"github.com/drover-project/drover/nomad/structs"
)

// TestRestartUnhealthy: a check_restart restart stops the task and goes
// through the restart policy (one attempt, 10s delay here): the first is
// a restart after the delay, the second fails the task. With no task
// running it is refused.
func TestRestartUnhealthy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &recordingDriver{Driver: mock.New(nil)}
		tr, _, _ := newRunner(t, &structs.Task{Name: "web", Driver: "mock", Config: map[string]any{}}, d)
		const reason = `health check: check "db" unhealthy`
		require.ErrorIs(t, tr.RestartUnhealthy(reason), ErrTaskNotRunning, "not started yet")
		go tr.Run()
		time.Sleep(time.Second)
		synctest.Wait()

		require.NoError(t, tr.RestartUnhealthy(reason))
		synctest.Wait()
		st := tr.State()
		require.Equal(t, StatePending, st.State, "waiting out the policy's delay")
		require.Equal(t, []string{"Restart Signaled", "Killing", "Terminated", "Restarting"}, types(st)[len(st.Events)-4:])
		signaled := st.Events[len(st.Events)-4]
		require.Equal(t, reason, signaled.DisplayMessage)
		require.Equal(t, reason, signaled.Details[DetailRestartReason])
		require.Equal(t, "Task restarting in 10s", st.Events[len(st.Events)-1].DisplayMessage)

		time.Sleep(10 * time.Second)
		synctest.Wait()
		require.Equal(t, StateRunning, tr.State().State)
		require.Len(t, d.Started(), 2)

		require.NoError(t, tr.RestartUnhealthy(reason))
		<-tr.WaitCh()
		st = tr.State()
		require.Equal(t, StateDead, st.State)
		require.True(t, st.Failed, "the restart policy's one attempt is used up")
		require.Equal(t, uint64(1), st.Restarts)
		last := st.Events[len(st.Events)-1]
		require.Equal(t, EventNotRestarting, last.Type)
		require.Equal(t, `Exceeded allowed attempts 1 in interval 1h0m0s and mode is "fail"`, last.DisplayMessage)
	})
}

// TestUserRestartAfterUnhealthyIsTheUsers: a user restart after a
// check_restart one is not mistaken for another health restart.
func TestUserRestartAfterUnhealthyIsTheUsers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &recordingDriver{Driver: mock.New(nil)}
		tr, _, _ := newRunner(t, &structs.Task{Name: "web", Driver: "mock", Config: map[string]any{}}, d)
		go tr.Run()
		time.Sleep(time.Second)
		synctest.Wait()
		require.NoError(t, tr.RestartUnhealthy("health check: check \"db\" unhealthy"))
		time.Sleep(11 * time.Second)
		synctest.Wait()
		require.NoError(t, tr.Restart())
		time.Sleep(time.Second)
		synctest.Wait()
		st := tr.State()
		require.Equal(t, StateRunning, st.State, "a user restart does not count against the policy")
		require.Equal(t, uint64(2), st.Restarts)
		require.Equal(t, "User requested task to restart", st.Events[len(st.Events)-5].DisplayMessage)
	})
}
