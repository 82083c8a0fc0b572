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
