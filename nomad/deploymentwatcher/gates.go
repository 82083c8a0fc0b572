package deploymentwatcher

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/drover-project/drover/nomad/structs"
)

// Metric and webhook gates (docs/semantics.md, "Metric and webhook
// gates"): the pure part. A group with drover.analysis_query or
// drover.gate_webhook reaches a checkpoint
//
//   - "promotion": its canaries are all healthy and await auto-promotion;
//   - "wave N": it is promoted (or has no canaries), some allocation
//     became healthy since its gates last passed (HealthyAllocs >
//     DeploymentGate.PassedAt), none is in flight, and it is not complete;
//     the scheduler holds wave N meanwhile (structs.GateHoldsWave);
//   - "final": it is complete (metric gate only: success waits for it).
//
// A checkpoint passes once every gate of the group passed since it was
// reached: the metric gate by an evaluation that met the condition, the
// webhook by a 2xx answer (no webhook at "final"). Passing a wave
// checkpoint records PassedAt = HealthyAllocs (the scheduler may then
// place the wave) and asks for an evaluation; passing "promotion" records
// it too and lets auto-promotion go ahead; passing "final" lets the
// deployment succeed.
//
// Besides checkpoints, the metric gate is evaluated every
// drover.analysis_interval while the deployment runs or a gate holds it
// paused; an evaluation that does not meet the condition counts a failure,
// and more than drover.analysis_failure_limit failures fail the
// deployment (auto-reverting as any failure). No data or a query error
// (inconclusive, timeout) pauses the deployment; a webhook that does not
// answer 2xx pauses it; both go on being asked (the webhook with backoff)
// and a pass resumes it. The driver does the asking (QueryMetric,
// CallWebhook) and steps the answer (GateAnswered).
//
// What survives a failover is the group's DeploymentGate in the state
// store (PassedAt, Passed, Failures, PausedBy, last result); the rest (due
// times, the answers at the checkpoint under way, webhook backoff) is the
// machine's, and a new leader asks again.

// Webhook retry backoff while a webhook does not answer 2xx.
const (
	webhookRetryBase = time.Second
	webhookRetryMax  = 30 * time.Second
)

// Checkpoint kinds.
const (
	checkpointWave      = "wave"
	checkpointPromotion = "promotion"
	checkpointFinal     = "final"
)

// gateRun is the machine's state of one gated group.
type gateRun struct {
	spec structs.GroupGates

	checkpoint string // "" none, else "promotion", "final" or "wave N"
	kind       string // checkpointWave, checkpointPromotion, checkpointFinal
	wave       int    // the wave the checkpoint comes before (promotion: 2)

	metricAt    time.Time // next evaluation due; zero: at once
	metricAsked bool      // a QueryMetric is out
	// metricAtCheckpoint: the QueryMetric out was asked at the current
	// checkpoint (an answer to one asked before it does not pass it)
	metricAtCheckpoint bool
	metricOK           bool      // the last evaluation, asked at this checkpoint, passed
	hookAt             time.Time // next webhook call due
	hookAsked          bool
	hookOK             bool // the webhook answered 2xx at this checkpoint
	hookTries          int  // non-2xx answers in a row at this checkpoint
}

// gatesOf returns the gate runs of job's gated groups that deployment d
// has; the first evaluation of a metric gate is due one interval after
// now (the new allocations need time to be scraped).
func gatesOf(job *structs.Job, d *structs.Deployment, now time.Time) map[string]*gateRun {
	if job == nil {
		return nil
	}
	out := map[string]*gateRun{}
	for _, tg := range job.TaskGroups {
		spec := tg.DroverGates()
		if !spec.Any() || d.TaskGroups[tg.Name] == nil {
			continue
		}
		out[tg.Name] = &gateRun{spec: spec, metricAt: now.Add(spec.Interval)}
	}
	return out
}

// QueryMetric asks the driver to run Query (placeholders replaced) against
// the server's Prometheus and step the answer as a GateAnswered of Group.
type QueryMetric struct {
	Group     string
	Query     string
	Condition structs.AnalysisCondition
}

// CallWebhook asks the driver to POST Body (JSON, signed) to URL and step
// the answer as a GateAnswered of Group.
type CallWebhook struct {
	Group string
	URL   string
	Body  WebhookBody
}

func (QueryMetric) isEffect() {}
func (CallWebhook) isEffect() {}

// WebhookBody is the JSON body of a gate webhook call.
type WebhookBody struct {
	Job          string   `json:"job"`
	Namespace    string   `json:"namespace"`
	Version      uint64   `json:"version"`
	DeploymentID string   `json:"deployment_id"`
	Group        string   `json:"group"`
	Checkpoint   string   `json:"checkpoint"` // "wave" or "promotion"
	Wave         int      `json:"wave"`       // the wave about to start (the first wave, or the canaries, is 1)
	NodeIDs      []string `json:"node_ids"`   // nodes running the group's healthy allocations of the deployment
	Attempt      int      `json:"attempt"`    // 1 for the first call at this checkpoint
	SentAt       int64    `json:"sent_at"`    // unix seconds, filled in by the driver
}

// GateAnswered is the answer to a QueryMetric or CallWebhook.
type GateAnswered struct {
	Group  string
	Gate   string // structs.GateMetric or structs.GateWebhook
	Result string // structs.GateResultPass, Fail, Inconclusive, Timeout
	// Reason says what was answered ("value 0.2 is not < 0.01",
	// "answered 503: busy", "no data").
	Reason string
}

func (GateAnswered) isEvent() {}

// gateDescription prefixes.
const gatePausedPrefix = "Deployment paused: "

// stepAnswer records answer a and returns the effects: a failure when the
// metric gate failed too often, a pause when a gate is inconclusive or the
// webhook refused, then whatever stepGates decides.
func (m *Machine) stepAnswer(a GateAnswered, now time.Time) []Effect {
	run := m.gates[a.Group]
	st := m.d.TaskGroups[a.Group]
	if run == nil || st == nil {
		return nil
	}
	rec := gateRecord(st)
	rec.Gate, rec.Result, rec.Reason = a.Gate, a.Result, a.Reason
	switch a.Gate {
	case structs.GateMetric:
		run.metricAsked = false
		run.metricAt = now.Add(run.spec.Interval)
		run.metricOK = false
		rec.Evaluations++
		switch a.Result {
		case structs.GateResultPass:
			run.metricOK = run.metricAtCheckpoint
		case structs.GateResultFail:
			rec.Failures++
			if rec.Failures > run.spec.FailureLimit {
				out := m.fail(fmt.Sprintf("Deployment failed: metric gate of group %q: %s (%d failed evaluations, limit %d)",
					a.Group, a.Reason, rec.Failures, run.spec.FailureLimit))
				rec.PausedBy, rec.UpdatedAt = "", now.UnixNano()
				upd := out[0].(UpdateStatus)
				upd.Gates = map[string]*structs.DeploymentGate{a.Group: rec}
				out[0] = upd
				return out
			}
		}
	case structs.GateWebhook:
		run.hookAsked = false
		if a.Result == structs.GateResultPass {
			run.hookOK, run.hookTries = true, 0
		} else {
			run.hookTries++
			run.hookAt = now.Add(webhookBackoff(run.hookTries))
		}
	}
	inconclusive := a.Result == structs.GateResultInconclusive || a.Result == structs.GateResultTimeout
	holds := inconclusive || (a.Gate == structs.GateWebhook && a.Result != structs.GateResultPass)
	if !holds && rec.PausedBy == a.Gate {
		rec.PausedBy = "" // the gate that paused the deployment answered: it may resume
	}
	desc := fmt.Sprintf("%s%s gate of group %q%s: %s", gatePausedPrefix, a.Gate, a.Group, checkpointWords(run), a.Reason)
	switch {
	case holds && m.d.Status == structs.DeploymentStatusRunning:
		rec.PausedBy = a.Gate
		return m.writeGates(structs.DeploymentStatusPaused, desc, map[string]*structs.DeploymentGate{a.Group: rec}, now)
	case holds && m.gatePaused():
		// Still held: the description says the latest answer.
		if rec.PausedBy == "" {
			rec.PausedBy = a.Gate
		}
		if changed(st.Gate, rec) || desc != m.d.StatusDescription {
			return m.writeGates(m.d.Status, desc, map[string]*structs.DeploymentGate{a.Group: rec}, now)
		}
		return nil
	}
	return m.stepGates(now, map[string]*structs.DeploymentGate{a.Group: rec})
}

// checkpointWords is " before wave 2", " before promotion", " before
// completion", or "".
func checkpointWords(run *gateRun) string {
	switch run.kind {
	case checkpointWave:
		return fmt.Sprintf(" before wave %d", run.wave)
	case checkpointPromotion:
		return " before promotion"
	case checkpointFinal:
		return " before completion"
	}
	return ""
}

// webhookBackoff is the wait before the next call after tries non-2xx
// answers in a row: 1s, 2s, 4s, … up to 30s.
func webhookBackoff(tries int) time.Duration {
	d := webhookRetryBase
	for i := 1; i < tries && d < webhookRetryMax; i++ {
		d *= 2
	}
	return min(d, webhookRetryMax)
}

// gateRecord returns a copy of st's gate record (a fresh one when none).
func gateRecord(st *structs.DeploymentState) *structs.DeploymentGate {
	if st.Gate == nil {
		return &structs.DeploymentGate{}
	}
	return st.Gate.Copy()
}

// changed reports whether rec differs from old in what is worth a write
// (not Evaluations nor Reason: a passing evaluation of a new value is no
// reason to write).
func changed(old, rec *structs.DeploymentGate) bool {
	if old == nil {
		old = &structs.DeploymentGate{}
	}
	return old.PassedAt != rec.PassedAt || old.Passed != rec.Passed || old.Failures != rec.Failures ||
		old.PausedBy != rec.PausedBy || old.Gate != rec.Gate || old.Result != rec.Result ||
		old.Checkpoint != rec.Checkpoint
}

// gatePaused reports whether a gate holds the machine's deployment paused.
func (m *Machine) gatePaused() bool {
	if m.d.Status != structs.DeploymentStatusPaused {
		return false
	}
	for name := range m.gates {
		if st := m.d.TaskGroups[name]; st != nil && st.Gate != nil && st.Gate.PausedBy != "" {
			return true
		}
	}
	return false
}

// gatesRun reports whether gates are asked now: the deployment runs, or a
// gate holds it paused (an operator's pause stops them).
func (m *Machine) gatesRun() bool {
	return len(m.gates) > 0 && (m.d.Status == structs.DeploymentStatusRunning || m.gatePaused())
}

// stepGates updates every gated group's checkpoint, passes those whose
// gates passed, and asks the gates that are due. recs are records already
// changed by an answer, to be written with whatever else changes.
func (m *Machine) stepGates(now time.Time, recs map[string]*structs.DeploymentGate) []Effect {
	if !m.gatesRun() {
		return m.flushGates(recs, now)
	}
	if recs == nil {
		recs = map[string]*structs.DeploymentGate{}
	}
	canaries := HealthyCanaries(m.d, m.allocs)
	inFlight := m.inFlight()
	passedWave := false
	var ask []Effect
	for _, name := range m.gateGroups() {
		run, st := m.gates[name], m.d.TaskGroups[name]
		rec := recs[name]
		if rec == nil {
			rec = gateRecord(st)
		}
		kind, wave := checkpointOf(st, rec, canaries[name], inFlight[name], run.spec)
		key := kind
		if kind == checkpointWave {
			key = fmt.Sprintf("wave %d", wave)
		}
		if key != run.checkpoint {
			run.checkpoint, run.kind, run.wave = key, kind, wave
			run.hookOK, run.hookTries, run.hookAt = false, 0, now
			// The metric gate keeps its cadence: a checkpoint reached
			// right after a wave became healthy may have no data of it
			// yet; the next evaluation decides.
			run.metricOK, run.metricAtCheckpoint = false, false
			rec.Checkpoint = key
			if key != "" {
				rec.Result, rec.Reason = structs.GateResultPending, ""
			}
		}
		if kind != "" && m.checkpointPassed(run) {
			switch kind {
			case checkpointWave, checkpointPromotion:
				run.metricOK = false
				rec.PassedAt, rec.Passed = st.HealthyAllocs, rec.Passed+1
				rec.Checkpoint, rec.Result, rec.Reason = "", structs.GateResultPass, "passed "+key
				rec.PausedBy = ""
				passedWave = passedWave || kind == checkpointWave
				run.checkpoint, run.kind = "", ""
			}
		}
		if changed(st.Gate, rec) {
			recs[name] = rec
		} else {
			delete(recs, name)
		}
		ask = append(ask, m.dueGates(name, run, st, now)...)
	}
	resuming := m.gatePaused() && !m.pausedAfter(recs)
	if (m.d.Status == structs.DeploymentStatusRunning || resuming) && complete(m.d) && m.finalGatesPassed() {
		return m.succeedGated(recs, now)
	}
	out := m.flushGates(recs, now)
	if passedWave {
		out = append(out, CreateEval{TriggeredBy: structs.EvalTriggerDeploymentWatcher, DeploymentID: m.d.ID})
	}
	if m.d.Status == structs.DeploymentStatusRunning {
		if !m.promoteAsked && shouldAutoPromote(m.d, m.allocs) && m.promotionGatesPassed() {
			m.promoteAsked = true
			out = append(out, Promote{All: true}, CreateEval{TriggeredBy: structs.EvalTriggerDeploymentWatcher, DeploymentID: m.d.ID})
		}
	}
	return append(out, ask...)
}

// succeedGated is succeed with the gate records written as passed (the
// final checkpoint cleared), so that the record of a successful
// deployment does not say it waits.
func (m *Machine) succeedGated(recs map[string]*structs.DeploymentGate, now time.Time) []Effect {
	out := m.succeed()
	final := map[string]*structs.DeploymentGate{}
	for _, name := range m.gateGroups() {
		rec := recs[name]
		if rec == nil {
			rec = gateRecord(m.d.TaskGroups[name])
		}
		if rec.Checkpoint == "" && !changed(m.d.TaskGroups[name].Gate, rec) {
			continue
		}
		rec.Checkpoint, rec.PausedBy, rec.UpdatedAt = "", "", now.UnixNano()
		final[name] = rec
	}
	if len(final) > 0 {
		for i, e := range out {
			if upd, ok := e.(UpdateStatus); ok {
				upd.Gates = final
				out[i] = upd
			}
		}
	}
	return out
}

// flushGates writes the changed records recs (nil when none), resuming a
// deployment a gate held paused once no record is paused any more.
func (m *Machine) flushGates(recs map[string]*structs.DeploymentGate, now time.Time) []Effect {
	if len(recs) == 0 {
		return nil
	}
	status, desc := m.d.Status, m.d.StatusDescription
	if m.gatePaused() && !m.pausedAfter(recs) {
		status, desc = structs.DeploymentStatusRunning, structs.DeploymentStatusDescriptionRunning
	}
	return m.writeGates(status, desc, recs, now)
}

// pausedAfter reports whether some gate record is paused once recs apply.
func (m *Machine) pausedAfter(recs map[string]*structs.DeploymentGate) bool {
	for name := range m.gates {
		rec := recs[name]
		if rec == nil {
			if st := m.d.TaskGroups[name]; st != nil {
				rec = st.Gate
			}
		}
		if rec != nil && rec.PausedBy != "" {
			return true
		}
	}
	return false
}

// writeGates returns the write of status, description and records recs,
// and applies it to the machine's deployment at once (the state store's
// echo then changes nothing). A resume restarts the progress deadlines, as
// the state store does.
func (m *Machine) writeGates(status, desc string, recs map[string]*structs.DeploymentGate, now time.Time) []Effect {
	for _, rec := range recs {
		rec.UpdatedAt = now.UnixNano()
	}
	if m.d.Status == structs.DeploymentStatusPaused && status == structs.DeploymentStatusRunning {
		m.stepResumed(now)
	}
	m.d.Status, m.d.StatusDescription = status, desc
	for name, rec := range recs {
		if st := m.d.TaskGroups[name]; st != nil {
			st.Gate = rec.Copy()
		}
	}
	return []Effect{UpdateStatus{Status: status, Description: desc, Gates: recs}}
}

// gateGroups returns the gated groups of the deployment by name.
func (m *Machine) gateGroups() []string {
	out := make([]string, 0, len(m.gates))
	for name := range m.gates {
		if m.d.TaskGroups[name] != nil {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// inFlight counts, per group, the live allocations of the deployment that
// are not healthy yet.
func (m *Machine) inFlight() map[string]int {
	out := map[string]int{}
	for _, a := range m.allocs {
		if a.DeploymentID == m.d.ID && !a.Terminal() && !a.DeploymentStatus.IsHealthy() {
			out[a.TaskGroup]++
		}
	}
	return out
}

// checkpointOf returns the checkpoint group st (gate record rec, with
// healthyCanaries healthy canaries and inFlight allocations in flight)
// is at: its kind ("" none) and, for a wave, the wave it comes before.
func checkpointOf(st *structs.DeploymentState, rec *structs.DeploymentGate, healthyCanaries, inFlight int, spec structs.GroupGates) (string, int) {
	next := rec.Passed + 2
	switch {
	case st.DesiredCanaries > 0 && !st.Promoted:
		if st.AutoPromote && healthyCanaries >= st.DesiredCanaries {
			return checkpointPromotion, next
		}
		return "", 0
	case st.HealthyAllocs >= st.DesiredTotal:
		if spec.Query != "" {
			return checkpointFinal, 0
		}
		return "", 0
	case st.HealthyAllocs > rec.PassedAt && inFlight == 0:
		return checkpointWave, next
	}
	return "", 0
}

// checkpointPassed reports whether every gate of run passed since its
// checkpoint was reached.
func (m *Machine) checkpointPassed(run *gateRun) bool {
	if run.spec.Query != "" && !run.metricOK {
		return false
	}
	if run.spec.Webhook != "" && run.kind != checkpointFinal && !run.hookOK {
		return false
	}
	return true
}

// finalGatesPassed reports whether every gated group with a metric gate
// passed its final checkpoint (the deployment may then succeed).
func (m *Machine) finalGatesPassed() bool {
	for _, name := range m.gateGroups() {
		run := m.gates[name]
		if run.spec.Query == "" {
			continue
		}
		if run.kind != checkpointFinal || !m.checkpointPassed(run) {
			return false
		}
	}
	return true
}

// promotionGatesPassed reports whether every gated group whose canaries
// await promotion passed its promotion checkpoint at its healthy count.
func (m *Machine) promotionGatesPassed() bool {
	for _, name := range m.gateGroups() {
		st := m.d.TaskGroups[name]
		if st.DesiredCanaries > 0 && !st.Promoted && (st.HealthyAllocs == 0 || st.GatePassedAt() < st.HealthyAllocs) {
			return false
		}
	}
	return true
}

// dueGates returns the gate calls of group name that are due at now.
func (m *Machine) dueGates(name string, run *gateRun, st *structs.DeploymentState, now time.Time) []Effect {
	var out []Effect
	if run.spec.Query != "" && !run.metricAsked && !now.Before(run.metricAt) {
		run.metricAsked, run.metricAtCheckpoint = true, run.kind != ""
		out = append(out, QueryMetric{Group: name, Query: m.expand(run.spec.Query, name), Condition: run.spec.Condition})
	}
	atHook := run.kind == checkpointWave || run.kind == checkpointPromotion
	if run.spec.Webhook != "" && atHook && !run.hookOK && !run.hookAsked && !now.Before(run.hookAt) {
		run.hookAsked = true
		out = append(out, CallWebhook{Group: name, URL: run.spec.Webhook, Body: WebhookBody{
			Job: m.d.JobID, Namespace: m.d.Namespace, Version: m.d.JobVersion, DeploymentID: m.d.ID,
			Group: name, Checkpoint: run.kind, Wave: run.wave, NodeIDs: m.healthyNodes(name), Attempt: run.hookTries + 1,
		}})
	}
	return out
}

// expand replaces the query placeholders (structs.GatePlaceholders).
func (m *Machine) expand(q, group string) string {
	return strings.NewReplacer(
		"$job", m.d.JobID, "$namespace", m.d.Namespace, "$group", group,
		"$version", fmt.Sprint(m.d.JobVersion), "$deployment", m.d.ID,
	).Replace(q)
}

// healthyNodes returns the nodes of group's healthy live allocations of
// the deployment, sorted.
func (m *Machine) healthyNodes(group string) []string {
	out := []string{}
	for _, a := range m.allocs {
		if a.TaskGroup == group && a.DeploymentID == m.d.ID && !a.Terminal() && a.DeploymentStatus.IsHealthy() {
			out = append(out, a.NodeID)
		}
	}
	sort.Strings(out)
	return out
}

// gateWakeAt is the earliest time a gate call is due, or zero.
func (m *Machine) gateWakeAt() time.Time {
	if !m.gatesRun() {
		return time.Time{}
	}
	var next time.Time
	note := func(at time.Time) {
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	for _, name := range m.gateGroups() {
		run := m.gates[name]
		if run.spec.Query != "" && !run.metricAsked {
			note(run.metricAt)
		}
		if run.spec.Webhook != "" && (run.kind == checkpointWave || run.kind == checkpointPromotion) && !run.hookOK && !run.hookAsked {
			note(run.hookAt)
		}
	}
	return next
}
