package restarts

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/nomad/structs"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func TestDecide(t *testing.T) {
	failPolicy := structs.RestartPolicy{Attempts: 2, Interval: 10 * time.Minute, Delay: 15 * time.Second, Mode: ModeFail}
	delayPolicy := failPolicy
	delayPolicy.Mode = ModeDelay
	exit0 := &drivers.ExitResult{}
	exit1 := &drivers.ExitResult{ExitCode: 1}
	killed := &drivers.ExitResult{ExitCode: 137, Signal: 9}
	unrecoverable := &drivers.ExitResult{Err: drivers.NewRecoverableError(errors.New("no such image"), false)}
	recoverable := &drivers.ExitResult{Err: drivers.NewRecoverableError(errors.New("registry busy"), true)}
	plainErr := &drivers.ExitResult{Err: errors.New("executor lost")}

	for _, tc := range []struct {
		name       string
		policy     structs.RestartPolicy
		jobType    string
		history    []time.Duration // offsets from t0
		exit       *drivers.ExitResult
		now        time.Duration
		wantAction string
		wantDelay  time.Duration
		wantReason string
	}{
		{"sysbatch success is done", failPolicy, structs.JobTypeSysBatch, nil, exit0, 0, ActionDone, 0, ReasonSuccess},
		{"sysbatch success is done even past attempts", failPolicy, structs.JobTypeSysBatch, []time.Duration{1, 2}, exit0, time.Minute, ActionDone, 0, ReasonSuccess},
		{"sysbatch failure restarts", failPolicy, structs.JobTypeSysBatch, nil, exit1, 0, ActionRestart, 15 * time.Second, ReasonWithinPolicy},
		{"system success restarts", failPolicy, structs.JobTypeSystem, nil, exit0, 0, ActionRestart, 15 * time.Second, ReasonWithinPolicy},
		{"system signal restarts", failPolicy, structs.JobTypeSystem, nil, killed, 0, ActionRestart, 15 * time.Second, ReasonWithinPolicy},
		{"second attempt", failPolicy, structs.JobTypeSystem, []time.Duration{0}, exit1, time.Minute, ActionRestart, 15 * time.Second, ReasonWithinPolicy},
		{"attempts exhausted, mode fail", failPolicy, structs.JobTypeSystem, []time.Duration{0, time.Minute}, exit1, 2 * time.Minute, ActionFail, 0,
			`Exceeded allowed attempts 2 in interval 10m0s and mode is "fail"`},
		{"old restarts left the window", failPolicy, structs.JobTypeSystem, []time.Duration{0, time.Minute}, exit1, 10*time.Minute + 1, ActionRestart, 15 * time.Second, ReasonWithinPolicy},
		{"restart exactly interval ago is outside", failPolicy, structs.JobTypeSystem, []time.Duration{0, time.Minute}, exit1, 10 * time.Minute, ActionRestart, 15 * time.Second, ReasonWithinPolicy},
		{"mode delay waits for the oldest to leave", delayPolicy, structs.JobTypeSystem, []time.Duration{0, time.Minute}, exit1, 2 * time.Minute, ActionRestart, 8 * time.Minute, ReasonDelay},
		{"mode delay never sooner than delay", delayPolicy, structs.JobTypeSystem, []time.Duration{0, time.Minute}, exit1, 10*time.Minute - time.Second, ActionRestart, 15 * time.Second, ReasonDelay},
		{"mode delay with more history than attempts", delayPolicy, structs.JobTypeSystem, []time.Duration{0, time.Minute, 3 * time.Minute}, exit1, 4 * time.Minute, ActionRestart, 7 * time.Minute, ReasonDelay},
		{"no attempts, mode fail", structs.RestartPolicy{Interval: time.Minute, Delay: time.Second, Mode: ModeFail}, structs.JobTypeSystem, nil, exit1, 0, ActionFail, 0, ReasonNoRestartsAllowed},
		{"no attempts, mode delay waits an interval", structs.RestartPolicy{Interval: time.Minute, Delay: time.Second, Mode: ModeDelay}, structs.JobTypeSystem, nil, exit1, 0, ActionRestart, time.Minute, ReasonDelay},
		{"unrecoverable start error fails", failPolicy, structs.JobTypeSystem, nil, unrecoverable, 0, ActionFail, 0, ReasonUnrecoverable},
		{"recoverable start error restarts", failPolicy, structs.JobTypeSystem, nil, recoverable, 0, ActionRestart, 15 * time.Second, ReasonWithinPolicy},
		{"plain driver error restarts", failPolicy, structs.JobTypeSysBatch, nil, plainErr, 0, ActionRestart, 15 * time.Second, ReasonWithinPolicy},
		{"nil exit is a failure", failPolicy, structs.JobTypeSysBatch, nil, nil, 0, ActionRestart, 15 * time.Second, ReasonWithinPolicy},
		{"OOM is a failure in sysbatch", failPolicy, structs.JobTypeSysBatch, nil, &drivers.ExitResult{OOMKilled: true}, 0, ActionRestart, 15 * time.Second, ReasonWithinPolicy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var history []time.Time
			for _, h := range tc.history {
				history = append(history, at(h))
			}
			got := Evaluate(tc.policy, tc.jobType, history, tc.exit, at(tc.now))
			require.Equal(t, Decision{Action: tc.wantAction, Delay: tc.wantDelay, Reason: tc.wantReason}, got)
			action, delay := Decide(tc.policy, tc.jobType, history, tc.exit, at(tc.now))
			require.Equal(t, tc.wantAction, action)
			require.Equal(t, tc.wantDelay, delay)
		})
	}
}

func TestTrackerRecordsRestarts(t *testing.T) {
	p := structs.RestartPolicy{Attempts: 2, Interval: time.Minute, Delay: 10 * time.Second, Mode: ModeFail}
	tr := NewTracker(p, structs.JobTypeSystem, nil)
	exit := &drivers.ExitResult{ExitCode: 1}
	d := tr.Next(exit, at(0))
	require.Equal(t, ActionRestart, d.Action)
	require.Equal(t, []time.Time{at(10 * time.Second)}, tr.History())
	require.Equal(t, ActionRestart, tr.Next(exit, at(20*time.Second)).Action)
	require.Equal(t, ActionFail, tr.Next(exit, at(40*time.Second)).Action)
	require.Len(t, tr.History(), 2, "a failure is not a restart")
	// Much later the old restarts are pruned.
	require.Equal(t, ActionRestart, tr.Next(exit, at(time.Hour)).Action)
	require.Equal(t, []time.Time{at(time.Hour + 10*time.Second)}, tr.History())
}

// TestNeverMoreThanAttemptsPerInterval checks the invariant of the package
// doc: following Tracker decisions, no interval ever holds more than
// attempts restarts.
func TestNeverMoreThanAttemptsPerInterval(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		p := structs.RestartPolicy{
			Attempts: rapid.IntRange(0, 5).Draw(rt, "attempts"),
			Interval: time.Duration(rapid.IntRange(1, 600).Draw(rt, "interval_s")) * time.Second,
			Delay:    time.Duration(rapid.IntRange(0, 60).Draw(rt, "delay_s")) * time.Second,
			Mode:     rapid.SampledFrom([]string{ModeFail, ModeDelay}).Draw(rt, "mode"),
		}
		tr := NewTracker(p, structs.JobTypeSystem, nil)
		now := t0
		var restarts []time.Time
		for i := range rapid.IntRange(1, 30).Draw(rt, "exits") {
			// The task runs for a while after each (re)start, then exits.
			now = now.Add(time.Duration(rapid.IntRange(0, 300).Draw(rt, "run_s")) * time.Second)
			d := tr.Next(&drivers.ExitResult{ExitCode: 1}, now)
			if d.Action == ActionFail {
				require.Equal(rt, ModeFail, p.Mode, "exit %d", i)
				return
			}
			require.Equal(rt, ActionRestart, d.Action)
			now = now.Add(d.Delay)
			restarts = append(restarts, now)
			if p.Attempts > 0 {
				require.GreaterOrEqual(rt, d.Delay, p.Delay)
			}
		}
		limit := max(p.Attempts, 1) // attempts 0 in delay mode: one per interval
		for i, r := range restarts {
			n := 0
			for _, o := range restarts[:i+1] {
				if o.After(r.Add(-p.Interval)) {
					n++
				}
			}
			require.LessOrEqual(rt, n, limit, "restarts within %v ending at #%d", p.Interval, i)
		}
	})
}

func TestLifecycleTasksOnSuccess(t *testing.T) {
	policy := structs.RestartPolicy{Attempts: 2, Interval: 10 * time.Minute, Delay: 15 * time.Second, Mode: ModeFail}
	exit0 := &drivers.ExitResult{}
	exit1 := &drivers.ExitResult{ExitCode: 1}
	prestart := &structs.TaskLifecycle{Hook: "prestart"}
	prestartSidecar := &structs.TaskLifecycle{Hook: "prestart", Sidecar: true}
	poststart := &structs.TaskLifecycle{Hook: "poststart"}
	poststartSidecar := &structs.TaskLifecycle{Hook: "poststart", Sidecar: true}
	poststop := &structs.TaskLifecycle{Hook: "poststop"}
	for _, tc := range []struct {
		name    string
		jobType string
		lc      *structs.TaskLifecycle
		exit    *drivers.ExitResult
		want    string
	}{
		{"service main success restarts", structs.JobTypeService, nil, exit0, ActionRestart},
		{"batch main success is done", structs.JobTypeBatch, nil, exit0, ActionDone},
		{"empty lifecycle block is a main task", structs.JobTypeService, &structs.TaskLifecycle{}, exit0, ActionRestart},
		{"service ephemeral prestart success is done", structs.JobTypeService, prestart, exit0, ActionDone},
		{"system ephemeral poststart success is done", structs.JobTypeSystem, poststart, exit0, ActionDone},
		{"service poststop success is done", structs.JobTypeService, poststop, exit0, ActionDone},
		{"batch prestart sidecar success restarts", structs.JobTypeBatch, prestartSidecar, exit0, ActionRestart},
		{"sysbatch poststart sidecar success restarts", structs.JobTypeSysBatch, poststartSidecar, exit0, ActionRestart},
		{"ephemeral prestart failure restarts per policy", structs.JobTypeService, prestart, exit1, ActionRestart},
		{"poststop failure restarts per policy", structs.JobTypeBatch, poststop, exit1, ActionRestart},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, EvaluateTask(policy, tc.jobType, tc.lc, nil, tc.exit, t0).Action)
			require.Equal(t, tc.want, NewTaskTracker(policy, tc.jobType, tc.lc, nil).Next(tc.exit, t0).Action)
		})
	}
	// Attempts still bound an ephemeral task that keeps failing.
	d := EvaluateTask(policy, structs.JobTypeService, prestart, []time.Time{at(0), at(time.Minute)}, exit1, at(2*time.Minute))
	require.Equal(t, ActionFail, d.Action)
}
