package taskrunner

import (
	"fmt"
	"strconv"
	"time"

	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/nomad/structs"
)

// Task states, as Nomad reports them.
const (
	StatePending = "pending"
	StateRunning = "running"
	StateDead    = "dead"
)

// Task event types, in Nomad's wording (the CLI and users match on them).
const (
	EventReceived         = "Received"
	EventSetup            = "Task Setup"
	EventDriver           = "Driver"
	EventStarted          = "Started"
	EventTerminated       = "Terminated"
	EventRestarting       = "Restarting"
	EventNotRestarting    = "Not Restarting"
	EventKilling          = "Killing"
	EventKilled           = "Killed"
	EventDriverFailure    = "Driver Failure"
	EventSetupFailure     = "Setup Failure"
	EventFailedValidation = "Failed Validation"
	EventSiblingFailed    = "Sibling Task Failed"
	EventLeaderDead       = "Leader Task Dead"
	EventMainDead         = "Main Tasks Dead"
	EventShutdownDelay    = "Waiting for shutdown delay"
	EventRestoreFailed    = "Failed Restoring Task"
	EventAllocUnhealthy   = "Alloc Unhealthy"
	EventMaxRunExceeded   = "Max Run Duration Exceeded"
)

// Keys of TaskEvent.Details.
const (
	DetailExitCode      = "exit_code"
	DetailSignal        = "signal"
	DetailOOMKilled     = "oom_killed"
	DetailExitMessage   = "exit_message"
	DetailRestartReason = "restart_reason"
	DetailStartDelay    = "start_delay" // nanoseconds
	DetailKillTimeout   = "kill_timeout"
	DetailKillReason    = "kill_reason"
	DetailDriverError   = "driver_error"
	DetailSetupError    = "setup_error"
	DetailValidation    = "validation_error"
	DetailFailsTask     = "fails_task"
	DetailFailedSibling = "failed_sibling"
	DetailPhase         = "phase" // "prepare" on prepare events
	DetailBytesDone     = "bytes_done"
	DetailBytesTotal    = "bytes_total"
	DetailPercent       = "percent"
)

// maxEvents is how many events a task state keeps (the oldest go first).
const maxEvents = 10

// newEvent returns an event of type typ with its display message.
func newEvent(typ string, now time.Time, display string) *structs.TaskEvent {
	return &structs.TaskEvent{Type: typ, Time: now.UnixNano(), DisplayMessage: display, Details: map[string]string{}}
}

func eventReceived(now time.Time) *structs.TaskEvent {
	return newEvent(EventReceived, now, "Task received by client")
}

func eventSetup(now time.Time, msg string) *structs.TaskEvent {
	e := newEvent(EventSetup, now, msg)
	e.Message = msg
	return e
}

func eventDriver(now time.Time, msg string) *structs.TaskEvent {
	e := newEvent(EventDriver, now, msg)
	e.Message = msg
	return e
}

// eventPrepareStart opens the prepare phase.
func eventPrepareStart(now time.Time) *structs.TaskEvent {
	e := eventDriver(now, "Preparing task")
	e.Details[DetailPhase] = "prepare"
	return e
}

// eventPrepareProgress is a progress event of PrepareTask.
func eventPrepareProgress(now time.Time, p drivers.PrepareProgress) *structs.TaskEvent {
	msg := p.Message
	if msg == "" {
		msg = "Preparing task"
	}
	display := msg
	if p.BytesTotal > 0 {
		display = fmt.Sprintf("%s: %.1f%% (%s of %s)", msg, p.Percent(), humanBytes(p.BytesDone), humanBytes(p.BytesTotal))
	} else if p.BytesDone > 0 {
		display = fmt.Sprintf("%s: %s", msg, humanBytes(p.BytesDone))
	}
	e := eventDriver(now, display)
	e.Message = msg
	e.Details[DetailPhase] = "prepare"
	e.Details[DetailBytesDone] = strconv.FormatInt(p.BytesDone, 10)
	e.Details[DetailBytesTotal] = strconv.FormatInt(p.BytesTotal, 10)
	e.Details[DetailPercent] = strconv.FormatFloat(p.Percent(), 'f', 1, 64)
	return e
}

func isProgress(e *structs.TaskEvent) bool {
	return e != nil && e.Type == EventDriver && e.Details[DetailBytesDone] != ""
}

func eventStarted(now time.Time) *structs.TaskEvent {
	return newEvent(EventStarted, now, "Task started by client")
}

func eventTerminated(now time.Time, res *drivers.ExitResult) *structs.TaskEvent {
	e := newEvent(EventTerminated, now, "")
	if res == nil {
		res = &drivers.ExitResult{Err: fmt.Errorf("no exit result")}
	}
	e.ExitCode, e.Signal = res.ExitCode, res.Signal
	e.Details[DetailExitCode] = strconv.Itoa(res.ExitCode)
	e.Details[DetailSignal] = strconv.Itoa(res.Signal)
	display := fmt.Sprintf("Exit Code: %d", res.ExitCode)
	if res.Signal != 0 {
		display += fmt.Sprintf(", Signal: %d", res.Signal)
	}
	if res.OOMKilled {
		e.Details[DetailOOMKilled] = "true"
		display += ", OOM Killed"
	}
	if res.Err != nil {
		e.Message = res.Err.Error()
		e.Details[DetailExitMessage] = e.Message
		display += fmt.Sprintf(", Exit Message: %q", e.Message)
	}
	e.DisplayMessage = display
	return e
}

func eventRestarting(now time.Time, delay time.Duration, reason string) *structs.TaskEvent {
	display := fmt.Sprintf("Task restarting in %v", delay)
	if reason != "" && reason != "Restart within policy" {
		display = reason + " - " + display
	}
	e := newEvent(EventRestarting, now, display)
	e.Details[DetailRestartReason] = reason
	e.Details[DetailStartDelay] = strconv.FormatInt(int64(delay), 10)
	return e
}

func eventNotRestarting(now time.Time, reason string) *structs.TaskEvent {
	display := reason
	if display == "" {
		display = "Task exceeded restart policy"
	}
	e := newEvent(EventNotRestarting, now, display)
	e.FailsTask = true
	e.Details[DetailRestartReason] = reason
	e.Details[DetailFailsTask] = "true"
	return e
}

func eventKilling(now time.Time, timeout time.Duration, reason string) *structs.TaskEvent {
	e := newEvent(EventKilling, now, fmt.Sprintf("Sent interrupt. Waiting %v before force killing", timeout))
	e.KillTimeout = timeout
	e.Details[DetailKillTimeout] = timeout.String()
	if reason != "" {
		e.Details[DetailKillReason] = reason
	}
	return e
}

func eventKilled(now time.Time) *structs.TaskEvent {
	return newEvent(EventKilled, now, "Task successfully killed")
}

func eventShutdownDelay(now time.Time, d time.Duration) *structs.TaskEvent {
	return newEvent(EventShutdownDelay, now, fmt.Sprintf("Waiting for shutdown_delay of %v before killing the task.", d))
}

// NewDriverFailure is a driver failure that fails the task (a start or
// prepare error).
func NewDriverFailure(now time.Time, err error) *structs.TaskEvent {
	e := newEvent(EventDriverFailure, now, err.Error())
	e.DriverError = err.Error()
	e.FailsTask = true
	e.Details[DetailDriverError] = e.DriverError
	e.Details[DetailFailsTask] = "true"
	return e
}

// NewSetupFailure fails the task because the alloc could not be set up
// (its directories could not be built).
func NewSetupFailure(now time.Time, err error) *structs.TaskEvent {
	e := newEvent(EventSetupFailure, now, err.Error())
	e.SetupError = err.Error()
	e.FailsTask = true
	e.Details[DetailSetupError] = e.SetupError
	e.Details[DetailFailsTask] = "true"
	return e
}

func eventFailedValidation(now time.Time, err error) *structs.TaskEvent {
	e := newEvent(EventFailedValidation, now, err.Error())
	e.FailsTask = true
	e.Details[DetailValidation] = err.Error()
	e.Details[DetailFailsTask] = "true"
	return e
}

// NewSiblingFailed is the kill reason of a task whose sibling failed.
func NewSiblingFailed(now time.Time, sibling string) *structs.TaskEvent {
	e := newEvent(EventSiblingFailed, now, fmt.Sprintf("Task's sibling %q failed", sibling))
	e.Details[DetailFailedSibling] = sibling
	return e
}

// NewLeaderDead is the kill reason of a task whose group's leader task died.
func NewLeaderDead(now time.Time) *structs.TaskEvent {
	return newEvent(EventLeaderDead, now, "Leader Task in Group dead")
}

// NewMainDead is the kill reason of a sidecar left alive after every other
// task of its group died.
func NewMainDead(now time.Time) *structs.TaskEvent {
	return newEvent(EventMainDead, now, "Main tasks in the group died")
}

// NewMaxRunExceeded is the kill reason of the tasks of an allocation that
// exceeded its group's max_run_duration (bound); a poststop task records
// it as why it never ran.
func NewMaxRunExceeded(now time.Time, bound time.Duration) *structs.TaskEvent {
	e := newEvent(EventMaxRunExceeded, now, fmt.Sprintf("Allocation exceeded its max_run_duration of %v", bound))
	e.Details[DetailKillReason] = "allocation exceeded max_run_duration"
	return e
}

// NewAllocUnhealthy records why the client marked the allocation unhealthy
// in its deployment.
func NewAllocUnhealthy(now time.Time, reason string) *structs.TaskEvent {
	e := newEvent(EventAllocUnhealthy, now, reason)
	e.Message = reason
	return e
}

func eventRestoreFailed(now time.Time, err error) *structs.TaskEvent {
	e := newEvent(EventRestoreFailed, now, "Failed to reattach to the task after a client restart: "+err.Error())
	e.DriverError = err.Error()
	e.Details[DetailDriverError] = e.DriverError
	return e
}

// appendEvent appends e to st, keeping the last maxEvents. A prepare
// progress event replaces a progress event just before it, so a long pull
// does not push the other events out.
func appendEvent(st *structs.TaskState, e *structs.TaskEvent) {
	if n := len(st.Events); n > 0 && isProgress(e) && isProgress(st.Events[n-1]) {
		events := append([]*structs.TaskEvent(nil), st.Events...)
		events[n-1] = e
		st.Events = events
		return
	}
	events := append(append([]*structs.TaskEvent(nil), st.Events...), e)
	if len(events) > maxEvents {
		events = events[len(events)-maxEvents:]
	}
	st.Events = events
}

// copyState returns a copy of st that shares its (immutable) events.
func copyState(st *structs.TaskState) *structs.TaskState {
	if st == nil {
		return nil
	}
	c := *st
	c.Events = append([]*structs.TaskEvent(nil), st.Events...)
	return &c
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// EmitDriverEvent appends a Driver event with msg to the task's state (the
// client's ahead-of-wave prefetch reports its pulls on the allocation that
// keeps serving meanwhile). A dead task gets it too.
func (tr *TaskRunner) EmitDriverEvent(msg string) {
	tr.emit(eventDriver(tr.now(), msg))
}
