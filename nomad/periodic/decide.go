package periodic

import (
	"time"

	"github.com/drover-project/drover/nomad/structs"
)

// Input is what Decide needs about one periodic job.
type Input struct {
	Config *structs.PeriodicConfig
	// Since is the instant launches are counted from: matches at or before
	// it are never launched. The dispatcher passes the later of the
	// latest recorded launch and the submit time of the job's current
	// version.
	Since time.Time
	// Running reports whether a child of the job has not finished.
	Running bool
	Now     time.Time
}

// Decision is what to do for a job now.
type Decision struct {
	// Launch is the due launch time (the latest match in (Since, Now]), or
	// zero when nothing is due.
	Launch time.Time
	// Skip is set with Launch when prohibit_overlap holds it back because a
	// child still runs: the time is recorded as launched, no child is made.
	Skip bool
	// Next is the first match after Now (and after Since), or zero when the
	// expressions never match again.
	Next time.Time
}

// searchWindows bound the backward search for the latest due match: the
// search starts with the last minute before now and widens only when it
// found nothing, so a seconds-level expression costs at most 60 steps and a
// yearly one a handful.
var searchWindows = []time.Duration{
	time.Minute, time.Hour, 24 * time.Hour, 31 * 24 * time.Hour, 366 * 24 * time.Hour, 5 * 366 * 24 * time.Hour,
}

// Decide returns the periodic decision for in. An invalid expression or time
// zone (refused at registration, so only possible for a job stored by an
// older server) is returned as an error.
func Decide(in Input) (Decision, error) {
	var d Decision
	due, err := latestMatch(in.Config, in.Since, in.Now)
	if err != nil {
		return d, err
	}
	d.Launch = due
	d.Skip = !due.IsZero() && in.Config.ProhibitOverlap && in.Running
	from := in.Now
	if in.Since.After(from) {
		from = in.Since
	}
	d.Next, err = in.Config.Next(from)
	return d, err
}

// latestMatch returns the latest match t with since < t <= now, or zero.
func latestMatch(cfg *structs.PeriodicConfig, since, now time.Time) (time.Time, error) {
	if !now.After(since) {
		return time.Time{}, nil
	}
	for _, w := range searchWindows {
		from := now.Add(-w)
		whole := !from.After(since)
		if whole {
			from = since
		}
		t, err := lastInRange(cfg, from, now)
		if err != nil || !t.IsZero() || whole {
			return t, err
		}
	}
	return time.Time{}, nil
}

// lastInRange returns the latest match in (from, now], or zero.
func lastInRange(cfg *structs.PeriodicConfig, from, now time.Time) (time.Time, error) {
	var last time.Time
	t, err := cfg.Next(from)
	for err == nil && !t.IsZero() && !t.After(now) {
		last = t
		t, err = cfg.Next(t)
	}
	return last, err
}
