package periodic

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

func cron(specs ...string) *structs.PeriodicConfig {
	return &structs.PeriodicConfig{Enabled: true, SpecType: structs.PeriodicSpecCron, Specs: specs}
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func TestDecide(t *testing.T) {
	nyc := func(c *structs.PeriodicConfig) *structs.PeriodicConfig { c.TimeZone = "America/New_York"; return c }
	overlap := func(c *structs.PeriodicConfig) *structs.PeriodicConfig { c.ProhibitOverlap = true; return c }
	cases := []struct {
		name    string
		in      Input
		launch  string // "" for none
		skip    bool
		next    string
		wantErr bool
	}{
		{
			name: "nothing due before the first match",
			in:   Input{Config: cron("*/5 * * * *"), Since: utc("2026-03-01T10:01:00Z"), Now: utc("2026-03-01T10:04:59Z")},
			next: "2026-03-01T10:05:00Z",
		},
		{
			name:   "a match at now is due",
			in:     Input{Config: cron("*/5 * * * *"), Since: utc("2026-03-01T10:01:00Z"), Now: utc("2026-03-01T10:05:00Z")},
			launch: "2026-03-01T10:05:00Z",
			next:   "2026-03-01T10:10:00Z",
		},
		{
			name: "a match equal to since was launched already",
			in:   Input{Config: cron("*/5 * * * *"), Since: utc("2026-03-01T10:05:00Z"), Now: utc("2026-03-01T10:05:03Z")},
			next: "2026-03-01T10:10:00Z",
		},
		{
			name:   "missed matches launch once: the latest",
			in:     Input{Config: cron("*/5 * * * *"), Since: utc("2026-03-01T10:05:00Z"), Now: utc("2026-03-01T11:07:00Z")},
			launch: "2026-03-01T11:05:00Z",
			next:   "2026-03-01T11:10:00Z",
		},
		{
			name:   "seconds-level expression (seven fields)",
			in:     Input{Config: cron("*/2 * * * * * *"), Since: utc("2026-03-01T10:00:00Z"), Now: utc("2026-03-01T10:00:05.5Z")},
			launch: "2026-03-01T10:00:04Z",
			next:   "2026-03-01T10:00:06Z",
		},
		{
			name:   "a sparse expression missed long ago is found",
			in:     Input{Config: cron("0 0 1 1 *"), Since: utc("2024-06-01T00:00:00Z"), Now: utc("2026-03-01T00:00:00Z")},
			launch: "2026-01-01T00:00:00Z",
			next:   "2027-01-01T00:00:00Z",
		},
		{
			name:   "several expressions: the earliest next, the latest due",
			in:     Input{Config: cron("0 9 * * *", "30 8 * * *"), Since: utc("2026-03-01T08:00:00Z"), Now: utc("2026-03-01T08:45:00Z")},
			launch: "2026-03-01T08:30:00Z",
			next:   "2026-03-01T09:00:00Z",
		},
		{
			name: "time zone: 09:00 in New York is 14:00 UTC in winter",
			in:   Input{Config: nyc(cron("0 9 * * *")), Since: utc("2026-01-10T00:00:00Z"), Now: utc("2026-01-10T12:00:00Z")},
			next: "2026-01-10T14:00:00Z",
		},
		{
			name: "time zone: and 13:00 UTC in summer",
			in:   Input{Config: nyc(cron("0 9 * * *")), Since: utc("2026-07-10T00:00:00Z"), Now: utc("2026-07-10T12:00:00Z")},
			next: "2026-07-10T13:00:00Z",
		},
		{
			name:   "prohibit_overlap skips a due launch while a child runs",
			in:     Input{Config: overlap(cron("*/5 * * * *")), Since: utc("2026-03-01T10:00:00Z"), Running: true, Now: utc("2026-03-01T10:05:01Z")},
			launch: "2026-03-01T10:05:00Z",
			skip:   true,
			next:   "2026-03-01T10:10:00Z",
		},
		{
			name:   "prohibit_overlap launches when no child runs",
			in:     Input{Config: overlap(cron("*/5 * * * *")), Since: utc("2026-03-01T10:00:00Z"), Now: utc("2026-03-01T10:05:01Z")},
			launch: "2026-03-01T10:05:00Z",
			next:   "2026-03-01T10:10:00Z",
		},
		{
			name:   "overlap allowed: a running child does not matter",
			in:     Input{Config: cron("*/5 * * * *"), Since: utc("2026-03-01T10:00:00Z"), Running: true, Now: utc("2026-03-01T10:05:01Z")},
			launch: "2026-03-01T10:05:00Z",
			next:   "2026-03-01T10:10:00Z",
		},
		{
			name: "a since ahead of now (an earlier leader's clock) delays the next launch past it",
			in:   Input{Config: cron("* * * * * * *"), Since: utc("2026-03-01T10:00:10Z"), Now: utc("2026-03-01T10:00:05Z")},
			next: "2026-03-01T10:00:11Z",
		},
		{
			name: "an expression that never matches again",
			in:   Input{Config: cron("0 0 1 1 * 2020"), Since: utc("2026-01-01T00:00:00Z"), Now: utc("2026-03-01T00:00:00Z")},
		},
		{
			name:    "a bad time zone is an error",
			in:      Input{Config: &structs.PeriodicConfig{Specs: []string{"* * * * *"}, TimeZone: "Mars/Olympus"}, Now: utc("2026-03-01T00:00:00Z")},
			wantErr: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Decide(tc.in)
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			if tc.launch == "" {
				require.True(t, d.Launch.IsZero(), "launch %v", d.Launch)
			} else {
				require.Equal(t, utc(tc.launch), d.Launch)
			}
			require.Equal(t, tc.skip, d.Skip)
			if tc.next == "" {
				require.True(t, d.Next.IsZero(), "next %v", d.Next)
			} else {
				require.Equal(t, utc(tc.next), d.Next)
			}
		})
	}
}

// TestDecideDST walks a daily 02:30 New York job across both 2026 DST
// changes: launch times strictly increase, never twice at one instant
// (child IDs stay distinct), and no day is launched more than twice or
// skipped entirely except the spring-forward day whose 02:30 does not exist.
func TestDecideDST(t *testing.T) {
	cfg := &structs.PeriodicConfig{Enabled: true, Specs: []string{"30 2 * * *"}, TimeZone: "America/New_York"}
	loc, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	for _, window := range []struct{ from, to string }{
		{"2026-03-06T00:00:00Z", "2026-03-12T00:00:00Z"}, // spring forward: 2026-03-08
		{"2026-10-30T00:00:00Z", "2026-11-05T00:00:00Z"}, // fall back: 2026-11-01
	} {
		since, end := utc(window.from), utc(window.to)
		seen := map[string]bool{}
		perDay := map[string]int{}
		for now := since; now.Before(end); now = now.Add(10 * time.Minute) {
			d, err := Decide(Input{Config: cfg, Since: since, Now: now})
			require.NoError(t, err)
			require.True(t, d.Next.After(now))
			if d.Launch.IsZero() {
				continue
			}
			require.True(t, d.Launch.After(since), "launch %v not after %v", d.Launch, since)
			id := structs.PeriodicChildID("nightly", d.Launch)
			require.False(t, seen[id], "launched %s twice", id)
			seen[id] = true
			perDay[d.Launch.In(loc).Format("2006-01-02")]++
			since = d.Launch // the leader records the launch
		}
		for day, n := range perDay {
			require.LessOrEqual(t, n, 1, "day %s launched %d times", day, n)
		}
		require.GreaterOrEqual(t, len(perDay), 5, "launched on %v", perDay)
	}
}

// TestDecideLeaderChange replays a leader change: the new leader starts from
// the launch record the old one committed, so the same instant is not
// launched again, and a time missed while no leader ran is launched once.
func TestDecideLeaderChange(t *testing.T) {
	cfg := cron("*/10 * * * * * *")
	// Old leader launched 10:00:10 and committed the record, then died.
	since := utc("2026-03-01T10:00:10Z")
	// New leader takes over at 10:00:12: nothing due.
	d, err := Decide(Input{Config: cfg, Since: since, Now: utc("2026-03-01T10:00:12Z")})
	require.NoError(t, err)
	require.True(t, d.Launch.IsZero())
	require.Equal(t, utc("2026-03-01T10:00:20Z"), d.Next)
	// New leader takes over only at 10:00:35: 10:00:30 is launched (once),
	// 10:00:20 is not launched late.
	d, err = Decide(Input{Config: cfg, Since: since, Now: utc("2026-03-01T10:00:35Z")})
	require.NoError(t, err)
	require.Equal(t, utc("2026-03-01T10:00:30Z"), d.Launch)
	d, err = Decide(Input{Config: cfg, Since: d.Launch, Now: utc("2026-03-01T10:00:36Z")})
	require.NoError(t, err)
	require.True(t, d.Launch.IsZero())
}
