package deploymentwatcher

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

const hookURL = "http://gate.example/hook"

// gateJob returns testJob(v) whose group "web" has the gates meta asks for.
func gateJob(v uint64, meta map[string]string) *structs.Job {
	job := testJob(v, "nginx:2")
	job.TaskGroups[0].Meta = meta
	return job
}

var (
	hookMeta   = map[string]string{structs.DroverMetaGateWebhook: hookURL}
	metricMeta = map[string]string{
		structs.DroverMetaAnalysisQuery:        `max(errors{version="$version"})`,
		structs.DroverMetaAnalysisCondition:    "< 0.01",
		structs.DroverMetaAnalysisInterval:     "10s",
		structs.DroverMetaAnalysisFailureLimit: "1",
	}
)

// healthyOn returns a healthy allocation id of group "web" on node.
func healthyOn(id, node string) *structs.Allocation {
	a := testAlloc(id, healthy)
	a.NodeID = node
	return a
}

// gated starts a machine for job at t0 on d with allocs and returns it
// with Init's effects and wake time.
func gated(t *testing.T, job *structs.Job, d *structs.Deployment, allocs ...*structs.Allocation) (*Machine, []Effect, time.Time) {
	t.Helper()
	m := NewMachine(d, job, t0)
	effects, wake := m.Step(Init{Allocs: allocs}, t0)
	return m, effects, wake
}

func answer(gate, result, reason string) GateAnswered {
	return GateAnswered{Group: "web", Gate: gate, Result: result, Reason: reason}
}

// ofType returns the effects of type T.
func ofType[T Effect](effects []Effect) []T {
	var out []T
	for _, e := range effects {
		if x, ok := e.(T); ok {
			out = append(out, x)
		}
	}
	return out
}

func TestGateWebhookBeforeWave(t *testing.T) {
	job := gateJob(1, hookMeta)
	d := withHealthy(testDeployment(job), 1)
	m, effects, _ := gated(t, job, d, healthyOn("a1", nodeA))

	// The first wave is done: a checkpoint, recorded, and the webhook
	// asked (Init also asks for the evaluation an old leader may have
	// missed; the scheduler holds the wave).
	require.Len(t, effects, 3, "%#v", effects)
	require.Equal(t, evalFor, effects[2])
	upd := effects[0].(UpdateStatus)
	require.Equal(t, structs.DeploymentStatusRunning, upd.Status)
	require.Equal(t, "wave 2", upd.Gates["web"].Checkpoint)
	require.Equal(t, structs.GateResultPending, upd.Gates["web"].Result)
	call := effects[1].(CallWebhook)
	require.Equal(t, hookURL, call.URL)
	require.Equal(t, WebhookBody{Job: "web", Namespace: "default", Version: 1, DeploymentID: "d1", Group: "web",
		Checkpoint: "wave", Wave: 2, NodeIDs: []string{nodeA}, Attempt: 1}, call.Body)

	// 503: paused, saying so; retried with backoff.
	effects, wake := m.Step(answer(structs.GateWebhook, structs.GateResultFail, "answered 503: busy"), at(time.Second))
	require.Len(t, effects, 1)
	upd = effects[0].(UpdateStatus)
	require.Equal(t, structs.DeploymentStatusPaused, upd.Status)
	require.Equal(t, `Deployment paused: webhook gate of group "web" before wave 2: answered 503: busy`, upd.Description)
	require.Equal(t, structs.GateWebhook, upd.Gates["web"].PausedBy)
	require.Equal(t, at(2*time.Second), wake, "first retry after 1s")

	effects, _ = m.Step(Tick{}, at(2*time.Second))
	require.Equal(t, 2, ofType[CallWebhook](effects)[0].Body.Attempt)
	effects, wake = m.Step(answer(structs.GateWebhook, structs.GateResultFail, "answered 503: busy"), at(2*time.Second))
	require.Empty(t, effects, "the same answer writes nothing")
	require.Equal(t, at(4*time.Second), wake, "then after 2s")

	// 200: resumed, the wave passes at 1 healthy, the scheduler is asked.
	effects, _ = m.Step(Tick{}, at(4*time.Second))
	require.Len(t, ofType[CallWebhook](effects), 1)
	effects, _ = m.Step(answer(structs.GateWebhook, structs.GateResultPass, "answered 200"), at(4*time.Second))
	require.Len(t, effects, 2, "%#v", effects)
	upd = effects[0].(UpdateStatus)
	require.Equal(t, structs.DeploymentStatusRunning, upd.Status)
	require.Equal(t, structs.DeploymentStatusDescriptionRunning, upd.Description)
	rec := upd.Gates["web"]
	require.Equal(t, 1, rec.PassedAt)
	require.Equal(t, 1, rec.Passed)
	require.Empty(t, rec.PausedBy)
	require.Equal(t, evalFor, effects[1])

	// The echo of its own write changes nothing; a later tick asks nothing.
	echo := m.Deployment().Copy()
	effects, wake = m.Step(AllocHealthChanged{Deployment: echo, Allocs: []*structs.Allocation{healthyOn("a1", nodeA)}}, at(5*time.Second))
	require.Empty(t, effects)
	require.Equal(t, at(4*time.Second+pd), wake, "only the progress deadline, restarted by the resume")
}

func TestGateWaveInFlightIsNoCheckpoint(t *testing.T) {
	job := gateJob(1, hookMeta)
	d := withHealthy(testDeployment(job), 1)
	_, effects, _ := gated(t, job, d, healthyOn("a1", nodeA), testAlloc("a2", unknown))
	require.Empty(t, ofType[CallWebhook](effects), "a wave is still in flight")

	// The first wave, before anything is healthy, is not gated either.
	_, effects, _ = gated(t, job, testDeployment(job), testAlloc("a1", unknown))
	require.Empty(t, effects)
}

func TestGateMetricFailureLimitFails(t *testing.T) {
	job := gateJob(1, metricMeta)
	m, effects, wake := gated(t, job, testDeployment(job), testAlloc("a1", unknown))
	require.Empty(t, effects)
	require.Equal(t, at(10*time.Second), wake, "first evaluation one interval in")

	effects, _ = m.Step(Tick{}, at(10*time.Second))
	require.Equal(t, []Effect{QueryMetric{Group: "web", Query: `max(errors{version="1"})`, Condition: structs.AnalysisCondition{Op: "<", Value: 0.01}}}, effects)
	effects, wake = m.Step(answer(structs.GateMetric, structs.GateResultFail, "value 0.5 is not < 0.01"), at(11*time.Second))
	require.Len(t, effects, 1, "one failure is within the limit of 1: recorded")
	upd := effects[0].(UpdateStatus)
	require.Equal(t, structs.DeploymentStatusRunning, upd.Status)
	require.Equal(t, 1, upd.Gates["web"].Failures)
	require.Equal(t, at(21*time.Second), wake)

	_, _ = m.Step(Tick{}, at(21*time.Second))
	effects, _ = m.Step(answer(structs.GateMetric, structs.GateResultFail, "value 0.5 is not < 0.01"), at(21*time.Second))
	require.Len(t, effects, 3)
	upd = effects[0].(UpdateStatus)
	require.Equal(t, structs.DeploymentStatusFailed, upd.Status)
	require.Equal(t, `Deployment failed: metric gate of group "web": value 0.5 is not < 0.01 (2 failed evaluations, limit 1) - no stable job version to auto revert to`[:len(upd.Description)], upd.Description)
	require.True(t, m.Done())
}

func TestGateMetricFailureRevertsLikeAnyFailure(t *testing.T) {
	job := gateJob(2, map[string]string{
		structs.DroverMetaAnalysisQuery: "up", structs.DroverMetaAnalysisCondition: "== 1",
	})
	job.TaskGroups[0].Update.AutoRevert = true
	d := testDeployment(job)
	d.TaskGroups["web"].AutoRevert = true
	m := NewMachine(d, job, t0)
	m.Step(Init{Allocs: []*structs.Allocation{testAlloc("a1", unknown)}, Versions: []*structs.Job{job, stable(gateJob(1, nil))}}, t0)
	m.Step(Tick{}, at(30*time.Second))
	effects, _ := m.Step(answer(structs.GateMetric, structs.GateResultFail, "value 0 is not == 1"), at(30*time.Second))
	upd := effects[0].(UpdateStatus)
	require.Equal(t, structs.DeploymentStatusFailed, upd.Status)
	require.Contains(t, upd.Description, "rolling back to job version 1")
	require.NotNil(t, upd.RevertJob)
}

func TestGateMetricNoDataPausesThenResumes(t *testing.T) {
	job := gateJob(1, metricMeta)
	m, _, _ := gated(t, job, testDeployment(job), testAlloc("a1", unknown))
	m.Step(Tick{}, at(10*time.Second))
	effects, wake := m.Step(answer(structs.GateMetric, structs.GateResultInconclusive, "no data"), at(10*time.Second))
	upd := effects[0].(UpdateStatus)
	require.Equal(t, structs.DeploymentStatusPaused, upd.Status)
	require.Equal(t, `Deployment paused: metric gate of group "web": no data`, upd.Description)
	require.Equal(t, structs.GateMetric, upd.Gates["web"].PausedBy)
	require.Equal(t, at(20*time.Second), wake, "asked again while paused")

	effects, _ = m.Step(Tick{}, at(20*time.Second))
	require.Len(t, ofType[QueryMetric](effects), 1)
	effects, _ = m.Step(answer(structs.GateMetric, structs.GateResultPass, "value 0 < 0.01"), at(20*time.Second))
	upd = effects[0].(UpdateStatus)
	require.Equal(t, structs.DeploymentStatusRunning, upd.Status, "data again: resumed")
	require.Empty(t, upd.Gates["web"].PausedBy)
}

func TestGateMetricHoldsSuccessUntilPass(t *testing.T) {
	job := gateJob(1, metricMeta)
	d := withHealthy(testDeployment(job), 3)
	allocs := []*structs.Allocation{healthyOn("a1", nodeA), healthyOn("a2", nodeB), healthyOn("a3", nodeC)}
	m, effects, _ := gated(t, job, d, allocs...)
	require.Empty(t, ofType[MarkStable](effects), "complete, but the metric gate has not passed")
	require.Empty(t, ofType[QueryMetric](effects), "the metric gate keeps its cadence")
	require.Equal(t, "final", ofType[UpdateStatus](effects)[0].Gates["web"].Checkpoint)
	effects, _ = m.Step(Tick{}, at(10*time.Second))
	require.Len(t, ofType[QueryMetric](effects), 1)

	effects, _ = m.Step(answer(structs.GateMetric, structs.GateResultPass, "value 0 < 0.01"), at(11*time.Second))
	require.Equal(t, []Effect{
		MarkStable{Version: 1},
		UpdateStatus{Status: structs.DeploymentStatusSuccessful, Description: structs.DeploymentStatusDescriptionSuccessful,
			Gates: map[string]*structs.DeploymentGate{"web": {Evaluations: 1, Gate: structs.GateMetric, Result: structs.GateResultPass,
				Reason: "value 0 < 0.01", UpdatedAt: at(11 * time.Second).UnixNano()}}},
		Stop{},
	}, effects, "the record says the gate passed, waiting for nothing")
}

func TestGatePromotionWaitsForGates(t *testing.T) {
	meta := map[string]string{structs.DroverMetaGateWebhook: hookURL}
	job := gateJob(1, meta)
	d := testDeployment(job)
	st := d.TaskGroups["web"]
	st.DesiredCanaries, st.AutoPromote, st.PlacedCanaries, st.HealthyAllocs = 1, true, []string{"c1"}, 1
	canary := healthyOn("c1", nodeA)
	canary.DeploymentStatus.Canary = true
	m, effects, _ := gated(t, job, d, canary)
	require.Empty(t, ofType[Promote](effects), "auto-promotion waits for the webhook")
	call := ofType[CallWebhook](effects)
	require.Len(t, call, 1)
	require.Equal(t, "promotion", call[0].Body.Checkpoint)

	effects, _ = m.Step(answer(structs.GateWebhook, structs.GateResultPass, "answered 204"), at(time.Second))
	require.Len(t, effects, 3, "%#v", effects)
	require.Equal(t, 1, effects[0].(UpdateStatus).Gates["web"].PassedAt, "the next wave may start at the canaries' count")
	require.Equal(t, Promote{All: true}, effects[1])
	require.Equal(t, evalFor, effects[2])
}

func TestGateOperatorPauseStopsGates(t *testing.T) {
	job := gateJob(1, metricMeta)
	d := testDeployment(job)
	d.Status = structs.DeploymentStatusPaused
	m, effects, wake := gated(t, job, d, testAlloc("a1", unknown))
	require.Empty(t, effects)
	require.True(t, wake.IsZero(), "nothing asked while an operator holds it")
	effects, _ = m.Step(Tick{}, at(time.Hour))
	require.Empty(t, effects)
}

func TestGateStateAfterFailover(t *testing.T) {
	job := gateJob(1, hookMeta)
	// A new leader: the gates passed at 1 healthy; nothing to ask.
	d := withHealthy(testDeployment(job), 1)
	d.TaskGroups["web"].Gate = &structs.DeploymentGate{PassedAt: 1, Passed: 1, Result: structs.GateResultPass}
	_, effects, _ := gated(t, job, d, healthyOn("a1", nodeA))
	require.Equal(t, []Effect{evalFor}, effects, "only Init's evaluation")

	// A gate held it paused: the webhook is asked again at once.
	d = withHealthy(testDeployment(job), 1)
	d.Status, d.StatusDescription = structs.DeploymentStatusPaused, `Deployment paused: webhook gate of group "web" before wave 2: answered 503`
	d.TaskGroups["web"].Gate = &structs.DeploymentGate{PausedBy: structs.GateWebhook, Checkpoint: "wave 2", Gate: structs.GateWebhook, Result: structs.GateResultFail}
	m, effects, _ := gated(t, job, d, healthyOn("a1", nodeA))
	require.Len(t, ofType[CallWebhook](effects), 1)
	effects, _ = m.Step(answer(structs.GateWebhook, structs.GateResultPass, "answered 200"), at(time.Second))
	upd := ofType[UpdateStatus](effects)[0]
	require.Equal(t, structs.DeploymentStatusRunning, upd.Status)
	require.Equal(t, 1, upd.Gates["web"].PassedAt)
}

func TestWebhookBackoff(t *testing.T) {
	for tries, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 5: 16 * time.Second, 6: 30 * time.Second, 50: 30 * time.Second} {
		require.Equal(t, want, webhookBackoff(tries), "tries %d", tries)
	}
}

func TestCheckpointOf(t *testing.T) {
	spec := structs.GroupGates{Webhook: hookURL}
	metric := structs.GroupGates{Query: "up"}
	tests := []struct {
		name             string
		st               structs.DeploymentState
		rec              structs.DeploymentGate
		canaries, flying int
		spec             structs.GroupGates
		kind             string
		wave             int
	}{
		{"first wave in flight", structs.DeploymentState{DesiredTotal: 3}, structs.DeploymentGate{}, 0, 1, spec, "", 0},
		{"first wave done", structs.DeploymentState{DesiredTotal: 3, HealthyAllocs: 1}, structs.DeploymentGate{}, 0, 0, spec, checkpointWave, 2},
		{"passed at this count", structs.DeploymentState{DesiredTotal: 3, HealthyAllocs: 1}, structs.DeploymentGate{PassedAt: 1, Passed: 1}, 0, 0, spec, "", 0},
		{"second wave done", structs.DeploymentState{DesiredTotal: 3, HealthyAllocs: 2}, structs.DeploymentGate{PassedAt: 1, Passed: 1}, 0, 0, spec, checkpointWave, 3},
		{"second wave partly healthy", structs.DeploymentState{DesiredTotal: 4, HealthyAllocs: 3}, structs.DeploymentGate{PassedAt: 2, Passed: 1}, 0, 1, spec, "", 0},
		{"complete, webhook only", structs.DeploymentState{DesiredTotal: 3, HealthyAllocs: 3}, structs.DeploymentGate{}, 0, 0, spec, "", 0},
		{"complete, metric", structs.DeploymentState{DesiredTotal: 3, HealthyAllocs: 3}, structs.DeploymentGate{}, 0, 0, metric, checkpointFinal, 0},
		{"canaries healthy, auto", structs.DeploymentState{DesiredTotal: 3, DesiredCanaries: 1, AutoPromote: true, HealthyAllocs: 1}, structs.DeploymentGate{}, 1, 0, spec, checkpointPromotion, 2},
		{"canaries healthy, manual", structs.DeploymentState{DesiredTotal: 3, DesiredCanaries: 1, HealthyAllocs: 1}, structs.DeploymentGate{}, 1, 0, spec, "", 0},
		{"canaries not all healthy", structs.DeploymentState{DesiredTotal: 3, DesiredCanaries: 2, AutoPromote: true, HealthyAllocs: 1}, structs.DeploymentGate{}, 1, 1, spec, "", 0},
		{"promoted, passed at the canaries", structs.DeploymentState{DesiredTotal: 3, DesiredCanaries: 1, Promoted: true, HealthyAllocs: 1}, structs.DeploymentGate{PassedAt: 1, Passed: 1}, 1, 0, spec, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, wave := checkpointOf(&tt.st, &tt.rec, tt.canaries, tt.flying, tt.spec)
			require.Equal(t, tt.kind, kind)
			require.Equal(t, tt.wave, wave)
		})
	}
}
