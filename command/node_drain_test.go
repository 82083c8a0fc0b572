package command

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDrainDeadline(t *testing.T) {
	for _, tc := range []struct {
		name       string
		deadline   string
		noDeadline bool
		force      bool
		want       time.Duration
		msg        string
	}{
		{name: "default is one hour", want: time.Hour},
		{name: "deadline", deadline: "90s", want: 90 * time.Second},
		{name: "no deadline", noDeadline: true, want: 0},
		{name: "force: the deadline is now", force: true, want: -time.Second},
		{name: "bad duration", deadline: "soon", msg: `-deadline must be a positive duration, got "soon"`},
		{name: "zero duration", deadline: "0s", msg: `-deadline must be a positive duration, got "0s"`},
		{name: "two flags", deadline: "1m", force: true, msg: "only one of -deadline, -no-deadline and -force may be given"},
		{name: "force and no deadline", noDeadline: true, force: true, msg: "only one of -deadline, -no-deadline and -force may be given"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, msg := drainDeadline(tc.deadline, tc.noDeadline, tc.force)
			require.Equal(t, tc.msg, msg)
			require.Equal(t, tc.want, d)
		})
	}
}
