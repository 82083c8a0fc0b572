package allocrunner

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/client/allocrunner/taskrunner"
	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/nomad/structs"
)

func TestSysbatchRunsToCompletion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		job := newJob(structs.JobTypeSysBatch, mockTask("web", map[string]any{
			"run_for": "50ms", "exit_code": 0, "stdout_string": "hello ${NOMAD_TASK_NAME} on ${node.unique.name}\n",
		}))
		alloc := newAlloc(job)
		ar := h.runner(alloc)
		began := time.Now()
		go ar.Run()
		<-ar.WaitCh()
		require.Equal(t, 50*time.Millisecond, time.Since(began))

		got := ar.Alloc()
		require.Equal(t, structs.AllocClientStatusComplete, got.ClientStatus)
		require.Equal(t, DescComplete, got.ClientDescription)
		st := got.TaskStates["web"]
		require.Equal(t, taskrunner.StateDead, st.State)
		require.False(t, st.Failed)
		require.Equal(t, []string{"Received", "Task Setup", "Driver", "Driver", "Driver", "Started", "Terminated"}, eventTypes(st))
		for _, e := range st.Events {
			require.NotEmpty(t, e.DisplayMessage, e.Type)
		}
		require.Equal(t, "Exit Code: 0", findEvent(st, "Terminated").DisplayMessage)
		require.Equal(t, began, st.StartedAt)
		require.Equal(t, began.Add(50*time.Millisecond), st.FinishedAt)
		select {
		case <-ar.TasksExitedCh():
		default:
			t.Fatal("TasksExitedCh not closed")
		}

		// The published state ends complete; the last one equals Alloc().
		last := h.lastPublished(alloc.ID)
		require.Equal(t, structs.AllocClientStatusComplete, last.ClientStatus)
		require.Equal(t, structs.AllocClientStatusPending, h.published(alloc.ID)[0].ClientStatus)
		sawRunning := false
		for _, u := range h.published(alloc.ID) {
			sawRunning = sawRunning || u.ClientStatus == structs.AllocClientStatusRunning
		}
		require.True(t, sawRunning)

		// Directories and logs, interpolated config.
		for _, rel := range []string{"alloc/logs", "alloc/data", "alloc/tmp", "web/local", "web/secrets", "web/tmp"} {
			_, err := os.Stat(filepath.Join(h.root, alloc.ID, rel))
			require.NoError(t, err, rel)
		}
		logPath, err := ar.LogPath("web", "stdout")
		require.NoError(t, err)
		require.Equal(t, filepath.Join(h.root, alloc.ID, "alloc", "logs", "web.stdout.0"), logPath)
		out, err := os.ReadFile(logPath)
		require.NoError(t, err)
		require.Equal(t, "hello web on node-1\n", string(out))
		_, err = ar.LogPath("nope", "stdout")
		require.ErrorContains(t, err, `no task "nope"`)
		_, err = ar.LogPath("web", "stdin")
		require.Error(t, err)

		ar.Destroy()
	})
}

func TestFailingTaskRestartsPerPolicyThenFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		job := newJob(structs.JobTypeSysBatch, mockTask("web", map[string]any{"run_for": "10ms", "exit_code": 1}))
		job.TaskGroups[0].RestartPolicy = &structs.RestartPolicy{Attempts: 2, Interval: time.Hour, Delay: time.Second, Mode: "fail"}
		ar := h.runner(newAlloc(job))
		began := time.Now()
		go ar.Run()

		// After the first exit the task waits to restart: the alloc is pending.
		time.Sleep(500 * time.Millisecond)
		synctest.Wait()
		st := taskState(t, ar, "web")
		require.Equal(t, taskrunner.StatePending, st.State)
		require.Equal(t, uint64(1), st.Restarts)
		restarting := findEvent(st, "Restarting")
		require.Equal(t, "Task restarting in 1s", restarting.DisplayMessage)
		require.Equal(t, "1000000000", restarting.Details["start_delay"])
		require.Equal(t, structs.AllocClientStatusPending, ar.Alloc().ClientStatus)

		<-ar.WaitCh()
		require.Equal(t, 3*10*time.Millisecond+2*time.Second, time.Since(began))
		got := ar.Alloc()
		require.Equal(t, structs.AllocClientStatusFailed, got.ClientStatus)
		st = got.TaskStates["web"]
		require.True(t, st.Failed)
		require.Equal(t, taskrunner.StateDead, st.State)
		require.Equal(t, uint64(2), st.Restarts)
		require.Equal(t, []string{"Started", "Terminated", "Restarting", "Started", "Terminated", "Not Restarting"}, eventTypes(st)[len(st.Events)-6:])
		nr := findEvent(st, "Not Restarting")
		require.True(t, nr.FailsTask)
		require.Equal(t, `Exceeded allowed attempts 2 in interval 1h0m0s and mode is "fail"`, nr.DisplayMessage)
		require.Equal(t, 1, findEvent(st, "Terminated").ExitCode)
		ar.Destroy()
	})
}

func TestSystemTaskExitZeroIsRestarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		job := newJob(structs.JobTypeSystem, mockTask("web", map[string]any{"run_for": "10ms"}))
		job.TaskGroups[0].RestartPolicy = &structs.RestartPolicy{Attempts: 1, Interval: time.Hour, Delay: time.Second, Mode: "fail"}
		ar := h.runner(newAlloc(job))
		go ar.Run()
		<-ar.WaitCh()
		st := taskState(t, ar, "web")
		require.Equal(t, uint64(1), st.Restarts, "a long-running task that exits 0 is restarted")
		require.True(t, st.Failed)
		require.Equal(t, structs.AllocClientStatusFailed, ar.Alloc().ClientStatus)
		ar.Destroy()
	})
}

func TestDesiredStopKillsWithKillTimeoutAndSignal(t *testing.T) {
	for name, tc := range map[string]struct {
		killAfter  string
		wantTook   time.Duration
		wantSignal syscall.Signal
	}{
		"task ignores the signal: SIGKILL at kill_timeout": {"10s", 2 * time.Second, syscall.SIGKILL},
		"task exits on the signal within kill_timeout":     {"300ms", 300 * time.Millisecond, syscall.SIGINT},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				task := mockTask("web", map[string]any{"kill_after": tc.killAfter})
				task.KillTimeout = 2 * time.Second
				task.KillSignal = "SIGINT"
				job := newJob(structs.JobTypeSystem, task)
				alloc := newAlloc(job)
				ar := h.runner(alloc)
				go ar.Run()
				time.Sleep(time.Minute)
				synctest.Wait()
				require.Equal(t, structs.AllocClientStatusRunning, ar.Alloc().ClientStatus)

				stop := alloc.Copy()
				stop.DesiredStatus = structs.AllocDesiredStatusStop
				stop.AllocModifyIndex++
				began := time.Now()
				ar.Update(stop) // does not block
				require.Zero(t, time.Since(began))
				<-ar.WaitCh()
				require.Equal(t, tc.wantTook, time.Since(began))

				got := ar.Alloc()
				require.Equal(t, structs.AllocClientStatusComplete, got.ClientStatus)
				require.Equal(t, structs.AllocDesiredStatusStop, got.DesiredStatus)
				st := got.TaskStates["web"]
				require.False(t, st.Failed)
				require.Equal(t, []string{"Killing", "Terminated", "Killed"}, eventTypes(st)[len(st.Events)-3:])
				killing := findEvent(st, "Killing")
				require.Equal(t, 2*time.Second, killing.KillTimeout)
				require.Equal(t, "Sent interrupt. Waiting 2s before force killing", killing.DisplayMessage)
				require.Equal(t, int(tc.wantSignal), findEvent(st, "Terminated").Signal)
				require.Equal(t, "gone", driverState(t, h.driver, alloc.ID+"/web"), "the driver forgot the task")
				ar.Destroy()
			})
		})
	}
}

func TestInPlaceUpdateKeepsTasksRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		job := newJob(structs.JobTypeSystem, mockTask("web", nil))
		alloc := newAlloc(job)
		ar := h.runner(alloc)
		go ar.Run()
		time.Sleep(time.Second)
		synctest.Wait()

		newJob := job.Copy()
		newJob.Version = 2
		newJob.Meta = map[string]string{"changed": "yes"}
		update := alloc.Copy()
		update.Job, update.JobVersion, update.AllocModifyIndex = newJob, 2, 11
		ar.Update(update)
		stale := alloc.Copy()
		stale.AllocModifyIndex = 5
		stale.DesiredStatus = structs.AllocDesiredStatusStop
		ar.Update(stale) // ignored
		time.Sleep(time.Second)
		synctest.Wait()

		got := ar.Alloc()
		require.Equal(t, uint64(2), got.JobVersion)
		require.Equal(t, uint64(2), got.Job.Version)
		require.Equal(t, structs.AllocDesiredStatusRun, got.DesiredStatus)
		require.Equal(t, structs.AllocClientStatusRunning, got.ClientStatus)
		require.Nil(t, findEvent(got.TaskStates["web"], "Killing"))
		require.Equal(t, drivers.TaskStateRunning, driverState(t, h.driver, alloc.ID+"/web"))
		ar.Destroy()
	})
}

func TestShutdownLeavesTasksRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		alloc := newAlloc(newJob(structs.JobTypeSystem, mockTask("web", nil)))
		ar := h.runner(alloc)
		go ar.Run()
		time.Sleep(time.Second)
		synctest.Wait()
		ar.Shutdown()
		<-ar.WaitCh()
		require.Equal(t, drivers.TaskStateRunning, driverState(t, h.driver, alloc.ID+"/web"))
		require.Equal(t, structs.AllocClientStatusRunning, ar.Alloc().ClientStatus)
		select {
		case <-ar.TasksExitedCh():
			t.Fatal("TasksExitedCh closed while tasks run")
		default:
		}
		// Destroy after Shutdown still gets rid of the task.
		ar.Destroy()
		require.Equal(t, "gone", driverState(t, h.driver, alloc.ID+"/web"))
	})
}

func TestDestroyRemovesDirAndStateIdempotently(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		alloc := newAlloc(newJob(structs.JobTypeSystem, mockTask("web", nil)))
		ar := h.runner(alloc)
		go ar.Run()
		time.Sleep(time.Second)
		synctest.Wait()
		require.Positive(t, h.db.Len())

		ar.Destroy()
		ar.Destroy()
		_, err := os.Stat(filepath.Join(h.root, alloc.ID))
		require.True(t, os.IsNotExist(err))
		require.Zero(t, h.db.Len())
		require.Equal(t, "gone", driverState(t, h.driver, alloc.ID+"/web"))
		<-ar.TasksExitedCh()
		require.Equal(t, structs.AllocClientStatusComplete, ar.Alloc().ClientStatus)
	})
}

func TestDestroyWithoutRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		alloc := newAlloc(newJob(structs.JobTypeSystem, mockTask("web", nil)))
		ar := h.runner(alloc)
		ar.Destroy()
		<-ar.WaitCh()
		st := taskState(t, ar, "web")
		require.Equal(t, taskrunner.StateDead, st.State)
		require.Nil(t, findEvent(st, "Started"))
		require.Zero(t, h.db.Len())
	})
}

func TestSiblingFailureKillsOtherTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		job := newJob(structs.JobTypeSystem,
			mockTask("main", nil),
			mockTask("bad", map[string]any{"run_for": "1s", "exit_code": 3}))
		ar := h.runner(newAlloc(job))
		go ar.Run()
		<-ar.WaitCh()
		got := ar.Alloc()
		require.Equal(t, structs.AllocClientStatusFailed, got.ClientStatus)
		require.True(t, got.TaskStates["bad"].Failed)
		main := got.TaskStates["main"]
		require.False(t, main.Failed)
		require.Equal(t, taskrunner.StateDead, main.State)
		sib := findEvent(main, "Sibling Task Failed")
		require.NotNil(t, sib)
		require.Equal(t, `Task's sibling "bad" failed`, sib.DisplayMessage)
		require.Equal(t, []string{"Sibling Task Failed", "Killing", "Terminated", "Killed"}, eventTypes(main)[len(main.Events)-4:])
		ar.Destroy()
	})
}

func TestLeaderDeathKillsOtherTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		leader := mockTask("leader", map[string]any{"run_for": "1s"})
		leader.Leader = true
		ar := h.runner(newAlloc(newJob(structs.JobTypeSysBatch, leader, mockTask("helper", nil))))
		go ar.Run()
		<-ar.WaitCh()
		got := ar.Alloc()
		require.Equal(t, structs.AllocClientStatusComplete, got.ClientStatus)
		require.NotNil(t, findEvent(got.TaskStates["helper"], "Leader Task Dead"))
		ar.Destroy()
	})
}

func TestMissingDriverFailsTheTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		task := mockTask("web", nil)
		task.Driver = "docker"
		ar := h.runner(newAlloc(newJob(structs.JobTypeSystem, task)))
		go ar.Run()
		<-ar.WaitCh()
		st := taskState(t, ar, "web")
		require.True(t, st.Failed)
		e := findEvent(st, "Driver Failure")
		require.NotNil(t, e)
		require.Contains(t, e.DriverError, `driver not found: "docker"`)
		require.Equal(t, structs.AllocClientStatusFailed, ar.Alloc().ClientStatus)
		ar.Destroy()
	})
}

func TestInvalidConfigFailsValidation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		ar := h.runner(newAlloc(newJob(structs.JobTypeSystem, mockTask("web", map[string]any{"run_forr": "1s"}))))
		go ar.Run()
		<-ar.WaitCh()
		st := taskState(t, ar, "web")
		require.True(t, st.Failed)
		e := findEvent(st, "Failed Validation")
		require.NotNil(t, e)
		require.Contains(t, e.DisplayMessage, "run_forr is not a known option")
		ar.Destroy()
	})
}

func TestUnrecoverableStartErrorFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		job := newJob(structs.JobTypeSystem, mockTask("web", map[string]any{"start_error": "no such binary"}))
		job.TaskGroups[0].RestartPolicy = &structs.RestartPolicy{Attempts: 5, Interval: time.Hour, Delay: time.Second, Mode: "fail"}
		ar := h.runner(newAlloc(job))
		go ar.Run()
		<-ar.WaitCh()
		st := taskState(t, ar, "web")
		require.True(t, st.Failed)
		require.Zero(t, st.Restarts)
		require.Equal(t, "no such binary", findEvent(st, "Driver Failure").DriverError)
		require.Equal(t, "Error was unrecoverable", findEvent(st, "Not Restarting").DisplayMessage)
		ar.Destroy()
	})
}

func TestSetupFailureFailsEveryTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		alloc := newAlloc(newJob(structs.JobTypeSystem, mockTask("a", nil), mockTask("b", nil)))
		// A file where the alloc dir should be.
		require.NoError(t, os.WriteFile(filepath.Join(h.root, alloc.ID), []byte("x"), 0o644))
		ar := h.runner(alloc)
		go ar.Run()
		<-ar.WaitCh()
		got := ar.Alloc()
		require.Equal(t, structs.AllocClientStatusFailed, got.ClientStatus)
		for _, name := range []string{"a", "b"} {
			e := findEvent(got.TaskStates[name], "Setup Failure")
			require.NotNil(t, e, name)
			require.Contains(t, e.SetupError, "alloc_dir")
		}
		ar.Destroy()
	})
}

func TestNewAllocRunnerValidates(t *testing.T) {
	h := newHarness(t)
	_, err := NewAllocRunner(nil)
	require.Error(t, err)
	_, err = NewAllocRunner(&Config{})
	require.ErrorContains(t, err, "Alloc is required")
	alloc := newAlloc(newJob(structs.JobTypeSystem, mockTask("web", nil)))
	cfg := h.config(alloc)
	cfg.StateDB, cfg.AllocRootDir = nil, ""
	_, err = NewAllocRunner(cfg)
	require.ErrorContains(t, err, "StateDB is required")
	require.ErrorContains(t, err, "AllocRootDir is required")
	alloc.TaskGroup = "nope"
	_, err = NewAllocRunner(h.config(alloc))
	require.ErrorContains(t, err, "not a group")
}

func TestAlreadyStoppedAllocNeverStarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		alloc := newAlloc(newJob(structs.JobTypeSystem, mockTask("web", nil)))
		alloc.DesiredStatus = structs.AllocDesiredStatusStop
		ar := h.runner(alloc)
		go ar.Run()
		<-ar.WaitCh()
		st := taskState(t, ar, "web")
		require.Equal(t, taskrunner.StateDead, st.State)
		require.Nil(t, findEvent(st, "Started"))
		require.Equal(t, structs.AllocClientStatusComplete, ar.Alloc().ClientStatus)
		ar.Destroy()
	})
}

// A stop whose desired transition says NoShutdownDelay kills at once; a
// plain stop waits the group's then the task's shutdown_delay. The
// network status is the node's address from the first report on.
func TestNoShutdownDelaySkipsDelays(t *testing.T) {
	for name, tc := range map[string]struct {
		noDelay  bool
		wantTook time.Duration
	}{
		"plain stop waits both delays": {false, 5 * time.Second},
		"no_shutdown_delay kills now":  {true, 0},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				task := mockTask("web", nil)
				task.ShutdownDelay = 3 * time.Second
				job := newJob(structs.JobTypeSystem, task)
				groupDelay := 2 * time.Second
				job.TaskGroups[0].ShutdownDelay = &groupDelay
				alloc := newAlloc(job)
				ar := h.runner(alloc)
				go ar.Run()
				time.Sleep(time.Minute)
				synctest.Wait()
				got := ar.Alloc()
				require.Equal(t, structs.AllocClientStatusRunning, got.ClientStatus)
				require.Equal(t, &structs.AllocNetworkStatus{Address: "10.0.0.1"}, got.NetworkStatus)

				stop := alloc.Copy()
				stop.DesiredStatus = structs.AllocDesiredStatusStop
				stop.DesiredTransition.NoShutdownDelay = tc.noDelay
				stop.AllocModifyIndex++
				began := time.Now()
				ar.Update(stop)
				<-ar.WaitCh()
				require.Equal(t, tc.wantTook, time.Since(began))
				ar.Destroy()
			})
		})
	}
}

// SkipShutdownDelays (the dev agent stopping its allocations on exit)
// makes Destroy kill at once, without the group's or the task's
// shutdown_delay; without it Destroy waits both.
func TestSkipShutdownDelaysMakesDestroyKillNow(t *testing.T) {
	for name, tc := range map[string]struct {
		skip     bool
		wantTook time.Duration
	}{
		"destroy waits both delays":   {false, 5 * time.Second},
		"skipped delays: destroy now": {true, 0},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				task := mockTask("web", nil)
				task.ShutdownDelay = 3 * time.Second
				job := newJob(structs.JobTypeSystem, task)
				groupDelay := 2 * time.Second
				job.TaskGroups[0].ShutdownDelay = &groupDelay
				ar := h.runner(newAlloc(job))
				go ar.Run()
				time.Sleep(time.Minute)
				synctest.Wait()
				require.Equal(t, structs.AllocClientStatusRunning, ar.Alloc().ClientStatus)

				if tc.skip {
					ar.SkipShutdownDelays()
				}
				began := time.Now()
				ar.Destroy()
				require.Equal(t, tc.wantTook, time.Since(began))
				require.Equal(t, structs.AllocClientStatusComplete, ar.Alloc().ClientStatus)
			})
		})
	}
}
