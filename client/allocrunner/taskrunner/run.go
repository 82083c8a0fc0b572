package taskrunner

import (
	"context"
	"errors"
	"time"

	"github.com/drover-project/drover/client/allocrunner/restarts"
	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/nomad/structs"
)

// Run supervises the task until it is dead, or until Shutdown (leaving it
// running). It starts the task once its Gate is open (preparing it first if
// the alloc runner has not), or waits for the task Restore reattached to;
// after each exit it applies the restart policy. With KeepAfterDone, a task
// that completed successfully waits for ForceRestart (run again) or Kill.
// Call it once, in a goroutine; a second call waits for the first.
func (tr *TaskRunner) Run() {
	tr.mu.Lock()
	if tr.runStarted {
		tr.mu.Unlock()
		<-tr.waitCh
		return
	}
	tr.runStarted = true
	recoverErr := tr.recoverErr
	tr.recoverErr = nil
	tr.mu.Unlock()
	defer close(tr.waitCh)
	defer tr.templates.stop() // after cancel: a change script under way ends
	defer tr.cancel()
	if tr.renew != nil {
		go tr.renewIdentities(tr.ctx)
	}

	for {
		tr.runUntilDead(recoverErr)
		recoverErr = nil
		if !tr.waitRerun() {
			return
		}
	}
}

// runUntilDead runs the task until it is dead or Run must return.
func (tr *TaskRunner) runUntilDead(recoverErr error) {
	var exit *drivers.ExitResult
	var exitEvent *structs.TaskEvent
	if recoverErr != nil {
		// The task left running could not be reattached: it counts as a
		// failed exit, so the restart policy decides.
		exit = &drivers.ExitResult{Err: drivers.NewRecoverableError(recoverErr, true)}
	}
	for !tr.isDead() {
		if exit == nil {
			var stop bool
			exit, exitEvent, stop = tr.runOnce()
			if stop {
				return
			}
			if errors.Is(exit.Err, errUserRestart) {
				exit, exitEvent = nil, nil // recorded; start again now
				continue
			}
			// The task ended by itself: a restart asked meanwhile is moot.
			select {
			case <-tr.restartCh:
				tr.takeCheckRestart()
			default:
			}
		}
		if !tr.handleExit(exit, exitEvent) {
			return
		}
		exit, exitEvent = nil, nil
	}
}

// runOnce starts the task (unless one is attached) and waits until it
// exits. It returns the exit and the event reporting it (Terminated, or
// Driver Failure when the start failed); stop is set when Run must return
// (the task was killed, failed to prepare, or the runner is shutting down).
func (tr *TaskRunner) runOnce() (exit *drivers.ExitResult, ev *structs.TaskEvent, stop bool) {
	if !tr.attached() {
		switch {
		case tr.shuttingDown():
			return nil, nil, true
		case tr.killed():
			tr.finishKilled()
			return nil, nil, true
		}
		if !tr.waitGate() {
			return nil, nil, true
		}
		if err := tr.Prepare(tr.ctx); err != nil {
			if tr.killed() && !tr.shuttingDown() {
				tr.finishKilled()
			}
			return nil, nil, true
		}
		// Prestart hooks, in order, before every start: artifacts (the
		// prestart list), then templates, which may read what they fetched.
		if exit, ev, stop := tr.runPrestart(); exit != nil || stop {
			return exit, ev, stop
		}
		if !tr.templates.prestart() {
			if tr.killed() && !tr.shuttingDown() {
				tr.finishKilled()
			}
			return nil, nil, true
		}
		if err := tr.start(); err != nil {
			ev := NewDriverFailure(tr.now(), err)
			ev.FailsTask = !drivers.IsRecoverable(err)
			ev.Details[DetailFailsTask] = boolString(ev.FailsTask)
			return &drivers.ExitResult{Err: err}, ev, false
		}
		tr.templates.poststart()
	} else {
		tr.templates.restored() // reattached: watch the templates again
	}
	return tr.waitExit()
}

// waitGate waits until the task's gate is open. It reports false when the
// task was killed meanwhile (then marked dead) or the runner shuts down.
func (tr *TaskRunner) waitGate() bool {
	if tr.gate != nil {
		select {
		case <-tr.gate.opened():
		case <-tr.killCh:
		case <-tr.shutdownCh:
		}
	}
	switch {
	case tr.shuttingDown():
		return false
	case tr.killed():
		tr.finishKilled()
		return false
	}
	return true
}

// waitRerun keeps a runner with KeepAfterDone whose task completed
// successfully until ForceRestart (it records the restart and reports
// true: run again), Kill or Shutdown (false).
func (tr *TaskRunner) waitRerun() bool {
	if !tr.keepAfterDone || tr.killed() || tr.shuttingDown() {
		return false
	}
	if st := tr.State(); st.State != StateDead || st.Failed {
		return false
	}
	select {
	case <-tr.rerunCh:
	case <-tr.killCh:
		return false
	case <-tr.shutdownCh:
		return false
	}
	now := tr.now()
	tr.update(func(st *structs.TaskState) bool {
		appendEvent(st, newEvent(EventRestartSignal, now, "User requested task to restart"))
		appendEvent(st, eventRestarting(now, 0, "User requested restart"))
		st.State = StatePending
		st.Restarts++
		st.LastRestart = now
		return true
	})
	return true
}

func (tr *TaskRunner) attached() bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.handle != nil
}

// start starts the task and persists its handle. A start error that is not
// marked recoverable is returned as unrecoverable (Nomad's rule).
func (tr *TaskRunner) start() error {
	cfg, err := tr.buildTaskConfig()
	if err == nil {
		var h *drivers.TaskHandle
		if h, err = tr.driver.StartTask(cfg); err == nil {
			if h.TaskID == "" {
				h.TaskID = cfg.ID
			}
			tr.attach(h)
			return nil
		}
	}
	var re *drivers.RecoverableError
	if !errors.As(err, &re) {
		err = drivers.NewRecoverableError(err, false)
	}
	tr.logger.Warn("task failed to start", "error", err, "recoverable", drivers.IsRecoverable(err))
	return err
}

// attach records a started task: the handle first (so a client restart
// finds it), then the running state.
func (tr *TaskRunner) attach(h *drivers.TaskHandle) {
	if err := tr.db.PutTaskHandle(tr.allocID, tr.name, h); err != nil {
		tr.logger.Error("persisting task handle; the task cannot be recovered after a client restart", "error", err)
	}
	tr.mu.Lock()
	tr.handle = h
	tr.mu.Unlock()
	now := tr.now()
	tr.update(func(st *structs.TaskState) bool {
		appendEvent(st, eventStarted(now))
		st.State = StateRunning
		st.StartedAt = now
		st.FinishedAt = time.Time{}
		return true
	})
}

// detach forgets the exited task: in the state DB (so a restarted client
// does not try to recover it) and in the driver (so its ID can be reused).
func (tr *TaskRunner) detach() {
	tr.mu.Lock()
	h := tr.handle
	tr.handle = nil
	tr.mu.Unlock()
	if h == nil {
		return
	}
	if err := tr.db.PutTaskHandle(tr.allocID, tr.name, nil); err != nil {
		tr.logger.Error("clearing task handle", "error", err)
	}
	if err := tr.driver.DestroyTask(h.TaskID, false); err != nil && !errors.Is(err, drivers.ErrTaskNotFound) {
		tr.logger.Warn("destroying exited task; forcing", "error", err)
		_ = tr.driver.DestroyTask(h.TaskID, true)
	}
}

// waitExit waits until the attached task exits, is killed or the runner
// shuts down.
func (tr *TaskRunner) waitExit() (exit *drivers.ExitResult, ev *structs.TaskEvent, stop bool) {
	tr.mu.Lock()
	h := tr.handle
	tr.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := tr.driver.WaitTask(ctx, h.TaskID)
	if err != nil {
		res := &drivers.ExitResult{Err: err}
		tr.detach()
		return res, eventTerminated(tr.now(), res), false
	}
	select {
	case res, ok := <-ch:
		if !ok || res == nil {
			res = &drivers.ExitResult{Err: errors.New("driver returned no exit result")}
		}
		tr.detach()
		return res, eventTerminated(tr.now(), res), false
	case <-tr.killCh:
		tr.killRunning(h, ch)
		return nil, nil, true
	case <-tr.shutdownCh:
		return nil, nil, true
	case <-tr.restartCh:
		if reason := tr.takeCheckRestart(); reason != "" {
			exit, ev := tr.stopUnhealthy(h, ch, reason)
			return exit, ev, false
		}
		return tr.stopForRestart(h, ch), nil, false
	}
}

// killRunning stops the attached task with its kill signal and timeout,
// after its shutdown delay, and marks it dead. On Shutdown it gives up and
// leaves the task as it is.
func (tr *TaskRunner) killRunning(h *drivers.TaskHandle, ch <-chan *drivers.ExitResult) {
	task := tr.Task()
	reason := tr.takeKillReason()
	if reason != nil {
		tr.emit(reason)
	}
	tr.mu.Lock()
	noDelay := tr.noDelay
	tr.mu.Unlock()
	if d := task.ShutdownDelay; d > 0 && !noDelay {
		tr.emit(eventShutdownDelay(tr.now(), d))
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-tr.shutdownCh:
			t.Stop()
			return
		}
	}
	timeout := task.KillTimeout
	if timeout <= 0 {
		timeout = DefaultKillTimeout
	}
	reasonText := ""
	if reason != nil {
		reasonText = reason.DisplayMessage
	}
	tr.emit(eventKilling(tr.now(), timeout, reasonText))
	var res *drivers.ExitResult
	if err := tr.driver.StopTask(h.TaskID, timeout, task.KillSignal); err != nil {
		tr.logger.Warn("stopping task", "error", err)
		if !errors.Is(err, drivers.ErrTaskNotFound) {
			_ = tr.driver.DestroyTask(h.TaskID, true)
		}
	} else {
		// StopTask returned: the task has exited and ch yields its result.
		select {
		case r, ok := <-ch:
			if ok {
				res = r
			}
		case <-tr.shutdownCh:
			return
		}
	}
	tr.detach()
	now := tr.now()
	tr.update(func(st *structs.TaskState) bool {
		var term *structs.TaskEvent
		if res != nil {
			term = eventTerminated(now, res)
		}
		tr.setDead(st, reason != nil && reason.FailsTask, term, eventKilled(now))
		return true
	})
}

// finishKilled marks a task that is not running dead after Kill: one that
// never started, or one waiting to restart.
func (tr *TaskRunner) finishKilled() {
	reason := tr.takeKillReason()
	now := tr.now()
	tr.update(func(st *structs.TaskState) bool {
		if st.State == StateDead {
			return false
		}
		var killed *structs.TaskEvent
		if !st.StartedAt.IsZero() {
			killed = eventKilled(now)
		}
		tr.setDead(st, reason != nil && reason.FailsTask, reason, killed)
		return true
	})
}

func (tr *TaskRunner) takeKillReason() *structs.TaskEvent {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	r := tr.killReason
	tr.killReason = nil
	return r
}

// handleExit records how the task ended (ev) with what the restart policy
// decided, in one state change, and waits out a restart delay. It reports
// whether Run should start the task again.
func (tr *TaskRunner) handleExit(exit *drivers.ExitResult, ev *structs.TaskEvent) bool {
	d := tr.decide(exit)
	now := tr.now()
	tr.logger.Debug("task exited", "exit", exit.String(), "action", d.Action, "delay", d.Delay, "reason", d.Reason)
	switch d.Action {
	case restarts.ActionDone:
		tr.update(func(st *structs.TaskState) bool {
			tr.setDead(st, false, ev)
			return true
		})
		return false
	case restarts.ActionFail:
		tr.update(func(st *structs.TaskState) bool {
			tr.setDead(st, true, ev, eventNotRestarting(now, d.Reason))
			return true
		})
		return false
	}
	tr.update(func(st *structs.TaskState) bool {
		if ev != nil {
			appendEvent(st, ev)
		}
		appendEvent(st, eventRestarting(now, d.Delay, d.Reason))
		st.State = StatePending
		st.Restarts++
		st.LastRestart = now
		return true
	})
	t := time.NewTimer(d.Delay)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-tr.killCh:
		tr.finishKilled()
		return false
	case <-tr.shutdownCh:
		return false
	}
}

// decide asks the restart tracker, after adopting a policy from Update.
func (tr *TaskRunner) decide(exit *drivers.ExitResult) restarts.Decision {
	tr.mu.Lock()
	if p := tr.pendingPolicy; p != nil {
		tr.tracker.SetPolicy(*p)
		tr.pendingPolicy = nil
	}
	tr.mu.Unlock()
	return tr.tracker.Next(exit, tr.now())
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
