package mock

import (
	"errors"
	"time"

	"github.com/drover-project/drover/drivers"
)

// taskConfig is a parsed mock config block; every key is optional.
type taskConfig struct {
	RunFor                time.Duration // 0: until stopped
	ExitCode              int
	StartError            string
	StartErrorRecoverable bool
	StartBlockFor         time.Duration
	PrepareFor            time.Duration
	PrepareError          string
	KillAfter             time.Duration
	StdoutString          string
	StdoutRepeat          int
	StdoutRepeatDuration  time.Duration
	RecoverError          string
	// ExitWhenDone is set by the driver, not the config (CompatName): with
	// RunFor 0 the task exits once its stdout is written.
	ExitWhenDone bool
}

var taskFields = []string{
	"run_for", "exit_code", "start_error", "start_error_recoverable", "start_block_for",
	"prepare_for", "prepare_error", "kill_after", "stdout_string", "stdout_repeat",
	"stdout_repeat_duration", "recover_error",
}

// parseTaskConfig validates a mock config block, listing every problem.
func parseTaskConfig(m map[string]any) (*taskConfig, error) {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(drivers.CheckFields(m, taskFields...))
	var c taskConfig
	dur := func(key string, dst *time.Duration) {
		d, _, err := drivers.ConfigDuration(m, key)
		add(err)
		*dst = d
	}
	str := func(key string, dst *string) {
		s, _, err := drivers.ConfigString(m, key)
		add(err)
		*dst = s
	}
	dur("run_for", &c.RunFor)
	dur("start_block_for", &c.StartBlockFor)
	dur("prepare_for", &c.PrepareFor)
	dur("kill_after", &c.KillAfter)
	dur("stdout_repeat_duration", &c.StdoutRepeatDuration)
	str("start_error", &c.StartError)
	str("prepare_error", &c.PrepareError)
	str("stdout_string", &c.StdoutString)
	str("recover_error", &c.RecoverError)

	var err error
	c.ExitCode, _, err = drivers.ConfigInt(m, "exit_code")
	add(err)
	if err == nil && (c.ExitCode < 0 || c.ExitCode > 255) {
		add(&drivers.FieldError{Field: "exit_code", Rule: "must be between 0 and 255"})
	}
	c.StdoutRepeat, _, err = drivers.ConfigInt(m, "stdout_repeat")
	add(err)
	if err == nil && c.StdoutRepeat < 0 {
		add(&drivers.FieldError{Field: "stdout_repeat", Rule: "must not be negative"})
	}
	c.StartErrorRecoverable, _, err = drivers.ConfigBool(m, "start_error_recoverable")
	add(err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &c, nil
}
