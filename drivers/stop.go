package drivers

import (
	"errors"
	"syscall"
	"time"
)

// ErrStillRunning is returned by StopEscalating when a task has not exited
// even after SIGKILL.
var ErrStillRunning = errors.New("drivers: task did not exit after SIGKILL")

// StopEscalating stops a task the way every driver's StopTask must: send
// sig, wait up to timeout for done to close, then send SIGKILL and wait up
// to killWait. It reports whether it had to escalate to SIGKILL, and returns
// nil once done is closed, send's error, or ErrStillRunning.
func StopEscalating(done <-chan struct{}, sig syscall.Signal, timeout, killWait time.Duration,
	send func(syscall.Signal) error) (escalated bool, err error) {
	if err := send(sig); err != nil {
		return false, err
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-done:
		return false, nil
	case <-timer.C:
	}
	if err := send(syscall.SIGKILL); err != nil {
		return true, err
	}
	select {
	case <-done:
		return true, nil
	case <-time.After(killWait):
		return true, ErrStillRunning
	}
}
