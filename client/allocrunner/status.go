package allocrunner

import (
	"github.com/drover-project/drover/client/allocrunner/taskrunner"
	"github.com/drover-project/drover/nomad/structs"
)

// Client status descriptions, in Nomad's wording.
const (
	DescFailed   = "Failed tasks"
	DescRunning  = "Tasks are running"
	DescPending  = "No tasks have started"
	DescComplete = "All tasks have completed"
	// DescMaxRunExceeded describes a complete allocation whose tasks were
	// killed when its group's max_run_duration was up.
	DescMaxRunExceeded = "allocation exceeded max_run_duration"
)

// ClientStatus derives an allocation's client status from its task states:
//
//	failed    a task is dead and failed (it will not restart)
//	running   otherwise, a task is running
//	pending   otherwise, a task is pending (not started yet, or waiting to
//	          restart), or there are no task states
//	complete  every task is dead and none failed
func ClientStatus(states map[string]*structs.TaskState) (status, description string) {
	var failed, running, pending, dead bool
	for _, st := range states {
		if st == nil {
			pending = true
			continue
		}
		switch st.State {
		case taskrunner.StateRunning:
			running = true
		case taskrunner.StateDead:
			if st.Failed {
				failed = true
			} else {
				dead = true
			}
		default:
			pending = true
		}
	}
	switch {
	case failed:
		return structs.AllocClientStatusFailed, DescFailed
	case running:
		return structs.AllocClientStatusRunning, DescRunning
	case pending || !dead:
		return structs.AllocClientStatusPending, DescPending
	}
	return structs.AllocClientStatusComplete, DescComplete
}
