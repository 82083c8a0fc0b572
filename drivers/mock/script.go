package mock

import "time"

// Script is the timing a mock config block describes, for callers that
// simulate mock tasks without running them (the node simulator). It is
// parsed and validated exactly as the driver parses a task's config.
type Script struct {
	PrepareFor    time.Duration // prepare (prefetch) takes this long
	PrepareError  string        // prepare fails with this message
	StartBlockFor time.Duration // StartTask blocks this long before the task runs
	StartError    string        // StartTask fails with this message
	RunFor        time.Duration // the task exits after this long; 0: runs until stopped
	ExitCode      int           // the exit code when RunFor elapses
	KillAfter     time.Duration // the task ignores a kill for this long (capped by the kill timeout)
}

// ParseScript parses a mock config block (the task's `config {}`) into its
// timing, listing every problem as the driver does.
func ParseScript(m map[string]any) (Script, error) {
	c, err := parseTaskConfig(m)
	if err != nil {
		return Script{}, err
	}
	return Script{
		PrepareFor: c.PrepareFor, PrepareError: c.PrepareError,
		StartBlockFor: c.StartBlockFor, StartError: c.StartError,
		RunFor: c.RunFor, ExitCode: c.ExitCode, KillAfter: c.KillAfter,
	}, nil
}
