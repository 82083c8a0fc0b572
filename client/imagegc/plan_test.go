package imagegc

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func unleasedAt(t time.Time) KnownImage { return KnownImage{FirstUnleasedAt: t} }

func TestPlan(t *testing.T) {
	const delay = 3 * time.Minute
	cases := []struct {
		name       string
		leases     map[string]LeaseReasons
		known      map[string]KnownImage
		delay      time.Duration
		now        time.Time
		wantRemove []string
		wantWake   time.Time
	}{
		{
			name: "nothing known", leases: map[string]LeaseReasons{"a": LeaseRunning},
			delay: delay, now: t0,
		},
		{
			name:  "just before the delay: kept, wake at the boundary",
			known: map[string]KnownImage{"a": unleasedAt(t0)}, delay: delay,
			now: t0.Add(delay - time.Nanosecond), wantWake: t0.Add(delay),
		},
		{
			name:  "exactly at the delay: removed",
			known: map[string]KnownImage{"a": unleasedAt(t0)}, delay: delay,
			now: t0.Add(delay), wantRemove: []string{"a"},
		},
		{
			name:  "long after the delay: removed",
			known: map[string]KnownImage{"a": unleasedAt(t0)}, delay: delay,
			now: t0.Add(time.Hour), wantRemove: []string{"a"},
		},
		{
			name:   "leased never removed, whatever its record says",
			leases: map[string]LeaseReasons{"a": LeasePrevious, "b": 0},
			known:  map[string]KnownImage{"a": unleasedAt(t0.Add(-time.Hour)), "b": unleasedAt(t0.Add(-time.Hour))},
			delay:  delay, now: t0,
		},
		{
			name:   "unknown images never removed, leased or not",
			leases: map[string]LeaseReasons{"x": LeaseRunning},
			known:  map[string]KnownImage{"a": unleasedAt(t0)}, delay: delay,
			now: t0.Add(delay), wantRemove: []string{"a"},
		},
		{
			name: "wakeAt is the earliest pending due time; removals sorted",
			known: map[string]KnownImage{
				"c": unleasedAt(t0), "b": unleasedAt(t0.Add(-time.Hour)),
				"late": unleasedAt(t0.Add(2 * time.Minute)), "early": unleasedAt(t0.Add(time.Minute)),
				"a": unleasedAt(t0.Add(-delay)),
			},
			delay: delay, now: t0.Add(time.Minute),
			wantRemove: []string{"a", "b"}, wantWake: t0.Add(delay),
		},
		{
			name:  "zero FirstUnleasedAt counts as unleased since now",
			known: map[string]KnownImage{"a": {}}, delay: delay,
			now: t0, wantWake: t0.Add(delay),
		},
		{
			name:  "a later RetryAt postpones the removal",
			known: map[string]KnownImage{"a": {FirstUnleasedAt: t0, RetryAt: t0.Add(time.Hour)}}, delay: delay,
			now: t0.Add(delay), wantWake: t0.Add(time.Hour),
		},
		{
			name:  "a passed RetryAt does not",
			known: map[string]KnownImage{"a": {FirstUnleasedAt: t0, RetryAt: t0.Add(time.Minute)}}, delay: delay,
			now: t0.Add(delay), wantRemove: []string{"a"},
		},
		{
			name:  "zero delay: removed as soon as unleased",
			known: map[string]KnownImage{"a": unleasedAt(t0)},
			now:   t0, wantRemove: []string{"a"},
		},
		{
			name:  "negative delay is zero",
			known: map[string]KnownImage{"a": unleasedAt(t0)}, delay: -time.Hour,
			now: t0, wantRemove: []string{"a"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			remove, wake := Plan(Input{Leases: tc.leases, Known: tc.known, Delay: tc.delay}, tc.now)
			require.Equal(t, tc.wantRemove, remove)
			require.Equal(t, tc.wantWake, wake)
		})
	}
}

func TestReconcile(t *testing.T) {
	known := map[string]KnownImage{
		"leased-again": {FirstUnleasedAt: t0.Add(-time.Hour), RetryAt: t0},
		"still-leased": {},
		"lost-lease":   {},
		"unleased":     unleasedAt(t0.Add(-time.Minute)),
	}
	leases := map[string]LeaseReasons{"leased-again": LeaseRunning, "still-leased": LeasePrevious, "new": LeasePrepared}
	got, changed := Reconcile(known, leases, t0)
	require.True(t, changed)
	require.Equal(t, map[string]KnownImage{
		"leased-again": {},
		"still-leased": {},
		"new":          {},
		"lost-lease":   unleasedAt(t0),
		"unleased":     unleasedAt(t0.Add(-time.Minute)),
	}, got)
	require.Len(t, known, 4, "input left alone")
	require.Equal(t, t0.Add(-time.Hour), known["leased-again"].FirstUnleasedAt)

	again, changed := Reconcile(got, leases, t0.Add(time.Minute))
	require.False(t, changed)
	require.Equal(t, got, again)

	empty, changed := Reconcile(nil, nil, t0)
	require.False(t, changed)
	require.NotNil(t, empty)
}

func TestLeaseReasonsString(t *testing.T) {
	require.Equal(t, "none", LeaseReasons(0).String())
	require.Equal(t, "running", LeaseRunning.String())
	require.Equal(t, "running+prepared+previous", (LeasePrevious | LeaseRunning | LeasePrepared).String())
	require.Equal(t, "prepared+ahead", (LeaseAhead | LeasePrepared).String())
}
