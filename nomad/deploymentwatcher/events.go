package deploymentwatcher

import (
	"github.com/drover-project/drover/nomad/structs"
)

// Event is an input to Machine.Step. Events carry plain data read by the
// driver; the machine never reads state itself.
type Event interface{ isEvent() }

// Init is the first event a new machine steps, with the deployment's
// allocations and the job's retained versions at the time NewMachine was
// called. It establishes which allocations are already healthy (they are
// not "progress"), then applies the failure, success, promotion and
// deadline rules to what it sees: a machine rebuilt by a new leader
// finishes what the old leader left half done.
type Init struct {
	Allocs   []*structs.Allocation
	Versions []*structs.Job // retained versions, newest first
}

// AllocHealthChanged reports the deployment and its allocations as they are
// now in state (fresh copies; the machine takes its own copy).
type AllocHealthChanged struct {
	Deployment *structs.Deployment
	Allocs     []*structs.Allocation
	Versions   []*structs.Job // retained versions, newest first
}

// Tick reports that the time returned as wakeAt has been reached.
type Tick struct {
	// Versions are the job's retained versions, newest first, for the
	// revert decision; nil keeps those of the last event.
	Versions []*structs.Job
}

// Promoted reports that some groups of the deployment were promoted (by the
// user or by a Promote effect); Deployment is the promoted deployment.
type Promoted struct{ Deployment *structs.Deployment }

// Paused reports that the deployment was paused.
type Paused struct{}

// Resumed reports that a paused deployment runs again.
type Resumed struct{}

// JobChanged reports that the deployment's job version is no longer the
// job's current one (a newer version, a stop, a purge) or that the
// deployment is gone. The scheduler cancels the deployment; the machine
// just stops.
type JobChanged struct{}

func (Init) isEvent()               {}
func (AllocHealthChanged) isEvent() {}
func (Tick) isEvent()               {}
func (Promoted) isEvent()           {}
func (Paused) isEvent()             {}
func (Resumed) isEvent()            {}
func (JobChanged) isEvent()         {}

// Effect is an action Machine.Step asks its driver to carry out, in order.
// A CreateEval that directly follows an UpdateStatus or a Promote belongs to
// it: the driver commits both in one raft entry (for an auto-revert, the
// FSM points the evaluation at the job version it registers).
type Effect interface{ isEffect() }

// UpdateStatus sets the deployment's status and description.
type UpdateStatus struct {
	Status      string
	Description string
	// RevertJob, when not nil, is a copy of the stable job version to
	// register again as the job's newest version (an auto-revert); its
	// Version field names the version it copies.
	RevertJob *structs.Job
	// Gates, when not nil, replace the gate records of the named groups
	// (gates.go).
	Gates map[string]*structs.DeploymentGate
}

// CreateEval creates an evaluation of the deployment's job.
type CreateEval struct {
	TriggeredBy string
	// DeploymentID is the deployment the evaluation follows up, or "" for
	// the evaluation of an auto-reverted job version (which gets a
	// deployment of its own).
	DeploymentID string
}

// Promote promotes the deployment's canaries.
type Promote struct{ All bool }

// MarkStable marks a version of the deployment's job stable.
type MarkStable struct{ Version uint64 }

// Stop ends the machine: the driver stops watching the deployment.
type Stop struct{}

func (UpdateStatus) isEffect() {}
func (CreateEval) isEffect()   {}
func (Promote) isEffect()      {}
func (MarkStable) isEffect()   {}
func (Stop) isEffect()         {}

// Observation is what the driver reads from state in one snapshot.
type Observation struct {
	Deployment *structs.Deployment // or nil: gone
	Allocs     []*structs.Allocation
	Job        *structs.Job   // the job's current version, or nil: purged
	Versions   []*structs.Job // retained versions, newest first
}

// Events returns the events that bring m from what it last saw to obs, in
// the order they must be stepped: JobChanged alone when the job moved on;
// otherwise Paused or Resumed, then Promoted, then AllocHealthChanged. A
// terminal deployment is reported as AllocHealthChanged (the machine stops
// on it, marking the version stable if it succeeded).
func (m *Machine) Events(obs Observation) []Event {
	d := obs.Deployment
	if d == nil {
		return []Event{JobChanged{}}
	}
	health := AllocHealthChanged{Deployment: d, Allocs: obs.Allocs, Versions: obs.Versions}
	if !d.Active() {
		return []Event{health}
	}
	if !jobMatches(obs.Job, d) {
		return []Event{JobChanged{}}
	}
	var out []Event
	switch {
	case m.d.Status != structs.DeploymentStatusPaused && d.Status == structs.DeploymentStatusPaused:
		out = append(out, Paused{})
	case m.d.Status == structs.DeploymentStatusPaused && d.Status == structs.DeploymentStatusRunning:
		out = append(out, Resumed{})
	}
	for name, st := range d.TaskGroups {
		if old := m.d.TaskGroups[name]; st.Promoted && (old == nil || !old.Promoted) {
			out = append(out, Promoted{Deployment: d})
			break
		}
	}
	return append(out, health)
}

// jobMatches reports whether job is the current, running version d deploys.
func jobMatches(job *structs.Job, d *structs.Deployment) bool {
	return job != nil && !job.Stop && job.Version == d.JobVersion && job.CreateIndex == d.JobCreateIndex
}
