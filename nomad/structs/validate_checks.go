package structs

import "time"

// Check settings that depend on the service around the check: the task a
// script check runs in and a check_restart restarts, and how check_restart
// goes with on_update (Nomad's rules).

// On_update values of services and checks.
const (
	OnUpdateRequireHealthy = "require_healthy"
	OnUpdateIgnoreWarnings = "ignore_warnings"
	OnUpdateIgnore         = "ignore"
)

// serviceScope says whose service is validated: a task's (task set) or
// the group's (groupTasks, the names of the group's tasks).
type serviceScope struct {
	task       string
	groupTasks map[string]bool
}

// CheckTask returns the task a check of s runs in (script checks) and
// restarts (check_restart): the check's task, else the service's; for a
// task service, that task. "" for a group service check without one: its
// check_restart restarts every task of the allocation.
func (s *Service) CheckTask(c ServiceCheck, serviceTask string) string {
	switch {
	case serviceTask != "":
		return serviceTask
	case c.TaskName != "":
		return c.TaskName
	}
	return s.TaskName
}

// validateCheckTask returns the problems of check c of s that need the
// service's scope.
func (s *Service) validateCheckTask(c ServiceCheck, scope serviceScope) []string {
	var p problems
	cr := s.CheckRestart.Merge(c.CheckRestart)
	if scope.task != "" {
		if c.TaskName != "" && c.TaskName != scope.task {
			p.addf("task %q must be unset or the service's own task %q", c.TaskName, scope.task)
		}
	} else {
		task := s.CheckTask(c, "")
		switch {
		case task == "" && c.Type == "script":
			p.addf("task is required for script checks of a group service: it names the task the command runs in")
		case task != "" && !scope.groupTasks[task]:
			p.addf("task %q is not a task of the group", task)
		}
	}
	onUpdate := c.OnUpdate
	if onUpdate == "" {
		onUpdate = s.OnUpdate
	}
	switch onUpdate {
	case "", OnUpdateRequireHealthy, OnUpdateIgnoreWarnings, OnUpdateIgnore:
	default:
		p.addf("on_update must be one of %s, %s or %s, got %q", OnUpdateRequireHealthy, OnUpdateIgnoreWarnings, OnUpdateIgnore, onUpdate)
	}
	if cr != nil {
		if cr.Limit < 0 {
			p.addf("check_restart: limit must not be negative, got %d", cr.Limit)
		}
		if cr.Grace < 0 {
			p.addf("check_restart: grace must not be negative, got %s", cr.Grace.Round(time.Millisecond))
		}
		switch {
		case onUpdate == OnUpdateIgnore:
			p.addf("check_restart must be omitted when on_update is %q", OnUpdateIgnore)
		case onUpdate == OnUpdateIgnoreWarnings && !cr.IgnoreWarnings:
			p.addf("on_update %q needs check_restart ignore_warnings = true", OnUpdateIgnoreWarnings)
		}
	}
	return p
}
