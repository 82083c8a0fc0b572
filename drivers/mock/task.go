package mock

import (
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/drivers/logrotate"
)

// killReq asks a running task to die: at once with sig, or, when the task
// has kill_after, after min(kill_after, timeout).
type killReq struct {
	sig     syscall.Signal
	timeout time.Duration
	now     bool // SIGKILL or a forced destroy: ignore kill_after
}

// task is one simulated task. Its goroutine (run) owns the lifecycle;
// result and completedAt are written once, before done is closed.
type task struct {
	id        string
	cfg       *drivers.TaskConfig
	mc        *taskConfig
	startedAt time.Time
	logger    hclog.Logger

	kill chan killReq
	done chan struct{}

	mu          sync.Mutex
	result      *drivers.ExitResult
	completedAt time.Time
	signals     []string
}

func newTask(cfg *drivers.TaskConfig, mc *taskConfig, startedAt time.Time, logger hclog.Logger) *task {
	return &task{
		id:        cfg.ID,
		cfg:       cfg,
		mc:        mc,
		startedAt: startedAt,
		logger:    logger,
		kill:      make(chan killReq),
		done:      make(chan struct{}),
	}
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
	t.mu.Lock()
	t.result = r
	t.completedAt = at
	t.mu.Unlock()
	close(t.done)
}

func (t *task) snapshot() (res *drivers.ExitResult, completedAt time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.result != nil {
		r := *t.result
		res = &r
	}
	return res, t.completedAt
}

func killed(sig syscall.Signal) *drivers.ExitResult {
	return &drivers.ExitResult{ExitCode: 128 + int(sig), Signal: int(sig)}
}

// run simulates the task until it exits: after remaining (when run_for is
// set), or when killed. repeats is how many more times stdout_string is
// written, every stdout_repeat_duration.
func (t *task) run(remaining time.Duration, repeats int) {
	var runC <-chan time.Time
	if t.mc.RunFor > 0 {
		timer := time.NewTimer(remaining)
		defer timer.Stop()
		runC = timer.C
	}
	var tickC <-chan time.Time
	if repeats > 0 && t.mc.StdoutRepeatDuration > 0 {
		ticker := time.NewTicker(t.mc.StdoutRepeatDuration)
		defer ticker.Stop()
		tickC = ticker.C
	} else {
		for ; repeats > 0; repeats-- {
			t.writeStdout()
		}
	}
	// exitWhenWritten: no run_for under CompatName; the task ends with its
	// output.
	exitWhenWritten := t.mc.RunFor <= 0 && t.mc.ExitWhenDone
	if exitWhenWritten && tickC == nil {
		t.finish(&drivers.ExitResult{ExitCode: t.mc.ExitCode}, time.Now())
		return
	}
	var dieC <-chan time.Time // set once a kill is pending
	var dieWith *drivers.ExitResult
	for {
		select {
		case <-runC:
			t.finish(&drivers.ExitResult{ExitCode: t.mc.ExitCode}, time.Now())
			return
		case <-tickC:
			t.writeStdout()
			if repeats--; repeats <= 0 {
				tickC = nil
				if exitWhenWritten {
					t.finish(&drivers.ExitResult{ExitCode: t.mc.ExitCode}, time.Now())
					return
				}
			}
		case k := <-t.kill:
			if k.now || t.mc.KillAfter == 0 {
				t.finish(killed(k.sig), time.Now())
				return
			}
			// Ignore the signal; exit late, or be SIGKILLed at the timeout.
			wait, res := t.mc.KillAfter, killed(k.sig)
			if k.timeout < wait {
				wait, res = k.timeout, killed(syscall.SIGKILL)
			}
			if dieC == nil {
				dieC, dieWith = time.After(wait), res
			}
		case <-dieC:
			t.finish(dieWith, time.Now())
			return
		}
	}
}

// stop asks the running task to die and waits until it has.
func (t *task) stop(k killReq) {
	select {
	case t.kill <- k:
	case <-t.done:
	}
	<-t.done
}

func (t *task) writeStdout() {
	if t.mc.StdoutString == "" || t.cfg.StdoutPath == "" {
		return
	}
	if err := appendLog(t.cfg.AllocDir, t.cfg.StdoutPath, t.cfg.LogLimits, t.mc.StdoutString); err != nil {
		t.logger.Warn("writing stdout_string", "task", t.id, "error", err)
	}
}

// appendLog appends s to the stream whose first log file is path, inside
// within (the allocation's shared dir; "": path's own dir).
func appendLog(within, path string, limits logrotate.Limits, s string) error {
	w, err := logrotate.OpenIn(within, path, limits)
	if err != nil {
		return err
	}
	_, err = w.Write([]byte(s))
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}
