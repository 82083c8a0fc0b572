package health

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

func TestObserveRestart(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	limit3 := CheckRestart{Limit: 3, Grace: 10 * time.Second}
	cases := []struct {
		name        string
		cr          CheckRestart
		failures    int
		status      string
		started     time.Time
		at          time.Time
		wantNext    int
		wantRestart bool
	}{
		{"disabled (limit 0)", CheckRestart{}, 5, StatusFailure, t0, t0.Add(time.Hour), 0, false},
		{"first failure counts", limit3, 0, StatusFailure, t0, t0.Add(time.Minute), 1, false},
		{"limit-th failure restarts and starts over", limit3, 2, StatusFailure, t0, t0.Add(time.Minute), 0, true},
		{"limit 1 restarts on the first failure", CheckRestart{Limit: 1}, 0, StatusFailure, t0, t0, 0, true},
		{"a pass resets", limit3, 2, StatusSuccess, t0, t0.Add(time.Minute), 0, false},
		{"a warning counts", limit3, 2, StatusWarning, t0, t0.Add(time.Minute), 0, true},
		{"an ignored warning resets", CheckRestart{Limit: 3, IgnoreWarnings: true}, 2, StatusWarning, t0, t0.Add(time.Minute), 0, false},
		{"pending changes nothing", limit3, 2, StatusPending, t0, t0.Add(time.Minute), 2, false},
		{"within grace does not count", limit3, 2, StatusFailure, t0, t0.Add(9 * time.Second), 0, false},
		{"at the end of grace counts", limit3, 0, StatusFailure, t0, t0.Add(10 * time.Second), 1, false},
		{"task not running does not count", limit3, 2, StatusFailure, time.Time{}, t0, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next, restart := ObserveRestart(tc.cr, tc.failures, tc.status, tc.started, tc.at)
			require.Equal(t, tc.wantNext, next)
			require.Equal(t, tc.wantRestart, restart)
		})
	}
	require.Equal(t, `health check: check "db" unhealthy`, RestartReason("db"))
}

// TestCheckerRestartsAfterLimit: the checker carries out check_restart:
// after grace, limit failures in a row restart the task, once; a task
// (re)start starts grace over.
func TestCheckerRestartsAfterLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		taskStart := start
		var restarts []time.Time
		var reasons []string
		c := NewChecker(CheckerConfig{
			Checks: []CheckDef{{ID: "x", Name: "db", Task: "app", Interval: 5 * time.Second,
				Restart: CheckRestart{Limit: 2, Grace: 12 * time.Second}}},
			Probe: func(context.Context, CheckDef) Outcome { return Outcome{Output: "down"} },
			TaskStarted: func(task string) time.Time {
				require.Equal(t, "app", task)
				mu.Lock()
				defer mu.Unlock()
				return taskStart
			},
			Restart: func(def CheckDef, reason string) {
				mu.Lock()
				defer mu.Unlock()
				restarts = append(restarts, time.Now())
				reasons = append(reasons, reason)
				taskStart = time.Now().Add(time.Second) // restarted a second later
			},
		}, start)
		c.Start(context.Background())
		defer c.Stop()
		// Probes at 0, 5, 10 (in grace), 15, 20 → restart at 20; then
		// grace until 33: 25, 30 do not count, 35, 40 → restart at 40.
		time.Sleep(41 * time.Second)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, []time.Time{start.Add(20 * time.Second), start.Add(40 * time.Second)}, restarts)
		require.Equal(t, []string{`health check: check "db" unhealthy`, `health check: check "db" unhealthy`}, reasons)
	})
}
