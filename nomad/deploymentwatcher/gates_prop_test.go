package deploymentwatcher

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/drover-project/drover/nomad/structs"
)

// TestGatesProperties drives a gated machine with random observations
// (allocations becoming healthy, the scheduler placing waves once the
// gates let it), ticks and gate answers, and checks:
//
//   - the deployment fails iff the metric gate failed more than its limit
//     (nothing else can fail it here: no unhealthy allocation, no
//     progress deadline);
//   - it succeeds only complete, and with a metric gate only when the
//     last evaluation passed;
//   - a gate pauses it only in answer to a result that is not a pass;
//   - PassedAt never decreases, never exceeds HealthyAllocs, and rises
//     only in answer to a pass;
//   - at most one call per gate is out at a time, and nothing is returned
//     after the machine is done.
//
// The simulated scheduler places a wave only when structs.GateHoldsWave,
// over the records the machine wrote, lets it, as the real one does.
func TestGatesProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		meta := map[string]string{}
		metric, hook := rapid.Bool().Draw(t, "metric"), rapid.Bool().Draw(t, "hook")
		if !metric && !hook {
			hook = true
		}
		limit := rapid.IntRange(0, 2).Draw(t, "limit")
		if metric {
			meta[structs.DroverMetaAnalysisQuery] = "errors"
			meta[structs.DroverMetaAnalysisCondition] = "< 1"
			meta[structs.DroverMetaAnalysisInterval] = "5s"
			meta[structs.DroverMetaAnalysisFailureLimit] = fmt.Sprint(limit)
		}
		if hook {
			meta[structs.DroverMetaGateWebhook] = hookURL
		}
		job := gateJob(1, meta)
		total := rapid.IntRange(1, 5).Draw(t, "total")
		waveSize := rapid.IntRange(1, 2).Draw(t, "wave")
		d := testDeployment(job)
		st := d.TaskGroups["web"]
		st.DesiredTotal, st.ProgressDeadline, st.RequireProgressBy = total, 0, time.Time{}

		// The cluster: allocations placed in waves; placed ones turn healthy.
		var allocs []*structs.Allocation
		place := func() {
			for n := 0; n < waveSize && len(allocs) < total; n++ {
				allocs = append(allocs, testAlloc(fmt.Sprintf("a%d", len(allocs)), unknown))
			}
		}
		place()
		now := t0
		m := NewMachine(d, job, now)
		metricOut, hookOut := false, false
		metricFails, lastMetric := 0, ""
		passedAt := 0
		outcome := ""
		observe := func() Event {
			c := m.Deployment().Copy()
			h := 0
			for _, a := range allocs {
				if a.DeploymentStatus.IsHealthy() {
					h++
				}
			}
			c.TaskGroups["web"].HealthyAllocs = h
			return AllocHealthChanged{Deployment: c, Allocs: append([]*structs.Allocation(nil), allocs...)}
		}
		ev := Event(Init{Allocs: allocs})
		for i := 0; i < 60; i++ {
			before := m.Deployment().Status
			effects, _ := m.Step(ev, now)
			var ans *GateAnswered
			if a, ok := ev.(GateAnswered); ok {
				ans = &a
				if a.Gate == structs.GateMetric {
					lastMetric = a.Result
					if a.Result == structs.GateResultFail {
						metricFails++
					}
				}
			}
			for _, e := range effects {
				switch e := e.(type) {
				case QueryMetric:
					if metricOut {
						t.Fatalf("a second metric query while one is out")
					}
					metricOut = true
				case CallWebhook:
					if hookOut {
						t.Fatalf("a second webhook call while one is out")
					}
					hookOut = true
				case UpdateStatus:
					if e.Status == structs.DeploymentStatusFailed || e.Status == structs.DeploymentStatusSuccessful {
						outcome = e.Status
					}
					switch e.Status {
					case structs.DeploymentStatusFailed:
						if !metric || metricFails <= limit {
							t.Fatalf("failed with %d metric failures, limit %d: %s", metricFails, limit, e.Description)
						}
					case structs.DeploymentStatusSuccessful:
						if h := m.Deployment().TaskGroups["web"].HealthyAllocs; h < total {
							t.Fatalf("succeeded at %d of %d healthy", h, total)
						}
						if metric && lastMetric != structs.GateResultPass {
							t.Fatalf("succeeded after a metric answer %q", lastMetric)
						}
					case structs.DeploymentStatusPaused:
						if before != structs.DeploymentStatusPaused && (ans == nil || ans.Result == structs.GateResultPass) {
							t.Fatalf("paused not in answer to a failing gate: %s", e.Description)
						}
					}
					if rec := e.Gates["web"]; rec != nil {
						if rec.PassedAt < passedAt {
							t.Fatalf("PassedAt went back from %d to %d", passedAt, rec.PassedAt)
						}
						if rec.PassedAt > passedAt && (ans == nil || ans.Result != structs.GateResultPass) {
							t.Fatalf("PassedAt rose not in answer to a pass")
						}
						if rec.PassedAt > m.Deployment().TaskGroups["web"].HealthyAllocs {
							t.Fatalf("PassedAt %d above HealthyAllocs", rec.PassedAt)
						}
						passedAt = rec.PassedAt
					}
				}
			}
			if metric && metricFails > limit && !m.Done() {
				t.Fatalf("%d metric failures (limit %d) and not done", metricFails, limit)
			}
			if m.Done() {
				if after, _ := m.Step(Tick{}, now.Add(time.Hour)); len(after) != 0 {
					t.Fatalf("effects after done: %v", after)
				}
				if metric && metricFails > limit && outcome != structs.DeploymentStatusFailed {
					t.Fatalf("done (%q) without failing after %d failures, limit %d", outcome, metricFails, limit)
				}
				return
			}
			// Next event.
			now = now.Add(time.Duration(rapid.IntRange(0, 6).Draw(t, fmt.Sprintf("dt%d", i))) * time.Second)
			switch rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("ev%d", i)) {
			case 0: // the gate answers
				results := []string{structs.GateResultPass, structs.GateResultPass, structs.GateResultFail, structs.GateResultInconclusive, structs.GateResultTimeout}
				switch {
				case metricOut && (!hookOut || rapid.Bool().Draw(t, fmt.Sprintf("which%d", i))):
					metricOut = false
					ev = answer(structs.GateMetric, rapid.SampledFrom(results).Draw(t, fmt.Sprintf("r%d", i)), "x")
				case hookOut:
					hookOut = false
					ev = answer(structs.GateWebhook, rapid.SampledFrom(results[:3]).Draw(t, fmt.Sprintf("r%d", i)), "x")
				default:
					ev = Tick{}
				}
			case 1: // an allocation becomes healthy
				for _, a := range allocs {
					if !a.DeploymentStatus.IsHealthy() {
						a.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: healthy}
						break
					}
				}
				ev = observe()
			case 2: // the scheduler runs: it places a wave only if the gates let it
				view := observe().(AllocHealthChanged)
				flying := 0
				for _, a := range allocs {
					if !a.DeploymentStatus.IsHealthy() {
						flying++
					}
				}
				if view.Deployment.Status == structs.DeploymentStatusRunning && flying == 0 &&
					!structs.GateHoldsWave(job.TaskGroups[0], view.Deployment.TaskGroups["web"]) {
					place()
				}
				ev = observe()
			default:
				ev = Tick{}
			}
		}
	})
}
