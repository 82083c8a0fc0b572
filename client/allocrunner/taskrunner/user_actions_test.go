package taskrunner

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/drivers/mock"
	"github.com/drover-project/drover/nomad/structs"
)

// TestUserRestart: Restart stops the running task and starts it again at
// once, counted in Restarts but not against the restart policy (which
// allows one attempt here); with no task running it is refused.
func TestUserRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &recordingDriver{Driver: mock.New(nil)}
		tr, _, _ := newRunner(t, &structs.Task{Name: "web", Driver: "mock", Config: map[string]any{}}, d)
		require.ErrorIs(t, tr.Restart(), ErrTaskNotRunning, "not started yet")
		go tr.Run()
		time.Sleep(time.Second)
		synctest.Wait()
		for range 3 { // more than the policy's one attempt
			require.NoError(t, tr.Restart())
			time.Sleep(time.Second)
			synctest.Wait()
		}
		st := tr.State()
		require.Equal(t, StateRunning, st.State)
		require.Equal(t, uint64(3), st.Restarts)
		require.Len(t, d.Started(), 4)
		require.Contains(t, types(st), EventRestartSignal)
		require.Equal(t, []string{"Restart Signaled", "Killing", "Terminated", "Restarting", "Started"}, types(st)[len(st.Events)-5:])
	})
}

// TestUserSignal: Signal reaches the driver and is recorded; a bad signal
// name is an error; a dead task is not running.
func TestUserSignal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := mock.New(nil)
		tr, _, _ := newRunner(t, &structs.Task{Name: "web", Driver: "mock", Config: map[string]any{}}, d)
		go tr.Run()
		time.Sleep(time.Second)
		synctest.Wait()
		require.NoError(t, tr.Signal("SIGHUP"))
		require.Equal(t, []string{"SIGHUP"}, d.Signals("a1/web"))
		require.Error(t, tr.Signal("SIGNOPE"))
		st := tr.State()
		last := st.Events[len(st.Events)-1]
		require.Equal(t, EventSignaling, last.Type)
		require.Equal(t, "SIGHUP", last.Details[DetailSignal])

		tr.Kill(nil)
		<-tr.WaitCh()
		require.ErrorIs(t, tr.Signal("SIGHUP"), ErrTaskNotRunning)
		require.ErrorIs(t, tr.Restart(), ErrTaskNotRunning)
	})
}
