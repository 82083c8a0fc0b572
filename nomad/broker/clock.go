package broker

import (
	"time"

	"github.com/drover-project/drover/helper/clock"
)

// Clock is the source of time and timers (see package clock).
type Clock = clock.Clock

// Timer is a timer started by Clock.AfterFunc.
type Timer = clock.Timer

// RealClock returns a Clock backed by the time package; now, when not nil,
// replaces time.Now for reading the time.
func RealClock(now func() time.Time) Clock { return clock.Real(now) }
