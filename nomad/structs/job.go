package structs

import "time"

// Job is one version of a job specification plus the fields the server keeps
// about it. A stored Job is canonical: every default has been filled in.
type Job struct {
	Region      string
	Namespace   string
	ID          string
	Name        string
	Type        string
	Priority    int
	AllAtOnce   bool
	Datacenters []string
	NodePool    string
	Constraints []*Constraint
	Affinities  []*Affinity
	Spreads     []*Spread
	TaskGroups  []*TaskGroup
	Update      UpdateStrategy
	Meta        map[string]string
	// Periodic and ParameterizedJob make the job a template that never runs
	// allocations itself (see periodic.go).
	Periodic         *PeriodicConfig
	ParameterizedJob *ParameterizedJobConfig
	// Dispatched, DispatchIdempotencyToken and Payload are set by the
	// server on a dispatched child job. Payload is stored compressed, as
	// PayloadEncoding says ("" for raw); read it with DecodedPayload.
	Dispatched               bool
	DispatchIdempotencyToken string
	Payload                  []byte
	PayloadEncoding          string

	// Server-set fields.
	Stop              bool
	ParentID          string
	Status            string
	StatusDescription string
	Stable            bool
	Version           uint64
	SubmitTime        int64 // unix nanoseconds
	CreateIndex       uint64
	ModifyIndex       uint64
	JobModifyIndex    uint64
	// VersionTag names and describes this version. The server sets it (the
	// image watcher records why it made a version); a submitted one is
	// dropped. It is not part of the specification.
	VersionTag *JobVersionTag
}

// JobVersionTag is a name and description attached to a job version.
type JobVersionTag struct {
	Name        string
	Description string
	TaggedTime  int64 // unix nanoseconds
}

// LookupTaskGroup returns the group named name, or nil.
func (j *Job) LookupTaskGroup(name string) *TaskGroup {
	for _, tg := range j.TaskGroups {
		if tg.Name == name {
			return tg
		}
	}
	return nil
}

// Copy returns a copy deep enough that the caller may change top-level fields
// and replace (not mutate) nested ones.
func (j *Job) Copy() *Job {
	if j == nil {
		return nil
	}
	c := *j
	c.Datacenters = append([]string(nil), j.Datacenters...)
	c.TaskGroups = append([]*TaskGroup(nil), j.TaskGroups...)
	return &c
}

// Stopped reports whether the job has been stopped (deregistered without purge).
func (j *Job) Stopped() bool { return j == nil || j.Stop }

// NamespacedID identifies a job across namespaces.
type NamespacedID struct {
	Namespace string
	ID        string
}

// NamespacedID returns the job's namespaced identifier.
func (j *Job) NamespacedID() NamespacedID { return NamespacedID{Namespace: j.Namespace, ID: j.ID} }

// TaskGroup is a set of tasks placed together; system jobs place one per node.
type TaskGroup struct {
	Name             string
	Count            int
	Constraints      []*Constraint
	Affinities       []*Affinity
	Spreads          []*Spread
	Tasks            []*Task
	RestartPolicy    *RestartPolicy
	ReschedulePolicy *ReschedulePolicy
	EphemeralDisk    *EphemeralDisk
	Update           *UpdateStrategy // nil: no deployment for this group
	Migrate          *MigrateStrategy
	Networks         []*NetworkResource
	Meta             map[string]string
	Services         []*Service
	ShutdownDelay    *time.Duration
	// MaxRunDuration (batch and sysbatch jobs) bounds how long an
	// allocation of the group runs: the client kills its tasks when it is
	// up and the allocation completes. nil or 0: no bound.
	MaxRunDuration *time.Duration
	// Disconnect says what happens to the group's allocations when their
	// node stops heartbeating (see DisconnectStrategy); nil: they are lost
	// and replaced at the heartbeat deadline.
	Disconnect *DisconnectStrategy
	// StopAfterClientDisconnect is the older form of
	// Disconnect.StopOnClientAfter, MaxClientDisconnect of
	// Disconnect.LostAfter (with replacement); see the TaskGroup methods
	// LostAfter and StopOnClientAfter, which read either form.
	StopAfterClientDisconnect *time.Duration
	MaxClientDisconnect       *time.Duration
	// PreventRescheduleOnLost is the older form of disconnect.replace =
	// false (see ReplaceDisconnected).
	PreventRescheduleOnLost bool
	// Scaling bounds the count changes of `job scale`.
	Scaling *ScalingPolicy
	// Volumes are the group's volume blocks by name (see volumes.go).
	Volumes map[string]*VolumeRequest
}

// LookupTask returns the task named name, or nil.
func (tg *TaskGroup) LookupTask(name string) *Task {
	for _, t := range tg.Tasks {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// UsesDeployment reports whether changes to this group roll out as a deployment.
func (tg *TaskGroup) UsesDeployment() bool {
	return tg.Update != nil && tg.Update.MaxParallel > 0
}

// Task is one unit of work run by a driver.
type Task struct {
	Name          string
	Driver        string
	User          string
	Lifecycle     *TaskLifecycle
	Config        map[string]any
	Constraints   []*Constraint
	Affinities    []*Affinity
	Env           map[string]string
	Services      []*Service
	Resources     *Resources
	RestartPolicy *RestartPolicy
	Meta          map[string]string
	KillTimeout   time.Duration
	LogConfig     *LogConfig
	Leader        bool
	ShutdownDelay time.Duration
	KillSignal    string
	Kind          string
	// DispatchPayload names the file the dispatch payload is written to.
	DispatchPayload *DispatchPayloadConfig
	Identity        *WorkloadIdentity   // the default identity; see identity.go
	Identities      []*WorkloadIdentity // named identities
	// Templates are rendered by the client before the task starts; see
	// template.go.
	Templates []*Template
	// Artifacts are fetched into the task directory before the task
	// starts; see artifact.go.
	Artifacts []*TaskArtifact
	// VolumeMounts mount the group's volumes into the task.
	VolumeMounts []*VolumeMount
}

// TaskLifecycle orders a task relative to the group's main tasks.
type TaskLifecycle struct {
	Hook    string
	Sidecar bool
}

// UpdateStrategy is the `update` block: how a new job version rolls out.
// MaxParallel 0 means no deployment (all at once). Canary is a percentage of
// nodes for system jobs.
type UpdateStrategy struct {
	Stagger          time.Duration
	MaxParallel      int
	HealthCheck      string
	MinHealthyTime   time.Duration
	HealthyDeadline  time.Duration
	ProgressDeadline time.Duration
	Canary           int
	AutoRevert       bool
	AutoPromote      bool
}

// Constraint restricts the nodes a job, group or task may run on.
type Constraint struct {
	LTarget string
	RTarget string
	Operand string
}

// Affinity expresses a placement preference. Accepted and stored; system jobs
// place on every feasible node, so it does not change placement.
type Affinity struct {
	LTarget string
	RTarget string
	Operand string
	Weight  int8
}

// Spread is accepted and stored; it does not change system placement.
type Spread struct {
	Attribute    string
	Weight       int8
	SpreadTarget []*SpreadTarget
}

// SpreadTarget is one target value of a Spread.
type SpreadTarget struct {
	Value   string
	Percent uint8
}

// RestartPolicy governs local restarts of failed tasks.
type RestartPolicy struct {
	Interval        time.Duration
	Attempts        int
	Delay           time.Duration
	Mode            string
	RenderTemplates bool
}

// ReschedulePolicy is accepted for compatibility; system jobs do not reschedule.
type ReschedulePolicy struct {
	Attempts      int
	Interval      time.Duration
	Delay         time.Duration
	DelayFunction string
	MaxDelay      time.Duration
	Unlimited     bool
}

// MigrateStrategy is accepted for compatibility.
type MigrateStrategy struct {
	MaxParallel     int
	HealthCheck     string
	MinHealthyTime  time.Duration
	HealthyDeadline time.Duration
}

// EphemeralDisk describes the group's local disk.
type EphemeralDisk struct {
	Sticky  bool
	Migrate bool
	SizeMB  int
}

// KeepsData reports whether a replacement of the group's allocation
// inherits the previous allocation's alloc/data and task local/
// directories: sticky, or migrate (which implies sticky, as in Nomad).
// The scheduler then prefers the previous allocation's node; with
// migrate the client also fetches the data from another node.
func (d *EphemeralDisk) KeepsData() bool { return d != nil && (d.Sticky || d.Migrate) }

// LogConfig bounds the rotated task logs.
type LogConfig struct {
	MaxFiles      int
	MaxFileSizeMB int
	Disabled      bool
}

// JobSummary counts a job's allocations per task group by client status.
type JobSummary struct {
	JobID       string
	Namespace   string
	Summary     map[string]TaskGroupSummary
	CreateIndex uint64
	ModifyIndex uint64
}

// TaskGroupSummary counts a group's allocations by client status.
type TaskGroupSummary struct {
	Queued   int
	Complete int
	Failed   int
	Running  int
	Starting int
	Lost     int
	Unknown  int
}
