package health

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Script checks run their command inside the task, through the task
// driver's exec (as `alloc exec` does), with the check's timeout: exit 0
// passes, 1 is a warning, anything else (another code, a signal, a
// command that could not run, the timeout) fails.

// ErrTaskNotRunning is what a TaskExec returns when the task has no
// running process: the check is not run (Outcome.NotRun).
var ErrTaskNotRunning = errors.New("task not running")

// TaskExec runs command inside the named task of the allocation, writing
// its output (stdout and stderr, possibly from two goroutines) to out. It
// returns when the command exited or ctx ended (the command is then
// killed). err is for a command that could not be run: ErrTaskNotRunning
// (wrapped or not) when the task has no running process.
type TaskExec func(ctx context.Context, task string, command []string, out io.Writer) (ScriptExit, error)

// ScriptExit is how a script check's command ended.
type ScriptExit struct {
	ExitCode int
	Signal   int
}

// ScriptRun is everything known about one run of a script check.
type ScriptRun struct {
	Exit     ScriptExit
	Err      error // the command could not be run
	TimedOut bool  // the check's timeout ended the run
	Output   string
}

// ScriptOutcome maps a script check's run to its outcome (pure).
func ScriptOutcome(r ScriptRun, timeout time.Duration) Outcome {
	switch {
	case r.TimedOut:
		return Outcome{Output: fmt.Sprintf("check timed out after %s", timeout)}
	case errors.Is(r.Err, ErrTaskNotRunning):
		return Outcome{NotRun: true, Output: r.Err.Error()}
	case r.Err != nil:
		return Outcome{Output: fmt.Sprintf("running the check: %v", r.Err)}
	case r.Exit.Signal != 0:
		return Outcome{Output: joinOutput(fmt.Sprintf("killed by signal %d", r.Exit.Signal), r.Output)}
	case r.Exit.ExitCode == 0:
		return Outcome{Passing: true, Output: r.Output}
	case r.Exit.ExitCode == 1:
		return Outcome{Warning: true, Output: r.Output}
	}
	return Outcome{Output: joinOutput(fmt.Sprintf("exit code %d", r.Exit.ExitCode), r.Output)}
}

func joinOutput(what, output string) string {
	if output == "" {
		return what
	}
	return what + ": " + output
}

// ProbeWith returns a prober that runs script checks with exec and the
// others with network (nil: Probe).
func ProbeWith(exec TaskExec, network Prober) Prober {
	if network == nil {
		network = Probe
	}
	return func(ctx context.Context, c CheckDef) Outcome {
		if c.Type != CheckScript {
			return network(ctx, c)
		}
		if c.Err != "" {
			return Outcome{Output: c.Err}
		}
		if exec == nil {
			return Outcome{Output: "script checks cannot run here"}
		}
		var out boundedBuffer
		exit, err := exec(ctx, c.Task, c.Command, &out)
		run := ScriptRun{Exit: exit, Err: err, Output: strings.TrimSpace(out.String())}
		run.TimedOut = errors.Is(ctx.Err(), context.DeadlineExceeded)
		return ScriptOutcome(run, orDefault(c.Timeout, DefaultCheckTimeout))
	}
}

// boundedBuffer keeps the first maxOutput bytes written to it; it is safe
// for concurrent writers.
type boundedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := maxOutput - len(b.buf); room > 0 {
		b.buf = append(b.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (b *boundedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
