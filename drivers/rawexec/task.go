package rawexec

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/drover-project/drover/drivers"
)

// task is one task known to the driver. state, cfg and startedAt are set
// before the task is published; result and completedAt are written once,
// before done is closed, and read only after it is.
type task struct {
	id        string
	driver    string // the driver's name, recorded in handles
	cfg       *drivers.TaskConfig
	state     State
	startedAt time.Time

	done        chan struct{}
	result      *drivers.ExitResult
	completedAt time.Time
}

// exitFile is where the task's executor records its exit: the handle's
// ExitFile, or the task dir's legacy file for handles of older clients.
func (t *task) exitFile() string {
	if t.state.ExitFile != "" {
		return t.state.ExitFile
	}
	return filepath.Join(t.cfg.TaskDir, legacyExitFileName)
}

func (t *task) exited() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

func (t *task) finish(r *drivers.ExitResult, at time.Time) {
	t.result = r
	if at.IsZero() {
		at = time.Now()
	}
	t.completedAt = at
	close(t.done)
}

// resultCopy returns a copy of the result, so callers may keep it; call it
// only after done is closed.
func (t *task) resultCopy() *drivers.ExitResult {
	r := *t.result
	return &r
}

func (t *task) handle() (*drivers.TaskHandle, error) {
	b, err := json.Marshal(t.state)
	if err != nil {
		return nil, err
	}
	return &drivers.TaskHandle{
		Driver:      t.driver,
		TaskID:      t.id,
		Config:      t.cfg.Copy(),
		DriverState: b,
		StartedAt:   t.startedAt,
	}, nil
}

// signalGroup sends sig to the task's process group; a group that is
// already gone is not an error.
func (t *task) signalGroup(sig syscall.Signal) error {
	if t.state.TaskPGID <= 1 {
		return fmt.Errorf("raw_exec: task %s has no process group", t.id)
	}
	err := syscall.Kill(-t.state.TaskPGID, sig)
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("raw_exec: signalling task %s: %w", t.id, err)
	}
	return nil
}

// ownsRecord reports whether an exit record was written by this task's
// executor (not by an earlier run of the same task dir).
func (t *task) ownsRecord(rec exitRecord) bool {
	if rec.ExecutorPID != t.state.ExecutorPID {
		return false
	}
	return t.state.StartTime == 0 || rec.ExecutorStartTime == 0 || rec.ExecutorStartTime == t.state.StartTime
}

func (rec exitRecord) result() *drivers.ExitResult {
	r := &drivers.ExitResult{ExitCode: rec.ExitCode, Signal: rec.Signal, OOMKilled: rec.OOMKilled}
	if rec.Error != "" {
		r.Err = errors.New(rec.Error)
	}
	return r
}

// watchChild waits for an executor this process started, then collects the
// task's exit.
func (t *task) watchChild(cmd *exec.Cmd) {
	waitErr := cmd.Wait()
	t.collect(fmt.Sprintf("executor exited: %v", waitErr))
}

// watchRecovered polls a recovered executor until it is gone, then collects
// the task's exit.
func (t *task) watchRecovered() {
	for processAlive(t.state.ExecutorPID, t.state.StartTime) {
		time.Sleep(pollInterval)
	}
	t.collect("executor is gone")
}

// collect reads the exit file once the executor is gone. Without one (the
// executor was killed), it waits for the task itself to be gone and reports
// an unknown exit.
func (t *task) collect(why string) {
	rec, ok, err := readExitFile(t.exitFile())
	if err == nil && ok && t.ownsRecord(rec) {
		t.finish(rec.result(), rec.CompletedAt)
		return
	}
	for processAlive(t.state.TaskPID, t.state.TaskStartTime) {
		time.Sleep(pollInterval)
	}
	if err == nil {
		err = errors.New("no exit status recorded")
	}
	t.finish(&drivers.ExitResult{ExitCode: -1, Err: fmt.Errorf("raw_exec: %s: %w", why, err)}, time.Time{})
}
