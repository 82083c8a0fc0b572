package taskrunner

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/client/allocrunner/allocdir"
	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/drivers/logrotate"
	"github.com/drover-project/drover/drivers/mock"
	"github.com/drover-project/drover/nomad/structs"
)

// fakeDB is a map-backed StateDB that keeps what it is given.
type fakeDB struct {
	mu      sync.Mutex
	handles map[string]*drivers.TaskHandle
	states  map[string]*structs.TaskState
}

func newFakeDB() *fakeDB {
	return &fakeDB{handles: map[string]*drivers.TaskHandle{}, states: map[string]*structs.TaskState{}}
}

func (f *fakeDB) PutTaskHandle(a, t string, h *drivers.TaskHandle) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handles[a+"/"+t] = h
	return nil
}

func (f *fakeDB) GetTaskHandle(a, t string) (*drivers.TaskHandle, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.handles[a+"/"+t], nil
}

func (f *fakeDB) PutTaskState(a, t string, st *structs.TaskState) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.states[a+"/"+t] = st
	return nil
}

func (f *fakeDB) GetTaskState(a, t string) (*structs.TaskState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.states[a+"/"+t], nil
}

// recordingDriver is the mock driver recording the configs it started.
type recordingDriver struct {
	*mock.Driver
	mu      sync.Mutex
	started []*drivers.TaskConfig
}

func (d *recordingDriver) StartTask(cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	d.mu.Lock()
	d.started = append(d.started, cfg.Copy())
	d.mu.Unlock()
	return d.Driver.StartTask(cfg)
}

func (d *recordingDriver) Started() []*drivers.TaskConfig {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]*drivers.TaskConfig(nil), d.started...)
}

func testAlloc(task *structs.Task) *structs.Allocation {
	job := &structs.Job{
		ID: "job", Name: "job-name", Region: "global", Namespace: "default", Type: structs.JobTypeSystem,
		Meta: map[string]string{"owner": "ops"},
		TaskGroups: []*structs.TaskGroup{{
			Name: "g", Tasks: []*structs.Task{task},
			RestartPolicy: &structs.RestartPolicy{Attempts: 1, Interval: time.Hour, Delay: 10 * time.Second, Mode: "fail"},
		}},
	}
	return &structs.Allocation{
		ID: "a1", Name: "job.g[0]", Namespace: "default", JobID: "job", Job: job, TaskGroup: "g",
		AllocatedResources: &structs.AllocatedResources{
			Tasks: map[string]*structs.AllocatedTaskResources{task.Name: {
				Cpu: structs.AllocatedCpuResources{CpuShares: 500}, Memory: structs.AllocatedMemoryResources{MemoryMB: 256},
			}},
			Shared: structs.AllocatedSharedResources{Ports: []structs.AllocatedPortMapping{{Label: "http", Value: 20000, To: 8080}}},
		},
	}
}

func newRunner(t *testing.T, task *structs.Task, d drivers.Driver) (*TaskRunner, *allocdir.AllocDir, *fakeDB) {
	t.Helper()
	dir, err := allocdir.New(t.TempDir(), "a1")
	require.NoError(t, err)
	require.NoError(t, dir.Build([]string{task.Name}))
	db := newFakeDB()
	tr, err := New(&Config{
		Alloc: testAlloc(task), TaskName: task.Name, Driver: d, AllocDir: dir, StateDB: db,
		Node: &structs.Node{ID: "n1", Name: "node-1", Datacenter: "dc1", Attributes: map[string]string{"unique.network.ip-address": "10.0.0.9"}},
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		tr.Kill(nil)
		<-runDone(tr)
	})
	return tr, dir, db
}

// runDone returns WaitCh, running Run first if nobody did.
func runDone(tr *TaskRunner) <-chan struct{} {
	tr.mu.Lock()
	started := tr.runStarted
	tr.mu.Unlock()
	if !started {
		go tr.Run()
	}
	return tr.WaitCh()
}

func types(st *structs.TaskState) []string {
	out := make([]string, len(st.Events))
	for i, e := range st.Events {
		out[i] = e.Type
	}
	return out
}

func TestTaskConfigReachesDriver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &recordingDriver{Driver: mock.New(nil)}
		task := &structs.Task{
			Name: "web", Driver: "mock", User: "nobody",
			Env: map[string]string{"LISTEN": "${NOMAD_IP_http}:${NOMAD_PORT_http}"},
			Config: map[string]any{
				"prefetch":      true,
				"stdout_string": "${NOMAD_JOB_NAME}/${NOMAD_META_owner}/${node.datacenter}",
			},
		}
		tr, dir, db := newRunner(t, task, d)
		go tr.Run()
		time.Sleep(time.Second)
		synctest.Wait()

		require.Len(t, d.Started(), 1)
		cfg := d.Started()[0]
		require.Equal(t, "a1/web", cfg.ID)
		require.Equal(t, "a1", cfg.AllocID)
		require.Equal(t, "web", cfg.TaskName)
		require.Equal(t, "g", cfg.TaskGroup)
		require.Equal(t, "job-name", cfg.JobName)
		require.Equal(t, "default", cfg.Namespace)
		require.Equal(t, "nobody", cfg.User)
		require.Equal(t, map[string]any{"stdout_string": "job-name/ops/dc1"}, cfg.Config, "interpolated, prefetch consumed")
		require.Equal(t, dir.SharedDir(), cfg.AllocDir)
		require.Equal(t, dir.TaskDir("web").Dir, cfg.TaskDir)
		stdout, _ := dir.LogPath("web", "stdout")
		stderr, _ := dir.LogPath("web", "stderr")
		require.Equal(t, stdout, cfg.StdoutPath)
		require.Equal(t, stderr, cfg.StderrPath)
		require.Equal(t, logrotate.Limits{MaxFiles: 10, MaxFileSize: 10 << 20}, cfg.LogLimits, "no logs block: Nomad's defaults")
		require.Equal(t, 500, cfg.CPU)
		require.Equal(t, 256, cfg.MemoryMB)
		require.Equal(t, "10.0.0.9:8080", cfg.Env["LISTEN"])
		require.Equal(t, "a1", cfg.Env["NOMAD_ALLOC_ID"])
		require.Equal(t, dir.TaskDir("web").LocalDir, cfg.Env["NOMAD_TASK_DIR"])
		require.Equal(t, "500", cfg.Env["NOMAD_CPU_LIMIT"])
		require.Equal(t, "ops", cfg.Env["NOMAD_META_OWNER"])

		// The handle was persisted; the state is running.
		h, _ := db.GetTaskHandle("a1", "web")
		require.NotNil(t, h)
		require.Equal(t, "a1/web", h.TaskID)
		st, _ := db.GetTaskState("a1", "web")
		require.Equal(t, StateRunning, st.State)
		require.Equal(t, tr.State(), st)
	})
}

func TestKillDuringRestartDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr, _, db := newRunner(t, &structs.Task{Name: "web", Driver: "mock", Config: map[string]any{"run_for": "1s", "exit_code": 2}}, mock.New(nil))
		go tr.Run()
		time.Sleep(5 * time.Second) // exited at 1s, restarting at 11s
		synctest.Wait()
		require.Equal(t, StatePending, tr.State().State)
		h, _ := db.GetTaskHandle("a1", "web")
		require.Nil(t, h, "an exited task's handle is cleared")

		tr.Kill(nil)
		<-tr.WaitCh()
		st := tr.State()
		require.Equal(t, StateDead, st.State)
		require.False(t, st.Failed)
		require.Equal(t, []string{"Terminated", "Restarting", "Killed"}, types(st)[len(st.Events)-3:])
	})
}

func TestTaskShutdownDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		task := &structs.Task{Name: "web", Driver: "mock", ShutdownDelay: 3 * time.Second, KillTimeout: time.Second}
		tr, _, _ := newRunner(t, task, mock.New(nil))
		go tr.Run()
		time.Sleep(time.Second)
		synctest.Wait()
		began := time.Now()
		tr.Kill(NewSiblingFailed(time.Now(), "other"))
		<-tr.WaitCh()
		require.Equal(t, 3*time.Second, time.Since(began))
		st := tr.State()
		require.Equal(t, []string{"Sibling Task Failed", "Waiting for shutdown delay", "Killing", "Terminated", "Killed"}, types(st)[len(st.Events)-5:])
		killing := st.Events[len(st.Events)-3]
		require.Equal(t, `Task's sibling "other" failed`, killing.Details[DetailKillReason])
	})
}

func TestPrepareIsOnceAndAbortable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := mock.New(nil)
		tr, _, _ := newRunner(t, &structs.Task{Name: "web", Driver: "mock", Config: map[string]any{"prepare_for": "1h"}}, d)
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			time.Sleep(time.Minute)
			cancel()
		}()
		err := tr.Prepare(ctx)
		require.ErrorIs(t, err, ErrAborted)
		st := tr.State()
		require.Equal(t, StatePending, st.State, "an aborted prepare is not a failure")
		require.False(t, st.Failed)

		tr.mu.Lock()
		tr.task.Config = map[string]any{"prepare_for": "1s"}
		tr.mu.Unlock()
		require.NoError(t, tr.Prepare(context.Background()))
		require.NoError(t, tr.Prepare(context.Background()), "once")
		require.Equal(t, 2, d.Prepared("a1/web"))
	})
}

func TestPrefetchFlag(t *testing.T) {
	for _, tc := range []struct {
		config map[string]any
		want   bool
	}{
		{nil, true},
		{map[string]any{"prefetch": true}, true},
		{map[string]any{"prefetch": false}, false},
		{map[string]any{"prefetch": "false"}, false},
		{map[string]any{"prefetch": 3}, true}, // invalid: validation fails the task later
	} {
		tr, _, _ := newRunner(t, &structs.Task{Name: "web", Driver: "mock", Config: tc.config}, mock.New(nil))
		require.Equal(t, tc.want, tr.Prefetch(), "%v", tc.config)
		require.True(t, tr.NeedsPrepare())
	}
}

func TestAppendEventKeepsLastTenAndReplacesProgress(t *testing.T) {
	now := time.Unix(100, 0)
	st := &structs.TaskState{}
	appendEvent(st, eventReceived(now))
	for i := range 5 {
		appendEvent(st, eventPrepareProgress(now.Add(time.Duration(i)*time.Second), drivers.PrepareProgress{BytesDone: int64(i), BytesTotal: 10}))
	}
	require.Len(t, st.Events, 2, "progress events replace each other")
	require.Equal(t, "4", st.Events[1].Details[DetailBytesDone])
	require.Equal(t, "40.0", st.Events[1].Details[DetailPercent])
	require.Equal(t, "Preparing task: 40.0% (4 B of 10 B)", st.Events[1].DisplayMessage)
	for range 12 {
		appendEvent(st, eventStarted(now))
	}
	require.Len(t, st.Events, maxEvents)
}

func TestEventDisplayMessages(t *testing.T) {
	now := time.Unix(0, 0)
	require.Equal(t, "Exit Code: 137, Signal: 9", eventTerminated(now, &drivers.ExitResult{ExitCode: 137, Signal: 9}).DisplayMessage)
	require.Equal(t, "Exit Code: 1, OOM Killed", eventTerminated(now, &drivers.ExitResult{ExitCode: 1, OOMKilled: true}).DisplayMessage)
	require.Equal(t, "Task restarting in 15s", eventRestarting(now, 15*time.Second, "Restart within policy").DisplayMessage)
	require.Equal(t, "Exceeded allowed attempts, applying a delay - Task restarting in 5m0s",
		eventRestarting(now, 5*time.Minute, "Exceeded allowed attempts, applying a delay").DisplayMessage)
	require.Equal(t, "Task exceeded restart policy", eventNotRestarting(now, "").DisplayMessage)
	require.Equal(t, "Preparing task: 1.5 MiB", eventPrepareProgress(now, drivers.PrepareProgress{BytesDone: 3 << 19}).DisplayMessage)
}

func TestRestartHistoryFromEvents(t *testing.T) {
	now := time.Unix(1000, 0)
	st := &structs.TaskState{}
	appendEvent(st, eventStarted(now))
	appendEvent(st, eventRestarting(now, 10*time.Second, "Restart within policy"))
	appendEvent(st, eventRestarting(now.Add(time.Minute), 0, "Restart within policy"))
	require.Equal(t, []time.Time{now.Add(10 * time.Second), now.Add(time.Minute)}, restartHistory(st))
}

// hostEnvDriver is the recording mock driver claiming, as raw_exec and exec
// do, that its tasks inherit the client's environment.
type hostEnvDriver struct{ *recordingDriver }

func (hostEnvDriver) InheritsHostEnv() bool { return true }

func TestHostEnvReachesOnlyInheritingDrivers(t *testing.T) {
	host := map[string]string{"PATH": "/usr/bin:/bin", "HOME": "/root"}
	for _, tc := range []struct {
		name     string
		driver   func() (drivers.Driver, *recordingDriver)
		wantPath bool
	}{
		{"inheriting driver", func() (drivers.Driver, *recordingDriver) {
			r := &recordingDriver{Driver: mock.New(nil)}
			return hostEnvDriver{r}, r
		}, true},
		{"image driver", func() (drivers.Driver, *recordingDriver) {
			r := &recordingDriver{Driver: mock.New(nil)}
			return r, r
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				d, rec := tc.driver()
				task := &structs.Task{Name: "web", Driver: "mock", Config: map[string]any{}}
				dir, err := allocdir.New(t.TempDir(), "a1")
				require.NoError(t, err)
				require.NoError(t, dir.Build([]string{task.Name}))
				tr, err := New(&Config{Alloc: testAlloc(task), TaskName: "web", Driver: d, AllocDir: dir,
					StateDB: newFakeDB(), HostEnv: host})
				require.NoError(t, err)
				go tr.Run()
				time.Sleep(time.Second)
				synctest.Wait()
				require.Len(t, rec.Started(), 1)
				env := rec.Started()[0].Env
				path, ok := env["PATH"]
				require.Equal(t, tc.wantPath, ok)
				if tc.wantPath {
					require.Equal(t, "/usr/bin:/bin", path)
				}
				require.Equal(t, "a1", env["NOMAD_ALLOC_ID"])
				tr.Kill(nil)
				<-tr.WaitCh()
			})
		})
	}
}
