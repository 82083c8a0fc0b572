package mock

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/drivers"
)

func newTaskConfig(t *testing.T, config map[string]any) *drivers.TaskConfig {
	dir := t.TempDir()
	return &drivers.TaskConfig{
		ID:         "alloc1/web",
		AllocID:    "alloc1",
		TaskName:   "web",
		Config:     config,
		TaskDir:    filepath.Join(dir, "web"),
		StdoutPath: filepath.Join(dir, "alloc", "logs", "web.stdout.0"),
		StderrPath: filepath.Join(dir, "alloc", "logs", "web.stderr.0"),
	}
}

// waitResult blocks until the task exits (fake time advances in a bubble).
func waitResult(t *testing.T, d *Driver, id string) *drivers.ExitResult {
	t.Helper()
	ch, err := d.WaitTask(context.Background(), id)
	require.NoError(t, err)
	res := <-ch
	require.NotNil(t, res)
	_, open := <-ch
	require.False(t, open)
	return res
}

func TestRunForAndExitCode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := New(nil)
		cfg := newTaskConfig(t, map[string]any{"run_for": "50ms", "exit_code": 3.0})
		began := time.Now()
		h, err := d.StartTask(cfg)
		require.NoError(t, err)
		require.Equal(t, Name, h.Driver)
		require.Equal(t, began, h.StartedAt)

		st, err := d.InspectTask(cfg.ID)
		require.NoError(t, err)
		require.Equal(t, drivers.TaskStateRunning, st.State)

		res := waitResult(t, d, cfg.ID)
		require.Equal(t, 50*time.Millisecond, time.Since(began))
		require.Equal(t, 3, res.ExitCode)
		require.Zero(t, res.Signal)

		st, err = d.InspectTask(cfg.ID)
		require.NoError(t, err)
		require.Equal(t, drivers.TaskStateExited, st.State)
		require.Equal(t, 3, st.ExitResult.ExitCode)
		require.Equal(t, began.Add(50*time.Millisecond), st.CompletedAt)
		require.NoError(t, d.DestroyTask(cfg.ID, false))
	})
}

func TestRunForNanosecondsSucceeds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := New(nil)
		cfg := newTaskConfig(t, map[string]any{"run_for": int(20 * time.Millisecond)})
		_, err := d.StartTask(cfg)
		require.NoError(t, err)
		require.True(t, waitResult(t, d, cfg.ID).Successful())
	})
}

func TestRunsUntilStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := New(nil)
		cfg := newTaskConfig(t, nil)
		_, err := d.StartTask(cfg)
		require.NoError(t, err)
		time.Sleep(time.Hour)
		st, err := d.InspectTask(cfg.ID)
		require.NoError(t, err)
		require.Equal(t, drivers.TaskStateRunning, st.State)

		began := time.Now()
		require.NoError(t, d.StopTask(cfg.ID, 5*time.Second, ""))
		require.Zero(t, time.Since(began))
		res := waitResult(t, d, cfg.ID)
		require.Equal(t, int(syscall.SIGTERM), res.Signal)
		require.Equal(t, 143, res.ExitCode)
		require.NoError(t, d.StopTask(cfg.ID, time.Second, "SIGINT"), "stopping an exited task")
	})
}

func TestStartErrorAndBlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := New(nil)
		cfg := newTaskConfig(t, map[string]any{"start_error": "boom", "start_error_recoverable": true, "start_block_for": "30ms"})
		began := time.Now()
		_, err := d.StartTask(cfg)
		require.Equal(t, 30*time.Millisecond, time.Since(began))
		require.EqualError(t, err, "boom")
		require.True(t, drivers.IsRecoverable(err))
		_, err = d.InspectTask(cfg.ID)
		require.ErrorIs(t, err, drivers.ErrTaskNotFound)

		cfg.Config = map[string]any{"start_error": "bad", "start_error_recoverable": false}
		_, err = d.StartTask(cfg)
		require.EqualError(t, err, "bad")
		require.False(t, drivers.IsRecoverable(err))

		cfg.Config = map[string]any{"start_block_for": "1s"}
		began = time.Now()
		_, err = d.StartTask(cfg)
		require.NoError(t, err)
		require.Equal(t, time.Second, time.Since(began))
		_, err = d.StartTask(cfg)
		require.ErrorIs(t, err, drivers.ErrTaskExists)
		require.NoError(t, d.DestroyTask(cfg.ID, true))
	})
}

func TestKillAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := New(nil)
		// The task exits 50ms after the signal, within the timeout.
		cfg := newTaskConfig(t, map[string]any{"kill_after": "50ms"})
		_, err := d.StartTask(cfg)
		require.NoError(t, err)
		began := time.Now()
		require.NoError(t, d.StopTask(cfg.ID, time.Second, "SIGINT"))
		require.Equal(t, 50*time.Millisecond, time.Since(began))
		require.Equal(t, int(syscall.SIGINT), waitResult(t, d, cfg.ID).Signal)
		require.NoError(t, d.DestroyTask(cfg.ID, false))

		// The timeout comes first: SIGKILL.
		cfg.Config = map[string]any{"kill_after": "5s"}
		_, err = d.StartTask(cfg)
		require.NoError(t, err)
		began = time.Now()
		require.NoError(t, d.StopTask(cfg.ID, 100*time.Millisecond, "SIGTERM"))
		require.Equal(t, 100*time.Millisecond, time.Since(began))
		res := waitResult(t, d, cfg.ID)
		require.Equal(t, int(syscall.SIGKILL), res.Signal)
		require.Equal(t, 137, res.ExitCode)
		require.NoError(t, d.DestroyTask(cfg.ID, false))

		// run_for ends the task before kill_after does.
		cfg.Config = map[string]any{"kill_after": "5s", "run_for": "200ms", "exit_code": 4}
		_, err = d.StartTask(cfg)
		require.NoError(t, err)
		time.Sleep(100 * time.Millisecond)
		require.NoError(t, d.StopTask(cfg.ID, time.Minute, ""))
		require.Equal(t, 4, waitResult(t, d, cfg.ID).ExitCode)

		// A forced destroy ignores kill_after.
		require.NoError(t, d.DestroyTask(cfg.ID, false))
		_, err = d.StartTask(cfg)
		require.NoError(t, err)
		began = time.Now()
		require.NoError(t, d.DestroyTask(cfg.ID, true))
		require.Zero(t, time.Since(began))
	})
}

func TestStdout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := New(nil)
		cfg := newTaskConfig(t, map[string]any{"stdout_string": "hello\n"})
		_, err := d.StartTask(cfg)
		require.NoError(t, err)
		requireFile(t, cfg.StdoutPath, "hello\n")
		require.NoError(t, d.DestroyTask(cfg.ID, true))

		cfg = newTaskConfig(t, map[string]any{"stdout_string": "x", "stdout_repeat": 3, "stdout_repeat_duration": "10ms"})
		_, err = d.StartTask(cfg)
		require.NoError(t, err)
		requireFile(t, cfg.StdoutPath, "x")
		time.Sleep(25 * time.Millisecond)
		requireFile(t, cfg.StdoutPath, "xxx")
		time.Sleep(time.Second)
		requireFile(t, cfg.StdoutPath, "xxxx")
		require.NoError(t, d.DestroyTask(cfg.ID, true))

		cfg = newTaskConfig(t, map[string]any{"stdout_string": "y", "stdout_repeat": 2})
		_, err = d.StartTask(cfg)
		require.NoError(t, err)
		synctest.Wait()
		requireFile(t, cfg.StdoutPath, "yyy")
		require.NoError(t, d.DestroyTask(cfg.ID, true))
	})
}

func requireFile(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, want, string(b))
}

func TestPrepareProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := New(nil)
		cfg := newTaskConfig(t, map[string]any{"prepare_for": "350ms"})
		var got []drivers.PrepareProgress
		began := time.Now()
		require.NoError(t, d.PrepareTask(context.Background(), cfg, func(p drivers.PrepareProgress) { got = append(got, p) }))
		require.Equal(t, 350*time.Millisecond, time.Since(began))
		require.Len(t, got, 4)
		for i, want := range []int64{prepareBytesTotal * 100 / 350, prepareBytesTotal * 200 / 350, prepareBytesTotal * 300 / 350, prepareBytesTotal} {
			require.Equal(t, int64(prepareBytesTotal), got[i].BytesTotal)
			require.Equal(t, want, got[i].BytesDone, "report %d", i)
		}
		require.Equal(t, "Preparing mock task: 28%", got[0].Message)
		require.InDelta(t, 100, got[3].Percent(), 0.001)
		require.Equal(t, 1, d.Prepared(cfg.ID))

		// Without prepare_for it is instant; progress may be nil.
		require.NoError(t, d.PrepareTask(context.Background(), newTaskConfig(t, nil), nil))
		require.Equal(t, 2, d.Prepared(cfg.ID))
	})
}

func TestPrepareErrorAndCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := New(nil)
		cfg := newTaskConfig(t, map[string]any{"prepare_for": "200ms", "prepare_error": "manifest unknown"})
		var last drivers.PrepareProgress
		began := time.Now()
		err := d.PrepareTask(context.Background(), cfg, func(p drivers.PrepareProgress) { last = p })
		require.ErrorContains(t, err, "manifest unknown")
		require.Equal(t, 200*time.Millisecond, time.Since(began))
		require.Less(t, last.BytesDone, last.BytesTotal)

		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		cfg.Config = map[string]any{"prepare_for": "1h"}
		err = d.PrepareTask(ctx, cfg, nil)
		require.ErrorIs(t, err, context.DeadlineExceeded)

		cfg.Config = map[string]any{"prepare_for": "soon"}
		require.ErrorContains(t, d.PrepareTask(context.Background(), cfg, nil), "prepare_for must be a duration")
	})
}

// roundTrip passes a handle through JSON, as the client's state DB does.
func roundTrip(t *testing.T, h *drivers.TaskHandle) *drivers.TaskHandle {
	b, err := json.Marshal(h)
	require.NoError(t, err)
	var out drivers.TaskHandle
	require.NoError(t, json.Unmarshal(b, &out))
	return &out
}

func TestRecoverKeepsRemainingRunFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := New(nil)
		cfg := newTaskConfig(t, map[string]any{"run_for": "100ms", "exit_code": 2})
		began := time.Now()
		h, err := a.StartTask(cfg)
		require.NoError(t, err)
		time.Sleep(60 * time.Millisecond)

		b := New(nil) // the restarted client
		require.NoError(t, b.RecoverTask(roundTrip(t, h)))
		require.NoError(t, b.RecoverTask(h), "recovering twice is harmless")
		st, err := b.InspectTask(cfg.ID)
		require.NoError(t, err)
		require.Equal(t, drivers.TaskStateRunning, st.State)
		require.True(t, st.StartedAt.Equal(began))

		res := waitResult(t, b, cfg.ID)
		require.Equal(t, 100*time.Millisecond, time.Since(began))
		require.Equal(t, 2, res.ExitCode)
		waitResult(t, a, cfg.ID)

		// Recovered after run_for elapsed: exited at once, at the right time.
		c := New(nil)
		require.NoError(t, c.RecoverTask(roundTrip(t, h)))
		st, err = c.InspectTask(cfg.ID)
		require.NoError(t, err)
		require.Equal(t, drivers.TaskStateExited, st.State)
		require.True(t, st.CompletedAt.Equal(began.Add(100*time.Millisecond)))
		require.Equal(t, 2, waitResult(t, c, cfg.ID).ExitCode)
	})
}

func TestRecoverUntilStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := New(nil)
		cfg := newTaskConfig(t, map[string]any{})
		h, err := a.StartTask(cfg)
		require.NoError(t, err)
		time.Sleep(time.Hour)
		b := New(nil)
		require.NoError(t, b.RecoverTask(roundTrip(t, h)))
		require.NoError(t, b.StopTask(cfg.ID, time.Second, "SIGTERM"))
		require.Equal(t, int(syscall.SIGTERM), waitResult(t, b, cfg.ID).Signal)
		require.NoError(t, a.DestroyTask(cfg.ID, true))

		cfg.Config = map[string]any{"recover_error": "container gone"}
		h, err = a.StartTask(cfg)
		require.NoError(t, err)
		err = New(nil).RecoverTask(h)
		require.ErrorIs(t, err, drivers.ErrTaskNotFound)
		require.ErrorContains(t, err, "container gone")
		require.NoError(t, a.DestroyTask(cfg.ID, true))

		h.DriverState = []byte("nope")
		require.ErrorContains(t, New(nil).RecoverTask(h), "decoding driver state")
	})
}

func TestSignalTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := New(nil)
		cfg := newTaskConfig(t, nil)
		_, err := d.StartTask(cfg)
		require.NoError(t, err)
		require.NoError(t, d.SignalTask(cfg.ID, "SIGUSR1"))
		require.NoError(t, d.SignalTask(cfg.ID, "hup"))
		require.ErrorContains(t, d.SignalTask(cfg.ID, "SIGFOO"), "unknown signal")
		require.Equal(t, []string{"SIGUSR1", "SIGHUP"}, d.Signals(cfg.ID))
		st, err := d.InspectTask(cfg.ID)
		require.NoError(t, err)
		require.Equal(t, drivers.TaskStateRunning, st.State)

		require.NoError(t, d.SignalTask(cfg.ID, "SIGKILL"))
		require.Equal(t, int(syscall.SIGKILL), waitResult(t, d, cfg.ID).Signal)
		require.Error(t, d.SignalTask(cfg.ID, "SIGUSR1"))
	})
}

func TestDestroyAndNotFound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := New(nil)
		cfg := newTaskConfig(t, nil)
		_, err := d.StartTask(cfg)
		require.NoError(t, err)
		require.ErrorContains(t, d.DestroyTask(cfg.ID, false), "still running")
		require.NoError(t, d.DestroyTask(cfg.ID, true))
		_, err = d.InspectTask(cfg.ID)
		require.ErrorIs(t, err, drivers.ErrTaskNotFound)
		_, err = d.WaitTask(context.Background(), cfg.ID)
		require.ErrorIs(t, err, drivers.ErrTaskNotFound)
		require.ErrorIs(t, d.StopTask(cfg.ID, 0, ""), drivers.ErrTaskNotFound)
		require.ErrorIs(t, d.SignalTask(cfg.ID, "SIGINT"), drivers.ErrTaskNotFound)
		require.ErrorIs(t, d.DestroyTask(cfg.ID, false), drivers.ErrTaskNotFound)
	})
}

func TestWaitTaskCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := New(nil)
		cfg := newTaskConfig(t, nil)
		_, err := d.StartTask(cfg)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		ch, err := d.WaitTask(ctx, cfg.ID)
		require.NoError(t, err)
		cancel()
		_, ok := <-ch
		require.False(t, ok)
		require.NoError(t, d.DestroyTask(cfg.ID, true))
	})
}

func TestValidateTaskConfig(t *testing.T) {
	d := New(nil)
	require.NoError(t, d.ValidateTaskConfig(nil))
	require.NoError(t, d.ValidateTaskConfig(map[string]any{
		"run_for": "1s", "exit_code": 1, "start_error": "x", "start_error_recoverable": true,
		"start_block_for": 1e6, "prepare_for": "1s", "prepare_error": "y", "kill_after": "2s",
		"stdout_string": "z", "stdout_repeat": 2.0, "stdout_repeat_duration": "1ms", "recover_error": "",
	}))
	for name, tc := range map[string]struct {
		config map[string]any
		want   string
	}{
		"run_for string":  {map[string]any{"run_for": "ten"}, "run_for must be a duration"},
		"run_for type":    {map[string]any{"run_for": true}, "run_for must be a duration string"},
		"run_for sign":    {map[string]any{"run_for": "-1s"}, "run_for must not be negative"},
		"exit_code float": {map[string]any{"exit_code": 1.5}, "exit_code must be an integer"},
		"exit_code range": {map[string]any{"exit_code": 300}, "exit_code must be between 0 and 255"},
		"recoverable":     {map[string]any{"start_error_recoverable": "yes"}, "start_error_recoverable must be a bool"},
		"start_error":     {map[string]any{"start_error": 1}, "start_error must be a string"},
		"repeat":          {map[string]any{"stdout_repeat": -1}, "stdout_repeat must not be negative"},
		"unknown":         {map[string]any{"run_forr": "1s"}, "run_forr is not a known option"},
	} {
		t.Run(name, func(t *testing.T) {
			require.ErrorContains(t, d.ValidateTaskConfig(tc.config), tc.want)
		})
	}
	// Every problem is listed.
	err := d.ValidateTaskConfig(map[string]any{"run_for": "x", "exit_code": "y"})
	require.Equal(t, 2, strings.Count(err.Error(), "\n")+1)
}

func TestDisabled(t *testing.T) {
	d := New(nil)
	fp := d.Fingerprint(context.Background())
	require.True(t, fp.Detected)
	require.True(t, fp.Healthy)
	require.NoError(t, d.SetConfig(map[string]any{"enabled": false}))
	fp = d.Fingerprint(context.Background())
	require.True(t, fp.Detected)
	require.False(t, fp.Healthy)
	require.Equal(t, "disabled", fp.HealthDescription)
	_, err := d.StartTask(newTaskConfig(t, nil))
	require.ErrorIs(t, err, drivers.ErrDisabled)
	require.Error(t, d.SetConfig(map[string]any{"enable": true}))
}

// Under CompatName a task without run_for exits with exit_code once its
// stdout (and every repeat) is written; with run_for it runs that long,
// as under Name. Recovery of a finished compat task reports it exited.
func TestCompatExitsWhenWritten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := NewCompat(nil)
		require.Equal(t, CompatName, d.Name())
		require.Equal(t, "1", d.Fingerprint(context.Background()).Attributes["driver.mock_driver"])

		cfg := newTaskConfig(t, map[string]any{"stdout_string": "hello\n", "exit_code": 2})
		began := time.Now()
		h, err := d.StartTask(cfg)
		require.NoError(t, err)
		require.Equal(t, CompatName, h.Driver)
		res := waitResult(t, d, cfg.ID)
		require.Equal(t, 2, res.ExitCode)
		require.Equal(t, began, time.Now(), "no run_for: exits at once")
		requireFile(t, cfg.StdoutPath, "hello\n")

		// A new driver (restarted client) recovers it as exited.
		d2 := NewCompat(nil)
		require.NoError(t, d2.RecoverTask(h))
		require.Equal(t, 2, waitResult(t, d2, cfg.ID).ExitCode)
		require.Error(t, New(nil).RecoverTask(h), "a mock handle is not a mock_driver one")
		require.NoError(t, d.DestroyTask(cfg.ID, true))

		cfg = newTaskConfig(t, map[string]any{"stdout_string": "x", "stdout_repeat": 2, "stdout_repeat_duration": "10ms"})
		began = time.Now()
		_, err = d.StartTask(cfg)
		require.NoError(t, err)
		res = waitResult(t, d, cfg.ID)
		require.Equal(t, 0, res.ExitCode)
		require.Equal(t, 20*time.Millisecond, time.Since(began), "exits with its last repeat")
		requireFile(t, cfg.StdoutPath, "xxx")
		require.NoError(t, d.DestroyTask(cfg.ID, true))

		cfg = newTaskConfig(t, map[string]any{"run_for": "50ms"})
		began = time.Now()
		_, err = d.StartTask(cfg)
		require.NoError(t, err)
		waitResult(t, d, cfg.ID)
		require.Equal(t, 50*time.Millisecond, time.Since(began))

		require.Error(t, d.ValidateTaskConfig(map[string]any{"stdout_strnig": "typo"}), "unknown keys stay errors")
	})
}
