// Package clock is the source of time and timers for Drover's long-running
// loops (the eval broker, the deployment watcher). Their decision code takes
// `now` as a parameter; the loops that drive it read the time and arm
// timers through a Clock so tests can inject a fake one (or run the real one
// inside a testing/synctest bubble).
//
// It imports nothing of Drover's; anyone may import it.
package clock

import "time"

// Clock supplies the current time and timers.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has elapsed (at once
	// when d is not positive).
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a timer started by Clock.AfterFunc.
type Timer interface {
	// Stop prevents the timer from firing and reports whether it did (false
	// if it had already fired or been stopped). Callers must tolerate a
	// callback that runs after Stop.
	Stop() bool
}

// Real returns a Clock backed by the time package. now, when not nil,
// replaces time.Now for reading the time; timers always run on real time.
func Real(now func() time.Time) Clock {
	if now == nil {
		now = time.Now
	}
	return realClock{now: now}
}

type realClock struct{ now func() time.Time }

func (c realClock) Now() time.Time { return c.now() }

func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
