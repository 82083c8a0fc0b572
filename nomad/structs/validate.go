package structs

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Limits enforced by Validate.
const (
	maxJobIDLength = 128
	minTaskCPU     = 1  // MHz, unless cores are requested
	minTaskMemory  = 10 // MB
	maxPort        = 65535
)

// ValidationError lists every problem found in a submitted job. The HTTP
// layer answers it with 400 and its text; nothing is written.
type ValidationError struct {
	Problems []string
}

// Error formats the problems like hashicorp/go-multierror, which is what
// Nomad users see:
//
//	2 errors occurred:
//		* first problem
//		* second problem
func (e *ValidationError) Error() string {
	if len(e.Problems) == 1 {
		return fmt.Sprintf("1 error occurred:\n\t* %s\n\n", e.Problems[0])
	}
	points := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		points[i] = "* " + p
	}
	return fmt.Sprintf("%d errors occurred:\n\t%s\n\n", len(e.Problems), strings.Join(points, "\n\t"))
}

// Unwrap makes errors.Is(err, ErrBadRequest) hold, so the HTTP layer answers 400.
func (e *ValidationError) Unwrap() error { return ErrBadRequest }

// problems accumulates validation messages.
type problems []string

func (p *problems) addf(format string, args ...any) {
	*p = append(*p, fmt.Sprintf(format, args...))
}

// addAll appends each message of ms behind prefix.
func (p *problems) addAll(prefix string, ms []string) {
	for _, m := range ms {
		*p = append(*p, prefix+m)
	}
}

// addAllWith appends each message of ms between prefix and suffix.
func (p *problems) addAllWith(prefix, suffix string, ms []string) {
	for _, m := range ms {
		*p = append(*p, prefix+m+suffix)
	}
}

// Validate checks a canonicalized job and returns a *ValidationError listing
// every problem, or nil. It expects what the HTTP layer stores: the job-level
// update block already merged into each group (api.Job.Canonicalize), so the
// job-level one is checked only when no group carries an update block.
//
// Any driver name is accepted, as in Nomad: a driver no node has (Drover's
// own are KnownDrivers) fails placement with "missing drivers", and a node
// that gains the driver later places the blocked allocation. Configs are
// checked here only for the basic keys of the known drivers (command,
// image).
func (j *Job) Validate() error {
	if j == nil {
		return &ValidationError{Problems: []string{"missing job"}}
	}
	var p problems
	j.validateHeader(&p)
	j.validateJobUpdate(&p)
	j.validateTemplates(&p)
	for _, c := range j.Constraints {
		p.addAllWith("constraint: ", describeTarget(c), c.Validate())
	}
	for _, a := range j.Affinities {
		p.addAllWith("affinity: ", describeAffinity(a), a.validate())
	}
	j.validateGroups(&p)
	if len(p) == 0 {
		return nil
	}
	return &ValidationError{Problems: p}
}

func (j *Job) validateHeader(p *problems) {
	switch {
	case j.ID == "":
		p.addf("missing job ID")
	case strings.Contains(j.ID, " "):
		p.addf("job ID %q contains a space", j.ID)
	case strings.ContainsRune(j.ID, 0):
		p.addf("job ID contains a null character")
	case len(j.ID) > maxJobIDLength:
		p.addf("job ID must be at most %d characters, got %d", maxJobIDLength, len(j.ID))
	}
	switch {
	case j.Name == "":
		p.addf("missing job name")
	case strings.ContainsRune(j.Name, 0):
		p.addf("job name contains a null character")
	}
	switch j.Type {
	case JobTypeSystem, JobTypeSysBatch, JobTypeService, JobTypeBatch:
	case "":
		p.addf("missing job type")
	default:
		p.addf("Invalid job type: %q", j.Type)
	}
	if j.Priority < 1 || j.Priority > 100 {
		p.addf("job priority must be between 1 and 100, got %d", j.Priority)
	}
	if len(j.Datacenters) == 0 {
		p.addf("datacenters: at least one datacenter is required")
	}
	for i, dc := range j.Datacenters {
		if dc == "" {
			p.addf("datacenters: entry %d is empty", i)
		}
	}
}

// validateJobUpdate checks the job-level update block when it has not been
// merged into the groups (a job that skipped api.Job.Canonicalize).
func (j *Job) validateJobUpdate(p *problems) {
	for _, tg := range j.TaskGroups {
		if tg != nil && tg.Update != nil {
			return
		}
	}
	if j.Update == (UpdateStrategy{}) {
		return
	}
	if j.Type == JobTypeSysBatch && j.Update.MaxParallel > 0 {
		p.addf("update: sysbatch jobs do not support the update block (max_parallel = %d)", j.Update.MaxParallel)
		return
	}
	p.addAll("update: ", j.Update.Validate())
}

func (j *Job) validateGroups(p *problems) {
	if len(j.TaskGroups) == 0 {
		p.addf("job must have at least one task group")
		return
	}
	seen := map[string]int{}
	for i, tg := range j.TaskGroups {
		if tg == nil {
			p.addf("task group %d is null", i)
			continue
		}
		if tg.Name == "" {
			p.addf("task group %d has no name", i)
		} else if seen[tg.Name]++; seen[tg.Name] == 2 {
			p.addf("task group name %q is used more than once", tg.Name)
		}
		p.addAll(fmt.Sprintf("Task group %q validation failed: ", tg.Name), tg.validate(j.Type))
	}
}

// validate returns the problems of one task group of a job of type jobType.
func (tg *TaskGroup) validate(jobType string) []string {
	var p problems
	system := jobType == JobTypeSystem || jobType == JobTypeSysBatch
	if system {
		if tg.Count != 0 && tg.Count != 1 {
			p.addf("system and sysbatch task groups run one allocation per node: count must be 0 or 1, got %d", tg.Count)
		}
	} else if tg.Count < 0 {
		p.addf("Task group count can't be negative")
	}
	if tg.Update != nil {
		switch {
		case (jobType == JobTypeSysBatch || jobType == JobTypeBatch) && tg.Update.MaxParallel > 0:
			p.addf("update: %s jobs do not support the update block (max_parallel = %d)", jobType, tg.Update.MaxParallel)
		default:
			p.addAll("update: ", tg.Update.Validate())
			if system && tg.Update.Canary > 100 {
				// Canary is a percentage of nodes for system jobs and a
				// count of allocations for service jobs.
				p.addf("update: canary must be between 0 and 100, got %d", tg.Update.Canary)
			}
		}
	}
	tg.validateDroverMeta(&p, jobType)
	if tg.ReschedulePolicy != nil && !system {
		p.addAll("reschedule: ", tg.ReschedulePolicy.validate())
	}
	if tg.Migrate != nil && tg.Migrate.MaxParallel < 0 {
		p.addf("migrate: max_parallel must not be negative, got %d", tg.Migrate.MaxParallel)
	}
	if tg.RestartPolicy != nil {
		p.addAll("restart: ", tg.RestartPolicy.validate())
	}
	if tg.Scaling != nil {
		p.addAll("Scaling policy invalid: ", tg.Scaling.validate(tg.Count))
	}
	if tg.EphemeralDisk != nil && tg.EphemeralDisk.SizeMB < 0 {
		p.addf("ephemeral_disk: size must not be negative, got %d", tg.EphemeralDisk.SizeMB)
	}
	if tg.ShutdownDelay != nil && *tg.ShutdownDelay < 0 {
		p.addf("shutdown_delay must not be negative, got %s", *tg.ShutdownDelay)
	}
	if d := tg.MaxRunDuration; d != nil {
		switch {
		case *d < 0:
			p.addf("max_run_duration must not be negative, got %s", *d)
		case *d > 0 && jobType != JobTypeBatch && jobType != JobTypeSysBatch:
			p.addf("max_run_duration is only valid for batch and sysbatch jobs, not %s jobs", jobType)
		}
	}
	for _, c := range tg.Constraints {
		p.addAllWith("constraint: ", describeTarget(c), c.Validate())
	}
	for _, a := range tg.Affinities {
		p.addAllWith("affinity: ", describeAffinity(a), a.validate())
	}
	tg.validateDisconnect(&p)
	tg.undoneGroup(&p)
	tg.validateVolumes(&p)
	groupLabels := validatePorts(&p, "network: ", tg.Networks)
	groupScope := serviceScope{groupTasks: map[string]bool{}}
	for _, t := range tg.Tasks {
		if t != nil {
			groupScope.groupTasks[t.Name] = true
		}
	}
	for i, s := range tg.Services {
		p.addAll(servicePrefix(s, i), s.validate(groupLabels, groupScope))
	}
	tg.validateTasks(&p, groupLabels)
	return p
}

func (tg *TaskGroup) validateTasks(p *problems, groupLabels map[string]bool) {
	if len(tg.Tasks) == 0 {
		p.addf("group must have at least one task")
		return
	}
	seen := map[string]int{}
	var leaders []string
	for i, t := range tg.Tasks {
		if t == nil {
			p.addf("task %d is null", i)
			continue
		}
		switch {
		case t.Name == "":
			p.addf("task %d has no name", i)
		case strings.Contains(t.Name, "/"):
			p.addf("task name %q must not contain \"/\"", t.Name)
		case strings.ContainsRune(t.Name, 0):
			p.addf("task name %q contains a null character", t.Name)
		}
		if t.Name != "" {
			if seen[t.Name]++; seen[t.Name] == 2 {
				p.addf("task name %q is used more than once", t.Name)
			}
		}
		if t.Leader {
			leaders = append(leaders, t.Name)
		}
		p.addAll(fmt.Sprintf("task %q: ", t.Name), t.validate(groupLabels))
	}
	if len(leaders) > 1 {
		p.addf("only one task may be marked as leader, got %d (%s)", len(leaders), strings.Join(leaders, ", "))
	}
}

// validate returns the problems of one task; groupLabels are the port labels
// declared by the group's networks.
func (t *Task) validate(groupLabels map[string]bool) []string {
	var p problems
	if t.Driver == "" {
		p.addf("driver is required")
	}
	labels := groupLabels
	if t.Resources == nil {
		p.addf("resources are required")
	} else {
		p.addAll("resources: ", t.Resources.validate())
		if len(t.Resources.Networks) > 0 {
			taskLabels := validatePorts(&p, "resources: network: ", t.Resources.Networks)
			labels = mergeLabels(groupLabels, taskLabels)
		}
	}
	if err := checkSignal(t.KillSignal); err != nil {
		p.addf("kill_signal: %v", err)
	}
	if t.KillTimeout < 0 {
		p.addf("kill_timeout must not be negative, got %s", t.KillTimeout)
	}
	if t.ShutdownDelay < 0 {
		p.addf("shutdown_delay must not be negative, got %s", t.ShutdownDelay)
	}
	if t.RestartPolicy != nil {
		p.addAll("restart: ", t.RestartPolicy.validate())
	}
	if l := t.Lifecycle; l != nil {
		switch l.Hook {
		case "prestart", "poststart", "poststop":
		default:
			p.addf("lifecycle: hook must be one of prestart, poststart or poststop, got %q", l.Hook)
		}
	}
	if lc := t.LogConfig; lc != nil && !lc.Disabled {
		if lc.MaxFiles < 1 {
			p.addf("logs: max_files must be at least 1, got %d", lc.MaxFiles)
		}
		if lc.MaxFileSizeMB < 1 {
			p.addf("logs: max_file_size must be at least 1 MB, got %d", lc.MaxFileSizeMB)
		}
	}
	for _, c := range t.Constraints {
		p.addAllWith("constraint: ", describeTarget(c), c.Validate())
	}
	for _, a := range t.Affinities {
		p.addAllWith("affinity: ", describeAffinity(a), a.validate())
	}
	for i, s := range t.Services {
		p.addAll(servicePrefix(s, i), s.validate(labels, serviceScope{task: t.Name}))
	}
	if t.DispatchPayload != nil {
		p = append(p, t.DispatchPayload.validate()...)
	}
	for i, a := range t.Artifacts {
		if a == nil {
			p.addf("artifact %d: must not be null", i+1)
			continue
		}
		p.addAll(fmt.Sprintf("artifact %d: ", i+1), a.validate())
	}
	t.validateIdentities(&p)
	t.validateTemplates(&p)
	t.undoneTask(&p)
	p = append(p, t.validateDriverConfig()...)
	return p
}

// KnownDrivers are the task drivers Drover has.
var KnownDrivers = []string{"docker", "exec", "mock", "mock_driver", "raw_exec"}

// requiredConfigKeys lists, per driver, the config keys that must be a
// non-empty string. Other drivers' configs are opaque here.
var requiredConfigKeys = map[string]string{
	"raw_exec": "command",
	"exec":     "command",
	"docker":   "image",
}

func (t *Task) validateDriverConfig() []string {
	key, ok := requiredConfigKeys[t.Driver]
	if !ok {
		return nil
	}
	v, present := t.Config[key]
	if !present || v == nil {
		return []string{fmt.Sprintf("config: %s is required for the %s driver", key, t.Driver)}
	}
	s, isString := v.(string)
	if !isString {
		return []string{fmt.Sprintf("config: %s must be a string for the %s driver, got %T", key, t.Driver, v)}
	}
	if strings.TrimSpace(s) == "" {
		return []string{fmt.Sprintf("config: %s is required for the %s driver", key, t.Driver)}
	}
	return nil
}

func (r *Resources) validate() []string {
	var p problems
	if r.Cores < 0 {
		p.addf("cores must not be negative, got %d", r.Cores)
	}
	switch {
	case r.Cores > 0 && r.CPU > 0:
		p.addf("cpu and cores cannot both be set (cpu = %d, cores = %d)", r.CPU, r.Cores)
	case r.Cores <= 0 && r.CPU < minTaskCPU:
		p.addf("cpu must be at least %d MHz, got %d", minTaskCPU, r.CPU)
	}
	if r.MemoryMB < minTaskMemory {
		p.addf("memory must be at least %d MB, got %d", minTaskMemory, r.MemoryMB)
	}
	if r.MemoryMaxMB != 0 && r.MemoryMaxMB < r.MemoryMB {
		p.addf("memory_max (%d MB) must not be less than memory (%d MB)", r.MemoryMaxMB, r.MemoryMB)
	}
	if r.DiskMB < 0 {
		p.addf("disk must not be negative, got %d", r.DiskMB)
	}
	return p
}

func (r *RestartPolicy) validate() []string {
	var p problems
	if r.Mode != "delay" && r.Mode != "fail" {
		p.addf("mode must be \"delay\" or \"fail\", got %q", r.Mode)
	}
	if r.Attempts < 0 {
		p.addf("attempts must not be negative, got %d", r.Attempts)
	}
	if r.Interval < 0 {
		p.addf("interval must not be negative, got %s", r.Interval)
	}
	if r.Delay < 0 {
		p.addf("delay must not be negative, got %s", r.Delay)
	}
	return p
}

// Validate returns the problems of an update block, unprefixed (callers add
// "update: "). Canary is a percentage of nodes for system jobs (group
// validation bounds it by 100) and a count for service jobs.
func (d *UpdateStrategy) Validate() []string {
	if d == nil {
		return nil
	}
	var p problems
	if d.MaxParallel < 0 {
		p.addf("max_parallel must not be negative, got %d", d.MaxParallel)
	}
	if d.Canary < 0 {
		p.addf("canary must not be negative, got %d", d.Canary)
	}
	switch d.HealthCheck {
	case UpdateHealthCheckChecks, UpdateHealthCheckTaskStates, UpdateHealthCheckManual:
	default:
		p.addf("health_check must be one of %q, %q or %q, got %q",
			UpdateHealthCheckChecks, UpdateHealthCheckTaskStates, UpdateHealthCheckManual, d.HealthCheck)
	}
	if d.Stagger < 0 {
		p.addf("stagger must not be negative, got %s", d.Stagger)
	}
	if d.MinHealthyTime < 0 {
		p.addf("min_healthy_time must not be negative, got %s", d.MinHealthyTime)
	}
	if d.HealthyDeadline <= 0 {
		p.addf("healthy_deadline must be greater than zero, got %s", d.HealthyDeadline)
	} else if d.MinHealthyTime >= d.HealthyDeadline {
		p.addf("min_healthy_time (%s) must be less than healthy_deadline (%s)", d.MinHealthyTime, d.HealthyDeadline)
	}
	switch {
	case d.ProgressDeadline < 0:
		p.addf("progress_deadline must not be negative, got %s", d.ProgressDeadline)
	case d.ProgressDeadline > 0 && d.HealthyDeadline >= d.ProgressDeadline:
		p.addf("healthy_deadline (%s) must be less than progress_deadline (%s)", d.HealthyDeadline, d.ProgressDeadline)
	}
	return p
}

// Reschedule delay functions.
const (
	DelayFunctionConstant    = "constant"
	DelayFunctionExponential = "exponential"
	DelayFunctionFibonacci   = "fibonacci"
)

// minRescheduleDelay is the least delay before a reschedule.
const minRescheduleDelay = 5 * time.Second

// validate returns the problems of a reschedule block, unprefixed.
func (r *ReschedulePolicy) validate() []string {
	var p problems
	if r.Attempts < 0 {
		p.addf("attempts must not be negative, got %d", r.Attempts)
	}
	if r.Interval < 0 {
		p.addf("interval must not be negative, got %s", r.Interval)
	}
	if r.Attempts == 0 && !r.Unlimited {
		return p // rescheduling disabled: the rest does not matter
	}
	switch r.DelayFunction {
	case DelayFunctionConstant, DelayFunctionExponential, DelayFunctionFibonacci:
	default:
		p.addf("Invalid delay function %q, must be one of %q", r.DelayFunction,
			[]string{DelayFunctionConstant, DelayFunctionExponential, DelayFunctionFibonacci})
	}
	if r.Delay < minRescheduleDelay {
		p.addf("Delay cannot be less than %s (got %s)", minRescheduleDelay, r.Delay)
	}
	if r.DelayFunction != DelayFunctionConstant && r.MaxDelay < r.Delay && (r.Unlimited || r.MaxDelay != 0) {
		p.addf("Max Delay cannot be less than Delay %s (got %s)", r.Delay, r.MaxDelay)
	}
	return p
}

// Constraint operators.
const (
	ConstraintDistinctHosts    = "distinct_hosts"
	ConstraintDistinctProperty = "distinct_property"
	ConstraintRegex            = "regexp"
	ConstraintVersion          = "version"
	ConstraintSemver           = "semver"
	ConstraintSetContains      = "set_contains"
	ConstraintSetContainsAll   = "set_contains_all"
	ConstraintSetContainsAny   = "set_contains_any"
	ConstraintAttributeIsSet   = "is_set"
	ConstraintAttributeNotSet  = "is_not_set"
)

// constraintOperators lists every operator a constraint may use.
var constraintOperators = []string{
	"=", "==", "is", "!=", "not", "<", "<=", ">", ">=",
	ConstraintRegex, ConstraintVersion, ConstraintSemver,
	ConstraintSetContains, ConstraintSetContainsAll, ConstraintSetContainsAny,
	ConstraintAttributeIsSet, ConstraintAttributeNotSet,
	ConstraintDistinctHosts, ConstraintDistinctProperty,
}

// Validate returns the problems of a constraint, unprefixed (callers add
// "constraint: ").
func (c *Constraint) Validate() []string {
	if c == nil {
		return []string{"constraint is null"}
	}
	return validateOperand(c.LTarget, c.Operand, c.RTarget, constraintOperators)
}

// affinityOperators are the constraint operators that make sense as a
// preference.
var affinityOperators = []string{
	"=", "==", "is", "!=", "not", "<", "<=", ">", ">=",
	ConstraintRegex, ConstraintVersion, ConstraintSemver,
	ConstraintSetContains, ConstraintSetContainsAll, ConstraintSetContainsAny,
}

func (a *Affinity) validate() []string {
	if a == nil {
		return []string{"affinity is null"}
	}
	p := problems(validateOperand(a.LTarget, a.Operand, a.RTarget, affinityOperators))
	if a.Weight == 0 || a.Weight < -100 || a.Weight > 100 {
		p.addf("weight must be between -100 and 100 and not zero, got %d", a.Weight)
	}
	return p
}

func validateOperand(lTarget, operand, rTarget string, allowed []string) []string {
	var p problems
	if operand == "" {
		p.addf("operator is required")
		return p
	}
	if !slices.Contains(allowed, operand) {
		p.addf("unknown operator %q", operand)
		return p
	}
	if lTarget == "" && operand != ConstraintDistinctHosts {
		p.addf("attribute is required for operator %q", operand)
	}
	switch operand {
	case ConstraintRegex:
		if _, err := regexp.Compile(rTarget); err != nil {
			p.addf("regexp %q does not compile: %v", rTarget, err)
		}
	case "<", "<=", ">", ">=", ConstraintVersion, ConstraintSemver,
		ConstraintSetContains, ConstraintSetContainsAll, ConstraintSetContainsAny:
		if rTarget == "" {
			p.addf("value is required for operator %q", operand)
		}
	case ConstraintDistinctProperty:
		if rTarget != "" {
			if n, err := strconv.ParseUint(rTarget, 10, 64); err != nil || n == 0 {
				p.addf("distinct_property value must be a positive integer, got %q", rTarget)
			}
		}
	}
	return p
}

// describeTarget names a constraint in a problem message.
func describeTarget(c *Constraint) string {
	if c == nil {
		return ""
	}
	return fmt.Sprintf(" (attribute = %q, operator = %q, value = %q)", c.LTarget, c.Operand, c.RTarget)
}

// describeAffinity names an affinity in a problem message.
func describeAffinity(a *Affinity) string {
	if a == nil {
		return ""
	}
	return fmt.Sprintf(" (attribute = %q, operator = %q, value = %q)", a.LTarget, a.Operand, a.RTarget)
}

// validatePorts checks the ports of a set of networks and returns the labels
// they declare. Labels must be unique, static ports in 1..65535 and used once,
// and "to" at least -1.
func validatePorts(p *problems, prefix string, networks []*NetworkResource) map[string]bool {
	labels := map[string]bool{}
	static := map[int]string{} // host port → first label using it
	for _, n := range networks {
		if n == nil {
			continue
		}
		for _, port := range n.ReservedPorts {
			checkLabel(p, prefix, labels, port.Label)
			switch {
			case port.Value < 1 || port.Value > maxPort:
				p.addf("%sstatic port %d of label %q must be between 1 and %d", prefix, port.Value, port.Label, maxPort)
			case hasStatic(static, port.Value):
				p.addf("%sport %d is used twice: labels %q and %q", prefix, port.Value, static[port.Value], port.Label)
			default:
				static[port.Value] = port.Label
			}
			if port.To < -1 {
				p.addf("%sport %q: to must be -1 or greater, got %d", prefix, port.Label, port.To)
			}
		}
		for _, port := range n.DynamicPorts {
			checkLabel(p, prefix, labels, port.Label)
			if port.To < -1 {
				p.addf("%sport %q: to must be -1 or greater, got %d", prefix, port.Label, port.To)
			}
		}
	}
	return labels
}

// hasStatic reports whether port is recorded in static, even under an empty label.
func hasStatic(static map[int]string, port int) bool {
	_, ok := static[port]
	return ok
}

func checkLabel(p *problems, prefix string, labels map[string]bool, label string) {
	switch {
	case label == "":
		p.addf("%sport label is required", prefix)
	case labels[label]:
		p.addf("%sport label %q is declared twice", prefix, label)
	default:
		labels[label] = true
	}
}

func mergeLabels(a, b map[string]bool) map[string]bool {
	m := make(map[string]bool, len(a)+len(b))
	for k := range a {
		m[k] = true
	}
	for k := range b {
		m[k] = true
	}
	return m
}

func servicePrefix(s *Service, i int) string {
	if s == nil || s.Name == "" {
		return fmt.Sprintf("service %d: ", i)
	}
	return fmt.Sprintf("service %q: ", s.Name)
}

// checkTypes are the accepted service check types.
var checkTypes = []string{"http", "tcp", "script", "grpc"}

// validate returns the problems of a service; labels are the port labels in
// scope (the group's networks, plus the task's for task services) and
// scope says whose service it is.
func (s *Service) validate(labels map[string]bool, scope serviceScope) []string {
	if s == nil {
		return []string{"service is null"}
	}
	var p problems
	if strings.TrimSpace(s.Name) == "" {
		p.addf("name is required")
	}
	if msg := portLabelProblem(s.PortLabel, labels); msg != "" {
		p.addf("%s", msg)
	}
	switch s.AddressMode {
	case "", ServiceAddressModeAuto, ServiceAddressModeHost, ServiceAddressModeAlloc, ServiceAddressModeDriver:
	default:
		p.addf("address_mode must be one of auto, host, alloc or driver, got %q", s.AddressMode)
	}
	if s.Address != "" && s.AddressMode != "" && s.AddressMode != ServiceAddressModeAuto {
		p.addf("address cannot be set with address_mode %q", s.AddressMode)
	}
	s.undoneService(&p)
	for i, c := range s.Checks {
		prefix := fmt.Sprintf("check %q: ", c.Name)
		if c.Name == "" {
			prefix = fmt.Sprintf("check %d: ", i)
		}
		p.addAll(prefix, c.validate(labels))
		p.addAll(prefix, s.validateCheckTask(c, scope))
	}
	return p
}

func (c *ServiceCheck) validate(labels map[string]bool) []string {
	var p problems
	if !slices.Contains(checkTypes, c.Type) {
		p.addf("type must be one of %s, got %q", strings.Join(checkTypes, ", "), c.Type)
	}
	if c.Type == "http" && c.Path == "" {
		p.addf("path is required for http checks")
	}
	if c.Type == "script" && c.Command == "" {
		p.addf("command is required for script checks")
	}
	if c.Interval <= 0 {
		p.addf("interval must be greater than zero, got %s", c.Interval)
	}
	if c.Timeout <= 0 {
		p.addf("timeout must be greater than zero, got %s", c.Timeout)
	}
	if msg := portLabelProblem(c.PortLabel, labels); msg != "" {
		p.addf("%s", msg)
	}
	c.undoneCheck(&p)
	return p
}

// portLabelProblem describes why label does not name a declared port, or
// returns "". Empty labels, numeric ports and interpolated labels are accepted.
func portLabelProblem(label string, labels map[string]bool) string {
	if label == "" || labels[label] || strings.Contains(label, "${") {
		return ""
	}
	if _, err := strconv.Atoi(label); err == nil {
		return ""
	}
	return fmt.Sprintf("port label %q is not declared in any network block", label)
}
