package deploymentwatcher

import (
	"time"

	"github.com/drover-project/drover/nomad/structs"
)

// Machine decides what happens to one deployment. It is pure: Step reads
// only its arguments and the machine's own fields, takes the time as a
// parameter, and returns effects as data. It is not safe for concurrent use;
// its driver owns it.
type Machine struct {
	d        *structs.Deployment    // last deployment seen; private copy
	job      *structs.Job           // the job version d deploys; shared, read-only
	versions []*structs.Job         // the job's retained versions; shared, read-only
	allocs   []*structs.Allocation  // last allocations seen; shared, read-only
	rules    map[string]signalRules // drover.auto_pause_on / auto_fail_on by group (signals.go)
	surge    bool                   // a group of job rolls out by drover.surge
	gates    map[string]*gateRun    // metric and webhook gates by group (gates.go)

	promoteAsked bool // a Promote was returned since the last observation

	healthy  map[string]bool      // allocations seen healthy, by ID
	deadline map[string]time.Time // progress deadline per group; zero: none
	done     bool                 // a terminal status was decided or seen, or the job moved on
}

// NewMachine returns the machine of deployment d (copied) of job version
// job. Group progress deadlines start from d's RequireProgressBy; a group
// with a progress deadline but none recorded gets now + ProgressDeadline.
// The first event must be Init.
func NewMachine(d *structs.Deployment, job *structs.Job, now time.Time) *Machine {
	m := &Machine{
		d:        &structs.Deployment{},
		job:      job,
		healthy:  map[string]bool{},
		deadline: map[string]time.Time{},
		rules:    rulesOf(job),
		surge:    surgeOf(job),
	}
	m.adopt(d)
	m.gates = gatesOf(job, m.d, now)
	for name, st := range m.d.TaskGroups {
		if st.ProgressDeadline > 0 && m.deadline[name].IsZero() {
			m.deadline[name] = now.Add(st.ProgressDeadline)
		}
	}
	return m
}

// Deployment returns the deployment as the machine last saw it. The caller
// must not modify it.
func (m *Machine) Deployment() *structs.Deployment { return m.d }

// Done reports whether the machine has stopped: every later Step returns
// no effects.
func (m *Machine) Done() bool { return m.done }

// Step applies ev at time now. It returns the effects to carry out, in
// order, and the time at which the machine wants a Tick (zero: none; a
// time not after now means at once).
//
// Invariants:
//   - after a terminal UpdateStatus, or a Stop, Step returns nothing ever
//     again;
//   - a paused deployment never fails on its progress deadline.
func (m *Machine) Step(ev Event, now time.Time) (effects []Effect, wakeAt time.Time) {
	if m.done {
		return nil, time.Time{}
	}
	switch ev := ev.(type) {
	case Init:
		effects = m.stepObserve(m.d, ev.Allocs, ev.Versions, now, true)
	case AllocHealthChanged:
		effects = m.stepObserve(ev.Deployment, ev.Allocs, ev.Versions, now, false)
	case Tick:
		if ev.Versions != nil {
			m.versions = ev.Versions
		}
		effects = m.maybeFailDeadline(now)
		if effects == nil {
			effects = m.stepGates(now, nil)
		}
	case GateAnswered:
		effects = m.stepAnswer(ev, now)
	case Promoted:
		m.stepPromoted(ev.Deployment, now)
	case Paused:
		m.d.Status = structs.DeploymentStatusPaused
	case Resumed:
		m.stepResumed(now)
	case JobChanged:
		effects = m.stop()
	}
	return effects, m.wakeAt()
}

// stepObserve handles a fresh view of the deployment (Init when init).
//
// Order of the rules: a terminal deployment stops the machine; an unhealthy
// allocation fails it (paused or not), unless its group's rollout signal
// conditions count unhealthy allocations; an auto_fail_on condition fails
// it (paused or not); completion succeeds it; then, only while running: an
// auto_pause_on condition pauses it (signals.go), newly healthy
// allocations push their group's deadline,
// a passed deadline fails it, canaries ready for auto-promotion are
// promoted, and progress asks the scheduler for the next wave.
func (m *Machine) stepObserve(d *structs.Deployment, allocs []*structs.Allocation, versions []*structs.Job, now time.Time, init bool) []Effect {
	if d == nil {
		return m.stop()
	}
	m.adopt(d)
	m.allocs, m.versions = allocs, versions
	if !d.Active() {
		var out []Effect
		if d.Status == structs.DeploymentStatusSuccessful {
			out = append(out, MarkStable{Version: d.JobVersion})
		}
		return append(out, m.stop()...)
	}
	if init && !jobMatches(m.job, d) {
		return m.stop()
	}
	gained := m.noteHealthy(allocs)
	for _, a := range allocs {
		if failsDeployment(a) && !m.rules[a.TaskGroup].toleratesUnhealthy() {
			return m.fail(structs.DeploymentStatusDescriptionFailedAllocations)
		}
	}
	signals := DecideSignals(m.d, m.rules, allocs)
	if signals.Status == structs.DeploymentStatusFailed {
		return m.applySignals(signals)
	}
	if complete(d) && m.finalGatesPassed() {
		return m.succeed()
	}
	if m.d.Status != structs.DeploymentStatusRunning {
		// paused: progress is recorded, nothing is decided, but a gate
		// that holds the deployment paused is asked again (gates.go)
		return m.stepGates(now, nil)
	}
	if out := m.applySignals(signals); out != nil {
		return out
	}
	if !init {
		for name := range gained {
			if st := d.TaskGroups[name]; st != nil && st.ProgressDeadline > 0 {
				m.deadline[name] = now.Add(st.ProgressDeadline)
			}
		}
	}
	if out := m.maybeFailDeadline(now); out != nil {
		return out
	}
	if len(m.gates) > 0 {
		// Gated: success, promotion and the next waves wait for the
		// gates (gates.go).
		out := m.stepGates(now, nil)
		if len(gained) > 0 && !m.done {
			out = append(out, CreateEval{TriggeredBy: structs.EvalTriggerDeploymentWatcher, DeploymentID: d.ID})
		}
		return out
	}
	if shouldAutoPromote(d, allocs) {
		return []Effect{Promote{All: true}, CreateEval{TriggeredBy: structs.EvalTriggerDeploymentWatcher, DeploymentID: d.ID}}
	}
	// On Init, allocations already healthy may be the progress the old
	// leader never turned into an evaluation.
	if len(gained) > 0 {
		return []Effect{CreateEval{TriggeredBy: structs.EvalTriggerDeploymentWatcher, DeploymentID: d.ID}}
	}
	return nil
}

// adopt takes a copy of d as the deployment the machine knows. A group's
// deadline is the later of the machine's and the stored one: the state
// store pushes it on health and resets it on resume and promotion, the
// machine pushes it on what it sees; neither ever pulls it back.
func (m *Machine) adopt(d *structs.Deployment) {
	m.d = d.Copy()
	m.promoteAsked = false
	for name, st := range m.d.TaskGroups {
		if st.RequireProgressBy.After(m.deadline[name]) {
			m.deadline[name] = st.RequireProgressBy
		}
	}
}

// noteHealthy records the healthy allocations and returns the groups that
// gained one.
func (m *Machine) noteHealthy(allocs []*structs.Allocation) map[string]bool {
	gained := map[string]bool{}
	for _, a := range allocs {
		if a.DeploymentStatus.IsHealthy() && !m.healthy[a.ID] {
			m.healthy[a.ID] = true
			gained[a.TaskGroup] = true
		}
	}
	return gained
}

// stepPromoted restarts the deadline of the groups d promoted.
func (m *Machine) stepPromoted(d *structs.Deployment, now time.Time) {
	if d == nil {
		return
	}
	before := m.d
	m.adopt(d)
	for name, st := range m.d.TaskGroups {
		old := before.TaskGroups[name]
		if st.Promoted && (old == nil || !old.Promoted) && st.ProgressDeadline > 0 {
			m.deadline[name] = now.Add(st.ProgressDeadline)
		}
	}
}

// stepResumed ends a pause. Pausing freezes the progress deadline; resuming
// restarts it: every group gets now + ProgressDeadline (the state store does
// the same to the stored deadline when it records the resume).
func (m *Machine) stepResumed(now time.Time) {
	m.d.Status = structs.DeploymentStatusRunning
	for name, st := range m.d.TaskGroups {
		if st.ProgressDeadline > 0 {
			m.deadline[name] = now.Add(st.ProgressDeadline)
		}
	}
}

// maybeFailDeadline fails the deployment when, while it runs, a group that
// is not settled has reached its progress deadline; it returns nil otherwise.
func (m *Machine) maybeFailDeadline(now time.Time) []Effect {
	if m.d.Status != structs.DeploymentStatusRunning {
		return nil // paused: the deadline is frozen
	}
	if at := m.nextDeadline(); !at.IsZero() && !now.Before(at) {
		return m.fail(structs.DeploymentStatusDescriptionProgressDeadline)
	}
	return nil
}

// nextDeadline returns the earliest progress deadline of a group that is not
// settled, or zero.
func (m *Machine) nextDeadline() time.Time {
	var next time.Time
	canaries := HealthyCanaries(m.d, m.allocs)
	for name, st := range m.d.TaskGroups {
		at := m.deadline[name]
		if st.ProgressDeadline <= 0 || at.IsZero() || settled(st, canaries[name]) {
			continue
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next
}

// wakeAt is when the machine wants a Tick: the next progress deadline while
// running, or the next gate call due (gates.go), whichever comes first;
// zero for never.
func (m *Machine) wakeAt() time.Time {
	if m.done {
		return time.Time{}
	}
	var at time.Time
	if m.d.Status == structs.DeploymentStatusRunning {
		at = m.nextDeadline()
	}
	if g := m.gateWakeAt(); !g.IsZero() && (at.IsZero() || g.Before(at)) {
		at = g
	}
	return at
}

// fail ends the deployment as failed with description desc, reverting when
// a group has auto_revert.
func (m *Machine) fail(desc string) []Effect {
	upd, eval := Failure(m.d, m.job, m.versions, desc)
	m.done = true
	return []Effect{upd, eval, Stop{}}
}

// succeed ends the deployment as successful. The version is marked stable
// first: if the driver dies in between, a rebuilt machine sees the
// deployment still complete and running, and finishes the job. A job with
// a drover.surge group also gets an evaluation with the status update: the
// last wave's old allocations run beside their healthy replacements until
// the scheduler stops them.
func (m *Machine) succeed() []Effect {
	m.done = true
	out := []Effect{
		MarkStable{Version: m.d.JobVersion},
		UpdateStatus{Status: structs.DeploymentStatusSuccessful, Description: successDescription(m.job)},
	}
	if m.surge {
		out = append(out, CreateEval{TriggeredBy: structs.EvalTriggerDeploymentWatcher, DeploymentID: m.d.ID})
	}
	return append(out, Stop{})
}

// surgeOf reports whether a group of job has drover.surge.
func surgeOf(job *structs.Job) bool {
	if job == nil {
		return false
	}
	for _, tg := range job.TaskGroups {
		if tg.DroverSurge() {
			return true
		}
	}
	return false
}

// stop ends the machine without writing anything.
func (m *Machine) stop() []Effect {
	m.done = true
	return []Effect{Stop{}}
}
