package health

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

func TestScriptOutcome(t *testing.T) {
	cases := []struct {
		name string
		run  ScriptRun
		want Outcome
	}{
		{"exit 0 passes", ScriptRun{Output: "ok"}, Outcome{Passing: true, Output: "ok"}},
		{"exit 1 is a warning", ScriptRun{Exit: ScriptExit{ExitCode: 1}, Output: "lagging"}, Outcome{Warning: true, Output: "lagging"}},
		{"exit 2 fails", ScriptRun{Exit: ScriptExit{ExitCode: 2}, Output: "down"}, Outcome{Output: "exit code 2: down"}},
		{"exit 127 fails", ScriptRun{Exit: ScriptExit{ExitCode: 127}}, Outcome{Output: "exit code 127"}},
		{"a signal fails", ScriptRun{Exit: ScriptExit{Signal: 9}}, Outcome{Output: "killed by signal 9"}},
		{"the timeout fails", ScriptRun{TimedOut: true, Exit: ScriptExit{Signal: 9}, Output: "half"},
			Outcome{Output: "check timed out after 2s"}},
		{"a command that cannot run fails", ScriptRun{Err: errors.New(`exec: "/nope": no such file`)},
			Outcome{Output: `running the check: exec: "/nope": no such file`}},
		{"a task not running is not run", ScriptRun{Err: fmt.Errorf("task %q: %w", "app", ErrTaskNotRunning)},
			Outcome{NotRun: true, Output: `task "app": task not running`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ScriptOutcome(tc.run, 2*time.Second)
			require.Equal(t, tc.want, got)
		})
	}
	require.Equal(t, StatusSuccess, Outcome{Passing: true}.status())
	require.Equal(t, StatusWarning, Outcome{Warning: true}.status())
	require.Equal(t, StatusFailure, Outcome{}.status())
}

func TestProbeWith(t *testing.T) {
	var gotTask string
	var gotCmd []string
	exec := func(ctx context.Context, task string, cmd []string, out io.Writer) (ScriptExit, error) {
		gotTask, gotCmd = task, cmd
		switch cmd[0] {
		case "slow":
			<-ctx.Done()
			return ScriptExit{Signal: 9}, nil
		case "warn":
			_, _ = io.WriteString(out, strings.Repeat("w", 2*maxOutput))
			return ScriptExit{ExitCode: 1}, nil
		}
		_, _ = io.WriteString(out, " fine\n")
		return ScriptExit{}, nil
	}
	network := func(context.Context, CheckDef) Outcome { return Outcome{Output: "network"} }
	probe := ProbeWith(exec, network)

	out := probe(context.Background(), CheckDef{Type: CheckScript, Task: "app", Command: []string{"/bin/check", "-v"}})
	require.Equal(t, Outcome{Passing: true, Output: "fine"}, out)
	require.Equal(t, "app", gotTask)
	require.Equal(t, []string{"/bin/check", "-v"}, gotCmd)

	out = probe(context.Background(), CheckDef{Type: CheckScript, Task: "app", Command: []string{"warn"}})
	require.True(t, out.Warning)
	require.Len(t, out.Output, maxOutput, "output is bounded")

	require.Equal(t, Outcome{Output: "network"}, probe(context.Background(), CheckDef{Type: CheckHTTP}))
	require.Equal(t, Outcome{Output: "script check has no task to run in"},
		probe(context.Background(), CheckDef{Type: CheckScript, Err: "script check has no task to run in"}))

	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		out := probe(ctx, CheckDef{Type: CheckScript, Task: "app", Command: []string{"slow"}, Timeout: time.Second})
		require.Equal(t, Outcome{Output: "check timed out after 1s"}, out)
	})
}

// TestCheckerScriptWaitsForItsTask: a script check whose task is not
// running records nothing and runs again as soon as Wake says a task
// state changed, not only at the next interval.
func TestCheckerScriptWaitsForItsTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		running := false
		var runs []time.Time
		exec := func(ctx context.Context, task string, cmd []string, out io.Writer) (ScriptExit, error) {
			mu.Lock()
			defer mu.Unlock()
			runs = append(runs, time.Now())
			if !running {
				return ScriptExit{}, ErrTaskNotRunning
			}
			return ScriptExit{ExitCode: 2}, nil
		}
		start := time.Now()
		c := NewChecker(CheckerConfig{
			Checks: []CheckDef{{ID: "s", Name: "s", Type: CheckScript, Task: "app", Command: []string{"x"}, Interval: time.Minute, Timeout: time.Second}},
			Probe:  ProbeWith(exec, nil),
		}, start)
		c.Start(context.Background())
		defer c.Stop()
		synctest.Wait()
		require.Equal(t, StatusPending, c.Results()[0].Status, "not run: still pending")

		time.Sleep(5 * time.Second)
		mu.Lock()
		running = true
		mu.Unlock()
		c.Wake()
		synctest.Wait()
		r := c.Results()[0]
		require.Equal(t, StatusFailure, r.Status)
		require.Equal(t, "exit code 2", r.Output)
		require.Equal(t, start.Add(5*time.Second), r.Timestamp, "ran on Wake")

		c.Wake() // the check ran: Wake does not make it run again
		time.Sleep(30 * time.Second)
		synctest.Wait()
		mu.Lock()
		require.Equal(t, []time.Time{start, start.Add(5 * time.Second)}, runs)
		mu.Unlock()
	})
}

// TestCheckerWarningAndIgnoreWarnings: a warning is its own status;
// with on_update "ignore_warnings" it counts as healthy for deployments.
func TestCheckerWarningAndIgnoreWarnings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := &scriptedProber{answer: func(id string, now time.Time) Outcome {
			if now.Sub(start) >= 10*time.Second {
				return Outcome{Passing: true}
			}
			return Outcome{Warning: true, Output: "slow replica"}
		}}
		c := NewChecker(CheckerConfig{Checks: []CheckDef{
			{ID: "a", Interval: 10 * time.Second},
			{ID: "b", Interval: 10 * time.Second, IgnoreWarnings: true},
		}, Probe: p.probe}, start)
		c.Start(context.Background())
		defer c.Stop()
		time.Sleep(time.Second)
		synctest.Wait()
		res := c.Results()
		require.Equal(t, StatusWarning, res[0].Status)
		require.False(t, res[0].Healthy)
		require.Equal(t, StatusWarning, res[1].Status)
		require.True(t, res[1].Healthy)
		require.Equal(t, start, res[1].HealthySince)

		time.Sleep(10 * time.Second)
		synctest.Wait()
		res = c.Results()
		require.True(t, res[0].Healthy)
		require.Equal(t, start.Add(10*time.Second), res[0].HealthySince)
		require.Equal(t, start.Add(10*time.Second), res[1].Since, "the status changed")
		require.Equal(t, start, res[1].HealthySince, "healthy all along")
	})
}
