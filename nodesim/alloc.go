package nodesim

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/client/allocrunner/health"
	"github.com/drover-project/drover/drivers/mock"
	"github.com/drover-project/drover/nomad/structs"
)

// Task states as the API reports them.
const (
	taskPending = "pending"
	taskRunning = "running"
	taskDead    = "dead"
)

// defaultKillTimeout caps kill_after when a task sets no kill_timeout, as
// the client does.
const defaultKillTimeout = 5 * time.Second

// simTask is one task of a simulated allocation: its mock script, or the
// reason it cannot run (not a mock task, or a config the driver rejects).
type simTask struct {
	name        string
	script      mock.Script
	killTimeout time.Duration
	bad         string // non-empty: the task fails when it would start
}

// healthSpec is the part of the group's update block that decides
// deployment health.
type healthSpec struct {
	mode            string
	minHealthyTime  time.Duration
	healthyDeadline time.Duration
}

// simAlloc is an allocation on a simulated node. Everything a report
// needs is derived from it and the time (see report); it keeps nothing
// of the job but what the simulation reads.
type simAlloc struct {
	id          string
	modifyIndex uint64 // AllocModifyIndex last applied
	received    time.Time
	tasks       []simTask
	completeOK  bool // batch and sysbatch tasks may end without failing the allocation
	stopAt      time.Time
	// remembered: the allocation was terminal when first seen; it is
	// neither run nor reported.
	remembered bool

	deploymentID string
	spec         healthSpec
	migrate      *healthSpec // a service group's migrate block, or nil
	healthStart  time.Time
	healthy      *bool // decided deployment health, or nil
	healthAt     time.Time

	lastSent string // signature of the last report handed to the flusher
}

// newSimAlloc turns a server allocation into a simulated one, first seen at now.
func newSimAlloc(a *api.Allocation, now time.Time) *simAlloc {
	s := &simAlloc{id: a.ID, modifyIndex: a.AllocModifyIndex, received: now, healthStart: now}
	if isTerminal(a) {
		s.remembered = true
		return s
	}
	var tg *api.TaskGroup
	if a.Job != nil {
		for _, g := range a.Job.TaskGroups {
			if g.Name != nil && *g.Name == a.TaskGroup {
				tg = g
			}
		}
		if a.Job.Type != nil {
			s.completeOK = *a.Job.Type == structs.JobTypeBatch || *a.Job.Type == structs.JobTypeSysBatch
		}
	}
	if tg == nil {
		s.tasks = []simTask{{name: "unknown", bad: fmt.Sprintf("task group %q not found in the allocation's job", a.TaskGroup)}}
	} else {
		for _, t := range tg.Tasks {
			s.tasks = append(s.tasks, newSimTask(t))
		}
		s.spec = healthSpecOf(a.Job, tg)
		s.migrate = migrateSpecOf(a.Job, tg)
	}
	s.update(a, now)
	return s
}

func newSimTask(t *api.Task) simTask {
	st := simTask{name: t.Name, killTimeout: defaultKillTimeout}
	if t.KillTimeout != nil && *t.KillTimeout > 0 {
		st.killTimeout = *t.KillTimeout
	}
	if t.Driver != mock.Name {
		st.bad = fmt.Sprintf("driver %q is not simulated (only %q)", t.Driver, mock.Name)
		return st
	}
	sc, err := mock.ParseScript(t.Config)
	if err != nil {
		st.bad = "failed to parse task config: " + err.Error()
		return st
	}
	st.script = sc
	return st
}

func healthSpecOf(job *api.Job, tg *api.TaskGroup) healthSpec {
	u := tg.Update
	if u == nil {
		u = job.Update
	}
	var h healthSpec
	if u == nil {
		return h
	}
	if u.HealthCheck != nil {
		h.mode = *u.HealthCheck
	}
	if u.MinHealthyTime != nil {
		h.minHealthyTime = *u.MinHealthyTime
	}
	if u.HealthyDeadline != nil {
		h.healthyDeadline = *u.HealthyDeadline
	}
	return h
}

// migrateSpecOf returns the health part of a service group's migrate
// block (deciding the health of an allocation outside a deployment), or
// nil.
func migrateSpecOf(job *api.Job, tg *api.TaskGroup) *healthSpec {
	m := tg.Migrate
	if m == nil || job.Type == nil || *job.Type != structs.JobTypeService {
		return nil
	}
	h := &healthSpec{}
	if m.HealthCheck != nil {
		h.mode = *m.HealthCheck
	}
	if m.MinHealthyTime != nil {
		h.minHealthyTime = *m.MinHealthyTime
	}
	if m.HealthyDeadline != nil {
		h.healthyDeadline = *m.HealthyDeadline
	}
	return h
}

// healthSpecNow is the spec deciding the allocation's health now: its
// update block in a deployment, else its migrate block; ok is false when
// neither applies.
func (s *simAlloc) healthSpecNow() (healthSpec, bool) {
	switch {
	case s.deploymentID != "":
		return s.spec, true
	case s.migrate != nil:
		return *s.migrate, true
	}
	return healthSpec{}, false
}

func isTerminal(a *api.Allocation) bool {
	switch a.ClientStatus {
	case structs.AllocClientStatusComplete, structs.AllocClientStatusFailed, structs.AllocClientStatusLost:
		return true
	}
	return a.DesiredStatus != "" && a.DesiredStatus != structs.AllocDesiredStatusRun
}

// update applies a newer server version of the allocation seen at now: a
// desired stop, or a move to another deployment (tracking health afresh).
func (s *simAlloc) update(a *api.Allocation, now time.Time) {
	s.modifyIndex = a.AllocModifyIndex
	if s.remembered {
		return
	}
	if a.DesiredStatus != "" && a.DesiredStatus != structs.AllocDesiredStatusRun && s.stopAt.IsZero() {
		s.stopAt = now
	}
	if a.DeploymentID != s.deploymentID {
		s.deploymentID = a.DeploymentID
		s.healthStart, s.healthy, s.healthAt = now, nil, time.Time{}
	}
}

// taskTimes is one task's timeline: it runs from start until end (end
// zero: until stopped); failed says how it ends.
type taskTimes struct {
	start, end time.Time
	failed     bool
	reason     string
}

// timeline computes every task's timeline. Prepares run together from
// received; every task's start blocks after that for its start_block_for;
// a failed prepare or start fails the task at that moment; a stop ends a
// running task after its kill_after (capped by its kill timeout) and a
// task not yet started at once.
func (s *simAlloc) timeline() []taskTimes {
	var prep time.Duration
	prepErr := ""
	for _, t := range s.tasks {
		prep = max(prep, t.script.PrepareFor)
		if t.script.PrepareError != "" && prepErr == "" {
			prepErr = t.script.PrepareError
		}
	}
	prepared := s.received.Add(prep)
	out := make([]taskTimes, len(s.tasks))
	for i, t := range s.tasks {
		var tt taskTimes
		tt.start = prepared.Add(t.script.StartBlockFor)
		switch {
		case prepErr != "":
			tt.start, tt.end, tt.failed, tt.reason = time.Time{}, prepared, true, "prepare failed: "+prepErr
		case t.bad != "":
			tt.start, tt.end, tt.failed, tt.reason = time.Time{}, prepared, true, t.bad
		case t.script.StartError != "":
			tt.start, tt.end, tt.failed, tt.reason = time.Time{}, tt.start, true, "failed to start task: "+t.script.StartError
		case t.script.RunFor > 0:
			tt.end = tt.start.Add(t.script.RunFor)
			tt.failed = t.script.ExitCode != 0
			if tt.failed {
				tt.reason = fmt.Sprintf("exit code %d", t.script.ExitCode)
			}
		}
		if !s.stopAt.IsZero() {
			switch {
			case tt.start.IsZero() && (tt.end.IsZero() || tt.end.After(s.stopAt)):
				tt.end, tt.failed, tt.reason = s.stopAt, false, ""
			case !tt.start.IsZero() && !tt.start.Before(s.stopAt):
				tt.start, tt.end, tt.failed, tt.reason = time.Time{}, s.stopAt, false, ""
			default:
				killed := s.stopAt.Add(min(t.script.KillAfter, t.killTimeout))
				if tt.end.IsZero() || tt.end.After(killed) {
					tt.end, tt.failed, tt.reason = killed, false, ""
				}
			}
		}
		out[i] = tt
	}
	return out
}

// report is what the node tells the server about the allocation at now,
// and the next moment that may change without new input (zero: none).
// It records a deployment health decision in s (decisions are final).
func (s *simAlloc) report(now time.Time) (*api.Allocation, time.Time) {
	var next time.Time
	soon := func(t time.Time) {
		if !t.IsZero() && t.After(now) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	times := s.timeline()
	states := make(map[string]*api.TaskState, len(s.tasks))
	spec, tracked := s.healthSpecNow()
	in := health.Input{Mode: spec.mode, MinHealthyTime: spec.minHealthyTime, HealthyDeadline: spec.healthyDeadline, Start: s.healthStart}
	running, dead, failed := 0, 0, ""
	for i, t := range s.tasks {
		tt := times[i]
		ts := &api.TaskState{State: taskPending}
		ht := health.Task{Name: t.name, State: taskPending}
		switch {
		case !tt.end.IsZero() && !tt.end.After(now):
			ts.State, ts.Failed, ts.FinishedAt = taskDead, tt.failed, tt.end
			ts.StartedAt = tt.start
			ht.State, ht.Failed, ht.CompleteOK = health.TaskDead, tt.failed, s.completeOK && !tt.failed
			dead++
			if tt.failed && failed == "" {
				failed = t.name + ": " + tt.reason
			}
		case !tt.start.IsZero() && !tt.start.After(now):
			ts.State, ts.StartedAt = taskRunning, tt.start
			ht.State, ht.StartedAt = health.TaskRunning, tt.start
			running++
			soon(tt.end)
		default:
			soon(tt.start)
			soon(tt.end)
		}
		states[t.name] = ts
		in.Tasks = append(in.Tasks, ht)
	}
	out := &api.Allocation{ID: s.id, TaskStates: states}
	switch {
	case failed != "":
		out.ClientStatus, out.ClientDescription = structs.AllocClientStatusFailed, "Failed tasks: "+failed
	case dead == len(s.tasks):
		out.ClientStatus, out.ClientDescription = structs.AllocClientStatusComplete, "All tasks have completed"
	case running > 0:
		out.ClientStatus, out.ClientDescription = structs.AllocClientStatusRunning, "Tasks are running"
	default:
		out.ClientStatus, out.ClientDescription = structs.AllocClientStatusPending, "No tasks have started"
	}
	if tracked && s.stopAt.IsZero() && s.healthy == nil {
		r := health.Evaluate(in, now)
		if r.Decided {
			h := r.Healthy
			s.healthy, s.healthAt = &h, now
		} else {
			soon(r.WakeAt)
		}
	}
	if s.healthy != nil {
		h := *s.healthy
		out.DeploymentStatus = &api.AllocDeploymentStatus{Healthy: &h, Timestamp: s.healthAt}
	}
	return out, next
}

// signature identifies what a report says, so that an unchanged report is
// not sent again.
func signature(a *api.Allocation) string {
	var b strings.Builder
	b.WriteString(a.ClientStatus)
	names := make([]string, 0, len(a.TaskStates))
	for n := range a.TaskStates {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		ts := a.TaskStates[n]
		fmt.Fprintf(&b, "|%s=%s/%t", n, ts.State, ts.Failed)
	}
	if a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil {
		fmt.Fprintf(&b, "|healthy=%t", *a.DeploymentStatus.Healthy)
	}
	return b.String()
}
