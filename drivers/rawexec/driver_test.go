package rawexec

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/drivers"
)

// helperEnv makes the test binary act as a short-lived "client" that starts
// the task given in JSON, prints the handle and exits (see
// TestRecoverAfterClientProcessExit).
const helperEnv = "DROVER_RAWEXEC_TEST_CLIENT"

func TestMain(m *testing.M) {
	MaybeRunExecutor()
	if cfg := os.Getenv(helperEnv); cfg != "" {
		os.Exit(runHelperClient(cfg))
	}
	os.Exit(m.Run())
}

func runHelperClient(cfgJSON string) int {
	var cfg drivers.TaskConfig
	if err := json.Unmarshal([]byte(cfgJSON), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	d := New(nil)
	if err := d.SetConfig(map[string]any{"enabled": true}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	h, err := d.StartTask(&cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(h); err != nil {
		return 1
	}
	return 0 // exit with the task running, as a crashing client would
}

// startInOtherProcess starts cfg from a separate client process that exits
// at once, so the executor is not a child of the test process.
func startInOtherProcess(t *testing.T, cfg *drivers.TaskConfig) *drivers.TaskHandle {
	t.Helper()
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+string(b))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	var h drivers.TaskHandle
	require.NoError(t, json.Unmarshal(out, &h))
	return &h
}

func newDriver(t *testing.T) *Driver {
	t.Helper()
	d := New(hclog.NewNullLogger())
	require.NoError(t, d.SetConfig(map[string]any{"enabled": true}))
	return d
}

// newTask returns a task config in a fresh task dir.
func newTask(t *testing.T, command string, args ...string) *drivers.TaskConfig {
	t.Helper()
	root := t.TempDir()
	taskDir := filepath.Join(root, "web")
	anyArgs := make([]any, len(args))
	for i, a := range args {
		anyArgs[i] = a
	}
	return &drivers.TaskConfig{
		ID:         "alloc1/web",
		AllocID:    "alloc1",
		TaskName:   "web",
		TaskGroup:  "g",
		JobName:    "j",
		Namespace:  "default",
		Config:     map[string]any{"command": command, "args": anyArgs},
		Env:        map[string]string{"PATH": os.Getenv("PATH")},
		AllocDir:   filepath.Join(root, "alloc"),
		TaskDir:    taskDir,
		PrivateDir: filepath.Join(root, ".private", "web"),
		StdoutPath: filepath.Join(root, "alloc", "logs", "web.stdout.0"),
		StderrPath: filepath.Join(root, "alloc", "logs", "web.stderr.0"),
	}
}

// start starts cfg and makes sure the task is killed and forgotten at the
// end of the test.
func start(t *testing.T, d *Driver, cfg *drivers.TaskConfig) *drivers.TaskHandle {
	t.Helper()
	h, err := d.StartTask(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.DestroyTask(cfg.ID, true) })
	return h
}

func wait(t *testing.T, d *Driver, id string, within time.Duration) *drivers.ExitResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	ch, err := d.WaitTask(ctx, id)
	require.NoError(t, err)
	res, ok := <-ch
	require.True(t, ok, "task %s did not exit within %s", id, within)
	_, open := <-ch
	require.False(t, open, "wait channel must close after one result")
	return res
}

func TestExitCodeAndOutput(t *testing.T) {
	d := newDriver(t)
	cfg := newTask(t, "/bin/sh", "-c", "echo hi; echo oops >&2; exit 3")
	h := start(t, d, cfg)
	require.Equal(t, Name, h.Driver)
	require.Equal(t, cfg.ID, h.TaskID)
	require.False(t, h.StartedAt.IsZero())

	res := wait(t, d, cfg.ID, 10*time.Second)
	require.Equal(t, 3, res.ExitCode)
	require.Zero(t, res.Signal)
	require.NoError(t, res.Err)
	require.False(t, res.Successful())

	out, err := os.ReadFile(cfg.StdoutPath)
	require.NoError(t, err)
	require.Equal(t, "hi\n", string(out))
	errOut, err := os.ReadFile(cfg.StderrPath)
	require.NoError(t, err)
	require.Equal(t, "oops\n", string(errOut))

	st, err := d.InspectTask(cfg.ID)
	require.NoError(t, err)
	require.Equal(t, drivers.TaskStateExited, st.State)
	require.Equal(t, 3, st.ExitResult.ExitCode)
	require.False(t, st.CompletedAt.IsZero())

	rec, ok, err := readExitFile(filepath.Join(cfg.PrivateDir, exitFileName))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, 3, rec.ExitCode)
	_, err = os.Stat(filepath.Join(cfg.PrivateDir, specFileName))
	require.ErrorIs(t, err, os.ErrNotExist, "the executor removes its spec file")

	// A second WaitTask after the exit still gets the result.
	require.Equal(t, 3, wait(t, d, cfg.ID, time.Second).ExitCode)
}

func TestOutputIsAppended(t *testing.T) {
	d := newDriver(t)
	cfg := newTask(t, "echo", "second")
	require.NoError(t, os.MkdirAll(filepath.Dir(cfg.StdoutPath), 0o755))
	require.NoError(t, os.WriteFile(cfg.StdoutPath, []byte("first\n"), 0o644))
	start(t, d, cfg)
	require.True(t, wait(t, d, cfg.ID, 10*time.Second).Successful())
	out, err := os.ReadFile(cfg.StdoutPath)
	require.NoError(t, err)
	require.Equal(t, "first\nsecond\n", string(out))
}

func TestEnvAndWorkingDir(t *testing.T) {
	d := newDriver(t)
	cfg := newTask(t, "/bin/sh", "-c", `echo "$GREETING $NOMAD_TASK_NAME"; pwd`)
	cfg.Env["GREETING"] = "hello"
	cfg.Env["NOMAD_TASK_NAME"] = "web"
	start(t, d, cfg)
	require.True(t, wait(t, d, cfg.ID, 10*time.Second).Successful())
	out, err := os.ReadFile(cfg.StdoutPath)
	require.NoError(t, err)
	dir, err := filepath.EvalSymlinks(cfg.TaskDir)
	require.NoError(t, err)
	require.Equal(t, "hello web\n"+dir+"\n", string(out))
}

func TestWorkDir(t *testing.T) {
	d := newDriver(t)
	cfg := newTask(t, "/bin/sh", "-c", "pwd")
	cfg.Config["work_dir"] = "local"
	require.NoError(t, os.MkdirAll(filepath.Join(cfg.TaskDir, "local"), 0o755))
	start(t, d, cfg)
	require.True(t, wait(t, d, cfg.ID, 10*time.Second).Successful())
	out, err := os.ReadFile(cfg.StdoutPath)
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(strings.TrimSpace(string(out)), "/web/local"), string(out))
}

func TestStartErrors(t *testing.T) {
	d := newDriver(t)

	cfg := newTask(t, "no-such-command-drover")
	_, err := d.StartTask(cfg)
	require.ErrorContains(t, err, `"no-such-command-drover" not found`)

	// The executor fails to start the task (missing working dir): the
	// error comes back through the handshake and the ID is free again.
	cfg = newTask(t, "/bin/true")
	cfg.Config["work_dir"] = "missing"
	_, err = d.StartTask(cfg)
	require.ErrorContains(t, err, "starting task")
	_, err = d.InspectTask(cfg.ID)
	require.ErrorIs(t, err, drivers.ErrTaskNotFound)

	cfg = newTask(t, "sleep", "60")
	start(t, d, cfg)
	_, err = d.StartTask(cfg)
	require.ErrorIs(t, err, drivers.ErrTaskExists)
}

func TestStopWithSIGTERM(t *testing.T) {
	d := newDriver(t)
	cfg := newTask(t, "sleep", "60")
	start(t, d, cfg)

	st, err := d.InspectTask(cfg.ID)
	require.NoError(t, err)
	require.Equal(t, drivers.TaskStateRunning, st.State)
	pid, err := strconv.Atoi(st.Attributes["pid"])
	require.NoError(t, err)
	require.True(t, processAlive(pid, 0))

	began := time.Now()
	require.NoError(t, d.StopTask(cfg.ID, 10*time.Second, ""))
	require.Less(t, time.Since(began), 5*time.Second)

	res := wait(t, d, cfg.ID, time.Second)
	require.Equal(t, int(syscall.SIGTERM), res.Signal)
	require.Equal(t, 128+int(syscall.SIGTERM), res.ExitCode)
	require.False(t, processAlive(pid, 0))

	// Stopping an exited task is a no-op.
	require.NoError(t, d.StopTask(cfg.ID, time.Second, "SIGTERM"))
}

func TestStopEscalatesToSIGKILL(t *testing.T) {
	d := newDriver(t)
	cfg := newTask(t, "/bin/sh", "-c", `trap "" TERM; sleep 60`)
	start(t, d, cfg)
	time.Sleep(100 * time.Millisecond) // let the shell install its trap

	const timeout = 300 * time.Millisecond
	began := time.Now()
	require.NoError(t, d.StopTask(cfg.ID, timeout, "SIGTERM"))
	elapsed := time.Since(began)
	require.GreaterOrEqual(t, elapsed, timeout)
	require.Less(t, elapsed, 5*time.Second)

	res := wait(t, d, cfg.ID, time.Second)
	require.Equal(t, int(syscall.SIGKILL), res.Signal)
	require.Equal(t, 137, res.ExitCode)
}

func TestStopReachesGrandchildren(t *testing.T) {
	d := newDriver(t)
	cfg := newTask(t, "/bin/sh", "-c", `sleep 60 & echo $! > bg.pid; wait`)
	start(t, d, cfg)
	pidFile := filepath.Join(cfg.TaskDir, "bg.pid")
	var bg int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		bg, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	}, 5*time.Second, 10*time.Millisecond)
	require.True(t, processAlive(bg, 0))

	require.NoError(t, d.StopTask(cfg.ID, 5*time.Second, "SIGINT"))
	require.Eventually(t, func() bool { return !processAlive(bg, 0) }, 5*time.Second, 10*time.Millisecond)
}

func TestSignalTask(t *testing.T) {
	d := newDriver(t)
	cfg := newTask(t, "/bin/sh", "-c", `trap 'echo got usr1; exit 5' USR1; touch ready; while true; do sleep 0.05; done`)
	start(t, d, cfg)
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(cfg.TaskDir, "ready"))
		return err == nil
	}, 5*time.Second, 10*time.Millisecond)

	require.ErrorContains(t, d.SignalTask(cfg.ID, "SIGNOPE"), "unknown signal")
	require.NoError(t, d.SignalTask(cfg.ID, "SIGUSR1"))
	res := wait(t, d, cfg.ID, 10*time.Second)
	require.Equal(t, 5, res.ExitCode)
	out, err := os.ReadFile(cfg.StdoutPath)
	require.NoError(t, err)
	require.Equal(t, "got usr1\n", string(out))
	require.Error(t, d.SignalTask(cfg.ID, "SIGUSR1"), "signalling an exited task")
}

func TestRecoverRunningTask(t *testing.T) {
	a := newDriver(t)
	cfg := newTask(t, "sleep", "60")
	h := start(t, a, cfg)
	stA, err := a.InspectTask(cfg.ID)
	require.NoError(t, err)

	// A fresh driver stands for the restarted client; the handle goes
	// through JSON as it would through the client's state DB.
	b := newDriver(t)
	h = roundTrip(t, h)
	require.NoError(t, b.RecoverTask(h))
	require.NoError(t, b.RecoverTask(h), "recovering twice is harmless")
	stB, err := b.InspectTask(cfg.ID)
	require.NoError(t, err)
	require.Equal(t, drivers.TaskStateRunning, stB.State)
	require.Equal(t, stA.Attributes["pid"], stB.Attributes["pid"])
	require.Equal(t, stA.Attributes["executor_pid"], stB.Attributes["executor_pid"])

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ch, err := b.WaitTask(ctx, cfg.ID)
	require.NoError(t, err)

	require.NoError(t, b.StopTask(cfg.ID, 5*time.Second, "SIGTERM"))
	res := <-ch
	require.NotNil(t, res)
	require.Equal(t, int(syscall.SIGTERM), res.Signal)
	require.NoError(t, res.Err)
	require.NoError(t, b.DestroyTask(cfg.ID, false))
}

func TestRecoverTaskThatExitedWhileClientWasDown(t *testing.T) {
	a := newDriver(t)
	cfg := newTask(t, "/bin/sh", "-c", "exit 7")
	h := start(t, a, cfg)
	require.Equal(t, 7, wait(t, a, cfg.ID, 10*time.Second).ExitCode)

	b := newDriver(t)
	require.NoError(t, b.RecoverTask(roundTrip(t, h)))
	res := wait(t, b, cfg.ID, time.Second)
	require.Equal(t, 7, res.ExitCode)
	require.NoError(t, res.Err)
	st, err := b.InspectTask(cfg.ID)
	require.NoError(t, err)
	require.Equal(t, drivers.TaskStateExited, st.State)
}

func TestRecoverGoneTask(t *testing.T) {
	// A process that has come and gone stands for the vanished executor.
	p := exec.Command("/bin/true")
	require.NoError(t, p.Run())
	dead := p.Process.Pid

	cfg := newTask(t, "sleep", "60")
	require.NoError(t, os.MkdirAll(cfg.TaskDir, 0o755))
	state, err := json.Marshal(State{ExecutorPID: dead, TaskPID: dead, TaskPGID: dead, StartTime: 1, TaskStartTime: 1})
	require.NoError(t, err)
	h := &drivers.TaskHandle{Driver: Name, TaskID: cfg.ID, Config: cfg, DriverState: state, StartedAt: time.Now()}

	d := newDriver(t)
	require.ErrorIs(t, d.RecoverTask(h), drivers.ErrTaskNotFound)

	// An exit file left by another executor does not count (the handle
	// has no ExitFile: an older client's, whose record is in the task dir).
	require.NoError(t, writeFileAtomic(filepath.Join(cfg.TaskDir, legacyExitFileName), exitRecord{ExitCode: 9, ExecutorPID: dead + 1}))
	require.ErrorIs(t, d.RecoverTask(h), drivers.ErrTaskNotFound)

	// A live process with another start time is a reused PID, not ours.
	state, err = json.Marshal(State{ExecutorPID: os.Getpid(), StartTime: procStartTime(os.Getpid()) + 1})
	require.NoError(t, err)
	h.DriverState = state
	require.ErrorIs(t, d.RecoverTask(h), drivers.ErrTaskNotFound)

	h.DriverState = []byte("{bad")
	require.ErrorContains(t, d.RecoverTask(h), "decoding driver state")
}

func TestValidateTaskConfig(t *testing.T) {
	d := New(nil)
	require.NoError(t, d.ValidateTaskConfig(map[string]any{"command": "/bin/true", "args": []any{"a", "b"}}))
	require.NoError(t, d.ValidateTaskConfig(map[string]any{"command": "/bin/true", "args": []string{"a"}}))

	for name, tc := range map[string]struct {
		config map[string]any
		want   string
	}{
		"missing command": {map[string]any{}, "command is required"},
		"empty command":   {map[string]any{"command": " "}, "command is required"},
		"command type":    {map[string]any{"command": 3.0}, "command must be a string"},
		"args element":    {map[string]any{"command": "x", "args": []any{"a", 1.0}}, "args[1] must be a string"},
		"args type":       {map[string]any{"command": "x", "args": "a b"}, "args must be a list of strings"},
		"unknown field":   {map[string]any{"command": "x", "image": "redis"}, "image is not a known option"},
	} {
		t.Run(name, func(t *testing.T) {
			err := d.ValidateTaskConfig(tc.config)
			require.ErrorContains(t, err, tc.want)
			var fe *drivers.FieldError
			require.ErrorAs(t, err, &fe)
		})
	}
}

func TestDisabled(t *testing.T) {
	d := New(hclog.NewNullLogger())
	fp := d.Fingerprint(context.Background())
	require.False(t, fp.Detected, "disabled is undetected, as in Nomad")
	require.False(t, fp.Healthy)
	require.Equal(t, "disabled", fp.HealthDescription)
	require.NotContains(t, fp.Attributes, "driver.raw_exec")
	_, err := d.StartTask(newTask(t, "/bin/true"))
	require.ErrorIs(t, err, drivers.ErrDisabled)

	require.NoError(t, d.SetConfig(map[string]any{"enabled": true}))
	fp = d.Fingerprint(context.Background())
	require.True(t, fp.Detected)
	require.True(t, fp.Healthy)
	require.Equal(t, "1", fp.Attributes["driver.raw_exec"])

	require.NoError(t, d.SetConfig(map[string]any{"enabled": false}))
	require.False(t, d.Fingerprint(context.Background()).Healthy)
	require.ErrorContains(t, d.SetConfig(map[string]any{"enabled": "maybe"}), "enabled must be a bool")
	require.ErrorContains(t, d.SetConfig(map[string]any{"bogus": 1}), "bogus is not a known option")
}

func TestDestroyTask(t *testing.T) {
	d := newDriver(t)
	cfg := newTask(t, "sleep", "60")
	start(t, d, cfg)
	require.ErrorContains(t, d.DestroyTask(cfg.ID, false), "still running")
	require.NoError(t, d.DestroyTask(cfg.ID, true))
	_, err := d.InspectTask(cfg.ID)
	require.ErrorIs(t, err, drivers.ErrTaskNotFound)
	require.ErrorIs(t, d.StopTask(cfg.ID, time.Second, ""), drivers.ErrTaskNotFound)
	_, err = d.WaitTask(context.Background(), cfg.ID)
	require.ErrorIs(t, err, drivers.ErrTaskNotFound)
	require.ErrorIs(t, d.DestroyTask(cfg.ID, true), drivers.ErrTaskNotFound)

	// The ID may be started again (a task restart) in the same task dir.
	start(t, d, cfg)
	require.NoError(t, d.StopTask(cfg.ID, time.Second, "SIGKILL"))
	require.Equal(t, int(syscall.SIGKILL), wait(t, d, cfg.ID, time.Second).Signal)
}

func TestWaitTaskContextCancelled(t *testing.T) {
	d := newDriver(t)
	cfg := newTask(t, "sleep", "60")
	start(t, d, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := d.WaitTask(ctx, cfg.ID)
	require.NoError(t, err)
	cancel()
	select {
	case res, ok := <-ch:
		require.False(t, ok, "no result expected, got %v", res)
	case <-time.After(5 * time.Second):
		t.Fatal("wait channel not closed after cancel")
	}
}

func TestParseProcStat(t *testing.T) {
	line := "1234 (we(ird) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 200"
	st, err := parseProcStat(line)
	require.NoError(t, err)
	require.Equal(t, byte('S'), st.State)
	require.Equal(t, uint64(987654), st.StartTime)
	_, err = parseProcStat("1234 (x) S 1 2")
	require.Error(t, err)

	self, err := readProcStat(os.Getpid())
	require.NoError(t, err)
	require.NotZero(t, self.StartTime)
	require.True(t, processAlive(os.Getpid(), self.StartTime))
	require.False(t, processAlive(os.Getpid(), self.StartTime+1))
	require.False(t, processAlive(0, 0))
}

func roundTrip(t *testing.T, h *drivers.TaskHandle) *drivers.TaskHandle {
	t.Helper()
	b, err := json.Marshal(h)
	require.NoError(t, err)
	var out drivers.TaskHandle
	require.NoError(t, json.Unmarshal(b, &out))
	require.NotNil(t, out.Config, "handle lost its config")
	return &out
}

func TestRecoverAfterClientProcessExit(t *testing.T) {
	cfg := newTask(t, "/bin/sh", "-c", `echo started; sleep 0.3; exit 4`)
	h := startInOtherProcess(t, cfg)
	var st State
	require.NoError(t, json.Unmarshal(h.DriverState, &st))
	require.NotZero(t, st.StartTime)

	d := newDriver(t)
	require.NoError(t, d.RecoverTask(h))
	t.Cleanup(func() { _ = d.DestroyTask(cfg.ID, true) })
	res := wait(t, d, cfg.ID, 10*time.Second)
	require.Equal(t, 4, res.ExitCode)
	require.NoError(t, res.Err)
	out, err := os.ReadFile(cfg.StdoutPath)
	require.NoError(t, err)
	require.Equal(t, "started\n", string(out))

	// Stopping a task whose executor is not our child.
	cfg = newTask(t, "sleep", "60")
	h = startInOtherProcess(t, cfg)
	d2 := newDriver(t)
	require.NoError(t, d2.RecoverTask(h))
	t.Cleanup(func() { _ = d2.DestroyTask(cfg.ID, true) })
	require.NoError(t, d2.StopTask(cfg.ID, 5*time.Second, "SIGTERM"))
	require.Equal(t, int(syscall.SIGTERM), wait(t, d2, cfg.ID, time.Second).Signal)
}
