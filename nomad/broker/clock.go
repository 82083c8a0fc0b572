package broker

import "time"

// Clock is the broker's source of time and timers. The real implementation
// uses the time package; tests inject a fake (or run the real one inside a
// testing/synctest bubble).
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has elapsed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a timer started by Clock.AfterFunc.
type Timer interface {
	// Stop prevents the timer from firing. It reports whether the call stopped
	// the timer (false if it had already fired or been stopped). The broker
	// tolerates callbacks that run after Stop.
	Stop() bool
}

// RealClock returns a Clock backed by the time package. now overrides
// time.Now for reading the time when non-nil; timers always run on real time.
func RealClock(now func() time.Time) Clock {
	if now == nil {
		now = time.Now
	}
	return realClock{now: now}
}

type realClock struct{ now func() time.Time }

func (c realClock) Now() time.Time { return c.now() }

func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
