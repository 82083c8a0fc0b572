package health

import (
	"fmt"
	"time"
)

// CheckRestart is a check's check_restart block, merged with its
// service's: restart the check's task after Limit unhealthy results in a
// row, not counting results taken within Grace of the task's (re)start.
// A warning is unhealthy unless IgnoreWarnings. Limit 0 disables it.
type CheckRestart struct {
	Limit          int
	Grace          time.Duration
	IgnoreWarnings bool
}

// ObserveRestart applies check_restart to one check result (pure).
// failures is the count of unhealthy results in a row so far; status the
// new result's, taken at `at`; taskStarted when the check's task last
// started (zero while it is not running). It returns the new count and
// whether the task must restart now (the count then starts over). A
// passing result (or an ignored warning) resets the count; so do results
// while the task is not running or within the grace period; a pending
// check changes nothing.
func ObserveRestart(cr CheckRestart, failures int, status string, taskStarted, at time.Time) (next int, restart bool) {
	switch {
	case cr.Limit <= 0, taskStarted.IsZero(), at.Before(taskStarted.Add(cr.Grace)):
		return 0, false
	case status == StatusPending:
		return failures, false
	case status == StatusSuccess, status == StatusWarning && cr.IgnoreWarnings:
		return 0, false
	}
	if failures+1 >= cr.Limit {
		return 0, true
	}
	return failures + 1, false
}

// RestartReason is the reason of the "Restart Signaled" event of a task
// restarted by check_restart (Nomad's wording).
func RestartReason(checkName string) string {
	return fmt.Sprintf("health check: check %q unhealthy", checkName)
}
