package structs

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/cronexpr"
)

// Child job ID suffixes, as Nomad names them: a periodic launch is
// "<parent>/periodic-<unix seconds>", a dispatch
// "<parent>/dispatch-<unix seconds>-<8 hex>".
const (
	PeriodicLaunchSuffix = "/periodic-"
	DispatchLaunchSuffix = "/dispatch-"
)

// PeriodicSpecCron is the only periodic spec type: cron expressions.
const PeriodicSpecCron = "cron"

// DispatchPayloadSizeLimit is the largest payload a dispatch may carry.
const DispatchPayloadSizeLimit = 16 * 1024

// Payload requirements of a parameterized job.
const (
	DispatchPayloadOptional  = "optional"
	DispatchPayloadRequired  = "required"
	DispatchPayloadForbidden = "forbidden"
)

// PeriodicConfig is the `periodic` block: the job is a template from which
// the leader launches a child job at every time its cron expressions match.
type PeriodicConfig struct {
	Enabled bool
	// Spec is a single cron expression; Specs are more. Both may be set:
	// the next launch is the earliest match of any.
	Spec            string
	Specs           []string
	SpecType        string
	ProhibitOverlap bool
	// TimeZone is an IANA zone name the expressions are read in ("UTC"
	// when empty).
	TimeZone string
}

// ParameterizedJobConfig is the `parameterized` block: the job is a
// template from which `job dispatch` creates child jobs.
type ParameterizedJobConfig struct {
	Payload      string
	MetaRequired []string
	MetaOptional []string
}

// DispatchPayloadConfig is a task's `dispatch_payload` block: the file,
// relative to the task's local directory, the dispatch payload is written to.
type DispatchPayloadConfig struct {
	File string
}

// IsPeriodic reports whether the job is a periodic template.
func (j *Job) IsPeriodic() bool { return j != nil && j.Periodic != nil }

// IsPeriodicActive reports whether the leader launches children of the job:
// periodic, enabled and not stopped.
func (j *Job) IsPeriodicActive() bool {
	return j.IsPeriodic() && j.Periodic.Enabled && !j.Stop && !j.IsParameterized()
}

// IsParameterized reports whether the job is a parameterized template (a
// dispatched child carries the block too, but is not a template).
func (j *Job) IsParameterized() bool {
	return j != nil && j.ParameterizedJob != nil && !j.Dispatched
}

// IsTemplate reports whether the job only launches children and never runs
// allocations of its own: a periodic or parameterized parent.
func (j *Job) IsTemplate() bool { return j.IsPeriodic() || j.IsParameterized() }

// Location returns the time zone the periodic expressions are read in.
func (p *PeriodicConfig) Location() (*time.Location, error) {
	if p.TimeZone == "" {
		return time.UTC, nil
	}
	return time.LoadLocation(p.TimeZone)
}

// specs returns every cron expression of p.
func (p *PeriodicConfig) specs() []string {
	var out []string
	if p.Spec != "" {
		out = append(out, p.Spec)
	}
	return append(out, p.Specs...)
}

// Next returns the earliest time strictly after from at which any of p's
// expressions match, read in p's time zone, or the zero time when none will
// match again. The result is in UTC.
func (p *PeriodicConfig) Next(from time.Time) (time.Time, error) {
	loc, err := p.Location()
	if err != nil {
		return time.Time{}, err
	}
	var next time.Time
	for _, s := range p.specs() {
		t, err := cronNext(s, from.In(loc))
		if err != nil {
			return time.Time{}, err
		}
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	if next.IsZero() {
		return next, nil
	}
	return next.UTC(), nil
}

// cronNext returns the next match of expression spec after from; a panic
// of the cron library on a pathological expression is an error.
func cronNext(spec string, from time.Time) (t time.Time, err error) {
	defer func() {
		if r := recover(); r != nil {
			t, err = time.Time{}, fmt.Errorf("failed parsing cron expression: %q", spec)
		}
	}()
	e, err := cronexpr.Parse(spec)
	if err != nil {
		return time.Time{}, err
	}
	return e.Next(from), nil
}

// validate returns the problems of a periodic block, Nomad's wording.
func (p *PeriodicConfig) validate() []string {
	var out []string
	if p.SpecType != "" && p.SpecType != PeriodicSpecCron {
		out = append(out, fmt.Sprintf("Unknown periodic specification type %q", p.SpecType))
	}
	specs := p.specs()
	if len(specs) == 0 {
		out = append(out, "Must specify a spec")
	}
	for _, s := range specs {
		if _, err := cronNext(s, time.Unix(0, 0)); err != nil {
			out = append(out, fmt.Sprintf("Invalid cron spec %q: %v", s, err))
		}
	}
	if _, err := p.Location(); err != nil {
		out = append(out, fmt.Sprintf("Invalid time zone %q: %v", p.TimeZone, err))
	}
	return out
}

// validate returns the problems of a parameterized block.
func (d *ParameterizedJobConfig) validate() []string {
	var out []string
	switch d.Payload {
	case "", DispatchPayloadOptional, DispatchPayloadRequired, DispatchPayloadForbidden:
	default:
		out = append(out, fmt.Sprintf("Unknown payload requirement: %q", d.Payload))
	}
	for _, k := range d.MetaRequired {
		if slices.Contains(d.MetaOptional, k) {
			out = append(out, fmt.Sprintf("Meta key %q is both required and optional", k))
		}
	}
	return out
}

// validateTemplates checks the periodic and parameterized blocks of a job.
func (j *Job) validateTemplates(p *problems) {
	if j.Periodic != nil {
		if j.Type != JobTypeBatch && j.Type != JobTypeSysBatch {
			p.addf("Periodic can only be used with %q or %q scheduler", JobTypeBatch, JobTypeSysBatch)
		}
		p.addAll("periodic: ", j.Periodic.validate())
	}
	if j.ParameterizedJob != nil {
		if j.Type != JobTypeBatch && j.Type != JobTypeSysBatch {
			p.addf("Parameterized job can only be used with %q or %q scheduler", JobTypeBatch, JobTypeSysBatch)
		}
		if j.Periodic != nil {
			p.addf("Parameterized job can't be periodic")
		}
		p.addAll("parameterized: ", j.ParameterizedJob.validate())
	}
	j.validatePayload(p)
}

// validatePayload checks the size of the payload as it was dispatched.
func (j *Job) validatePayload(p *problems) {
	if payload, err := j.DecodedPayload(); err != nil {
		p.addf("Payload: %v", err)
	} else if len(payload) > DispatchPayloadSizeLimit {
		p.addf("Payload exceeds maximum size; %d > %d", len(payload), DispatchPayloadSizeLimit)
	}
}

// validate returns the problems of a dispatch_payload block.
func (d *DispatchPayloadConfig) validate() []string {
	switch {
	case d.File == "":
		return nil
	case filepath.IsAbs(d.File) || strings.HasPrefix(filepath.Clean(d.File), ".."):
		return []string{fmt.Sprintf("dispatch_payload: file %q escapes the task's local directory", d.File)}
	}
	return nil
}

// PeriodicLaunch records the latest launch of a periodic job: the time a
// child was launched for (or, with prohibit_overlap, skipped). Kept in raft
// so that a new leader neither launches that time again nor skips the next.
type PeriodicLaunch struct {
	Namespace   string
	ID          string // the parent job's ID
	Launch      time.Time
	CreateIndex uint64
	ModifyIndex uint64
}

// PeriodicLaunchRequest records a periodic launch and, unless Child is nil
// (a launch skipped because of prohibit_overlap), registers the child job
// and its evaluation, in one raft entry.
type PeriodicLaunchRequest struct {
	Launch     *PeriodicLaunch
	Child      *Job
	Eval       *Evaluation
	SubmitTime int64
}

// PeriodicChildID returns the ID of parent's child launched at t.
func PeriodicChildID(parentID string, t time.Time) string {
	return fmt.Sprintf("%s%s%d", parentID, PeriodicLaunchSuffix, t.Unix())
}

// DeriveChild returns a copy of the template job as a child with id: the
// template blocks stay on the child as Nomad keeps them, but it is not a
// template any more (its ParentID is set, periodic dropped).
func (j *Job) DeriveChild(id string) *Job {
	c := j.Copy()
	c.ID, c.Name, c.ParentID = id, id, j.ID
	c.Periodic = nil
	c.Stop = false
	c.Status, c.StatusDescription, c.Stable, c.Version = "", "", false, 0
	c.CreateIndex, c.ModifyIndex, c.JobModifyIndex, c.SubmitTime = 0, 0, 0, 0
	c.VersionTag = nil
	return c
}

// Evaluation triggers of periodic launches and scaling, Nomad's strings.
const (
	EvalTriggerPeriodicJob = "periodic-job"
	EvalTriggerScaling     = "job-scaling"
)
