package imageresolve

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseWindows_Refusals(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want string
	}{
		{"Sat", "no time range"},
		{"Sat 2:00", "no time range"},
		{"Sat 02:00-04:00 Mars/Olympus", `unknown time zone "Mars/Olympus"`},
		{"Sat 02:00-04:00 Local", `unknown time zone "Local"`},
		{"Caturday 02:00-04:00", `unknown day "Caturday"`},
		{"Mon-Funday 02:00-04:00", `unknown day "Funday"`},
		{"Sat 25:00-26:00", `time "25:00" must be HH:MM`},
		{"Sat 02:60-04:00", `time "02:60" must be HH:MM`},
		{"Sat 02:00-02:00", "is empty"},
		{"Sat 24:00-02:00", "cannot open at 24:00"},
		{"Sat Sun 02:00-04:00", "days must be one word"},
		{"Sat 02:00-04:00 UTC extra", `unexpected "extra"`},
		{" ; ", "has no window"},
		{42, "must be a string or a list of strings"},
		{[]any{"Sat 02:00-04:00", 3}, "must be a string or a list of strings"},
	} {
		_, err := ParseWindows(tc.in)
		require.Error(t, err, "%v", tc.in)
		require.Contains(t, err.Error(), tc.want, "%v", tc.in)
		require.Contains(t, err.Error(), "auto_update_window", "the error names the key")
	}
}

func TestParseWindows_Forms(t *testing.T) {
	ws, err := ParseWindows("Sat 02:00-04:00 Europe/Berlin; Mon-Fri 22:00-02:00")
	require.NoError(t, err)
	require.Len(t, ws, 2)
	require.Equal(t, "Europe/Berlin", ws[0].Zone.String())
	require.True(t, ws[0].Days[time.Saturday])
	require.False(t, ws[0].Days[time.Sunday])
	require.Equal(t, 120, ws[0].Start)
	require.Equal(t, 240, ws[0].End)
	require.Equal(t, time.UTC, ws[1].Zone, "no zone is UTC")
	require.Equal(t, [7]bool{false, true, true, true, true, true, false}, ws[1].Days)

	ws, err = ParseWindows([]any{"12:00-13:00", "fri-mon 00:00-24:00 Asia/Tokyo;sunday 01:00-02:00"})
	require.NoError(t, err)
	require.Len(t, ws, 3)
	require.Equal(t, [7]bool{true, true, true, true, true, true, true}, ws[0].Days, "no days is every day")
	require.Equal(t, [7]bool{true, true, false, false, false, true, true}, ws[1].Days, "Fri-Mon wraps")
	require.Equal(t, 1440, ws[1].End)
	require.Equal(t, "12:00-13:00; fri-mon 00:00-24:00 Asia/Tokyo; sunday 01:00-02:00", ws.String())
}

func TestWindows_Next(t *testing.T) {
	mustW := func(s string) Windows {
		w, err := ParseWindows(s)
		require.NoError(t, err)
		return w
	}
	utc := func(y int, m time.Month, d, h, min int) time.Time { return time.Date(y, m, d, h, min, 0, 0, time.UTC) }
	for _, tc := range []struct {
		w        string
		now      time.Time
		next     time.Time
		openThen bool
	}{
		// 2026-01-01 is a Thursday; Berlin is UTC+1 in winter.
		{"Sat 02:00-04:00 Europe/Berlin", utc(2026, 1, 1, 12, 0), utc(2026, 1, 3, 1, 0), false},
		{"Sat 02:00-04:00 Europe/Berlin", utc(2026, 1, 3, 1, 0), utc(2026, 1, 3, 1, 0), true},
		{"Sat 02:00-04:00 Europe/Berlin", utc(2026, 1, 3, 2, 59), utc(2026, 1, 3, 2, 59), true},
		{"Sat 02:00-04:00 Europe/Berlin", utc(2026, 1, 3, 3, 0), utc(2026, 1, 10, 1, 0), false},
		// Summer time: UTC+2.
		{"Sat 02:00-04:00 Europe/Berlin", utc(2026, 7, 1, 0, 0), utc(2026, 7, 4, 0, 0), false},
		// Past midnight: opened Friday 22:00, still open Saturday 01:00.
		{"Fri 22:00-02:00", utc(2026, 1, 3, 1, 0), utc(2026, 1, 3, 1, 0), true},
		{"Fri 22:00-02:00", utc(2026, 1, 3, 2, 0), utc(2026, 1, 9, 22, 0), false},
		// The earliest of several.
		{"Sat 02:00-04:00 Europe/Berlin; Thu 13:00-14:00", utc(2026, 1, 1, 12, 0), utc(2026, 1, 1, 13, 0), false},
		{"*  00:00-24:00", utc(2026, 1, 1, 12, 0), utc(2026, 1, 1, 12, 0), true},
	} {
		ws := mustW(tc.w)
		got := ws.Next(tc.now)
		require.True(t, tc.next.Equal(got), "%s at %s: next %s, want %s", tc.w, tc.now, got, tc.next)
		require.Equal(t, tc.openThen, ws.Open(tc.now), "%s at %s", tc.w, tc.now)
	}
}

// TestWindows_NextProperty: Next(now) is not before now, a window is open
// at it, and none is open at any minute between now and it.
func TestWindows_NextProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	specs := []string{"Sat 02:00-04:00 Europe/Berlin", "Mon-Fri 22:00-02:00 America/New_York",
		"Sun 02:30-03:30 Europe/Berlin", "* 12:00-12:30; Sun 00:00-24:00 Asia/Tokyo", "Wed,Fri 23:59-00:01 Australia/Lord_Howe"}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 150 {
		ws, err := ParseWindows(specs[r.IntN(len(specs))])
		require.NoError(t, err)
		now := base.Add(time.Duration(r.IntN(365*24*60)) * time.Minute)
		next := ws.Next(now)
		require.False(t, next.Before(now), "case %d: %s at %s: next %s", i, ws, now, next)
		require.True(t, ws.Open(next), "case %d: open at %s (%s)", i, next, ws)
		for m := now; m.Before(next); m = m.Add(time.Minute) {
			require.False(t, ws.Open(m), "case %d: %s open at %s before Next %s", i, ws, m, next)
		}
	}
}

func TestParseSettings_AutoUpdateModes(t *testing.T) {
	for _, tc := range []struct {
		v            any
		auto, notify bool
		wantErr      string
	}{
		{true, true, false, ""},
		{false, false, false, ""},
		{"true", true, false, ""},
		{"false", false, false, ""},
		{"notify", true, true, ""},
		{"Notify", true, true, ""},
		{"sometimes", false, false, `auto_update must be true, false or "notify"`},
		{3.5, false, false, `auto_update must be true, false or "notify"`},
	} {
		s, err := ParseSettings(map[string]any{"auto_update": tc.v})
		if tc.wantErr != "" {
			require.ErrorContains(t, err, tc.wantErr, "%v", tc.v)
			continue
		}
		require.NoError(t, err, "%v", tc.v)
		require.Equal(t, tc.auto, s.AutoUpdate, "%v", tc.v)
		require.Equal(t, tc.notify, s.Notify, "%v", tc.v)
	}
}

func TestParseSettings_Gates(t *testing.T) {
	s, err := ParseSettings(map[string]any{"auto_update": true, "auto_update_window": "Sat 02:00-04:00 Europe/Berlin",
		"auto_update_approval": "true", "auto_update_min_age": "24h"})
	require.NoError(t, err)
	require.True(t, s.Approval)
	require.Equal(t, 24*time.Hour, s.MinAge)
	require.Len(t, s.Window, 1)

	for _, tc := range []struct {
		cfg  map[string]any
		want string
	}{
		{map[string]any{"auto_update": true, "auto_update_window": "Sat 2am"}, "auto_update_window"},
		{map[string]any{"auto_update": true, "auto_update_approval": "yes"}, "auto_update_approval must be a bool"},
		{map[string]any{"auto_update": true, "auto_update_min_age": "old"}, "auto_update_min_age must be a duration"},
		{map[string]any{"auto_update": true, "auto_update_min_age": "-1h"}, "auto_update_min_age must not be negative"},
		{map[string]any{"auto_update_window": "Sat 02:00-04:00"}, "auto_update_window is set but auto_update is not"},
		{map[string]any{"auto_update": false, "auto_update_approval": true}, "auto_update_approval is set but auto_update is not"},
		{map[string]any{"auto_update_min_age": "1h"}, "auto_update_min_age is set but auto_update is not"},
		{map[string]any{"auto_update": "notify", "auto_update_approval": true}, `auto_update = "notify" never rolls`},
		{map[string]any{"auto_update": "notify", "auto_update_window": "Sat 02:00-04:00"}, `auto_update = "notify" never rolls`},
	} {
		_, err := ParseSettings(tc.cfg)
		require.ErrorContains(t, err, tc.want, "%v", tc.cfg)
	}
	// notify with a min age is meaningful: it reports only images old enough.
	s, err = ParseSettings(map[string]any{"auto_update": "notify", "auto_update_min_age": "1h"})
	require.NoError(t, err)
	require.True(t, s.Notify)
}
