package imagewatcher

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/imageresolve"
	"github.com/drover-project/drover/nomad/structs"
)

// movedInput returns the input of a task pinned to dA whose tag the
// watcher saw move to dB at moved (created: the image's created time, or
// zero for not read), decided at now.
func movedInput(t *testing.T, p Policy, moved, created, now time.Time) (Input, Target) {
	t.Helper()
	tg := target(t, "web", "reg:5000/app:stable@"+dA, time.Hour, 0)
	tg.Policy = p
	in := input(now, tg)
	c := checked(tg, checked(tg, nil, dA, moved.Add(-time.Minute)), dB, moved)
	if !created.IsZero() {
		c.Created = created.UnixNano()
	}
	in.Checks[tg.Key()] = c
	in.Watches[tg.ID] = &structs.ImageWatch{Namespace: "default", JobID: "web", Group: "web", Task: "server", Key: tg.Key()}
	return in, tg
}

func windows(t *testing.T, s string) imageresolve.Windows {
	t.Helper()
	w, err := imageresolve.ParseWindows(s)
	require.NoError(t, err)
	return w
}

func TestDecide_Gates(t *testing.T) {
	// t0 is Thursday 2026-01-01 12:00 UTC (13:00 in Berlin).
	thuEvening := windows(t, "Thu 20:00-22:00 Europe/Berlin") // opens 19:00 UTC
	cases := []struct {
		name     string
		p        Policy
		created  time.Time
		approved string
		now      time.Time
		roll     bool
		reason   string
		until    time.Time
	}{
		{name: "no gate rolls", now: t0, roll: true},
		{name: "soak holds", p: Policy{Soak: time.Hour}, now: t0.Add(time.Minute), reason: WaitSoak, until: t0.Add(time.Hour)},
		{name: "window closed holds until it opens", p: Policy{Window: thuEvening}, now: t0, reason: WaitWindow,
			until: time.Date(2026, 1, 1, 19, 0, 0, 0, time.UTC)},
		{name: "window open rolls", p: Policy{Window: thuEvening}, now: time.Date(2026, 1, 1, 19, 30, 0, 0, time.UTC), roll: true},
		{name: "window just closed waits a week", p: Policy{Window: thuEvening}, now: time.Date(2026, 1, 1, 21, 0, 0, 0, time.UTC),
			reason: WaitWindow, until: time.Date(2026, 1, 8, 19, 0, 0, 0, time.UTC)},
		{name: "soak before window", p: Policy{Soak: time.Hour, Window: thuEvening}, now: t0, reason: WaitSoak, until: t0.Add(time.Hour)},
		{name: "min age unknown created holds", p: Policy{MinAge: time.Hour}, now: t0, reason: WaitMinAge},
		{name: "min age young image holds", p: Policy{MinAge: time.Hour}, created: t0.Add(-10 * time.Minute), now: t0,
			reason: WaitMinAge, until: t0.Add(50 * time.Minute)},
		{name: "min age old image rolls", p: Policy{MinAge: time.Hour}, created: t0.Add(-2 * time.Hour), now: t0, roll: true},
		{name: "notify never rolls", p: Policy{Notify: true}, now: t0.Add(1000 * time.Hour), reason: WaitNotify},
		{name: "approval missing holds", p: Policy{Approval: true}, now: t0, reason: WaitApproval},
		{name: "approval of another digest holds", p: Policy{Approval: true}, approved: dC, now: t0, reason: WaitApproval},
		{name: "approval of this digest rolls", p: Policy{Approval: true}, approved: dB, now: t0, roll: true},
		{name: "approved waits for the window", p: Policy{Approval: true, Window: thuEvening}, approved: dB, now: t0,
			reason: WaitWindow, until: time.Date(2026, 1, 1, 19, 0, 0, 0, time.UTC)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in, tg := movedInput(t, tc.p, t0, tc.created, tc.now)
			in.Watches[tg.ID].Approved = tc.approved
			d := Decide(in, &Memory{})
			if tc.roll {
				require.Len(t, d.Rolls, 1)
				require.Equal(t, dB, d.Rolls[0].Changes[0].To)
				require.Empty(t, d.Waiting)
				return
			}
			require.Empty(t, d.Rolls)
			require.Len(t, d.Waiting, 1)
			w := d.Waiting[0]
			require.Equal(t, tg.ID, w.ID)
			require.Equal(t, dB, w.Digest)
			require.Equal(t, tc.reason, w.Reason)
			require.True(t, tc.until.Equal(w.Until), "opens at %s, want %s", w.Until, tc.until)
			if !tc.until.IsZero() {
				require.False(t, d.NextWake.After(tc.until), "wakes when the gate opens")
			}
		})
	}
}

func TestDecide_WindowHoldsTheRollUntilItOpens(t *testing.T) {
	// A fake clock walks minute by minute from Thursday noon: the roll
	// comes exactly at the window's opening, not before.
	p := Policy{Window: windows(t, "Sat 02:00-04:00 Europe/Berlin")}
	open := time.Date(2026, 1, 3, 1, 0, 0, 0, time.UTC) // Sat 02:00 CET
	in, _ := movedInput(t, p, t0, time.Time{}, t0)
	for now := t0; !now.After(open); now = now.Add(time.Minute) {
		in.Now = now
		d := Decide(in, &Memory{})
		if now.Before(open) {
			require.Empty(t, d.Rolls, "rolled at %s before the window", now)
			require.False(t, d.NextWake.After(open))
			continue
		}
		require.Len(t, d.Rolls, 1, "rolls when the window opens")
	}
}

func TestDecide_MinAgeAsksForTheCreatedTime(t *testing.T) {
	tg := target(t, "web", "reg:5000/app:stable@"+dA, time.Minute, 0)
	tg.Policy.MinAge = time.Hour
	other := target(t, "other", "reg:5000/app:stable@"+dA, time.Minute, 0)
	d := Decide(input(t0, tg, other), &Memory{})
	require.Len(t, d.Checks, 1)
	require.True(t, d.Checks[0].NeedCreated, "one task on the key has a min age")
	d = Decide(input(t0, other), &Memory{})
	require.False(t, d.Checks[0].NeedCreated)
}

func TestDecide_HeldDigestRecordedOncePerDigest(t *testing.T) {
	for _, p := range []Policy{{Notify: true}, {Approval: true}} {
		in, tg := movedInput(t, p, t0, time.Time{}, t0.Add(time.Minute))
		d := Decide(in, &Memory{})
		require.Empty(t, d.Rolls)
		require.NotNil(t, d.Update)
		require.Len(t, d.Update.Watches, 1)
		w := d.Update.Watches[0]
		require.Equal(t, dB, w.Held)
		reason := WaitNotify
		if p.Approval {
			reason = WaitApproval
		}
		require.Equal(t, reason, w.HeldReason)
		// Once recorded, the next pass writes nothing.
		in.Watches[tg.ID] = w
		d = Decide(in, &Memory{})
		require.Nil(t, d.Update)
		// The tag moves back to the pin: the hold is cleared.
		in.Checks[tg.Key()] = checked(tg, in.Checks[tg.Key()], dA, t0.Add(2*time.Minute))
		in.Now = t0.Add(3 * time.Minute)
		d = Decide(in, &Memory{})
		require.NotNil(t, d.Update)
		require.Empty(t, d.Update.Watches[0].Held)
	}
}

// TestDecide_GatesProperty: over random policies, ages, approvals and
// times, Decide rolls exactly when every gate is open: never with notify,
// never before the soak or the min age, never without the approval of
// this digest, never outside a window; and when it holds, it wakes no
// later than the gate's opening.
func TestDecide_GatesProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	rolled, held := 0, map[string]int{}
	wins := []string{"", "Sat 02:00-04:00 Europe/Berlin", "Mon-Fri 22:00-02:00 America/New_York", "* 12:00-12:30; Sun 00:00-24:00 Asia/Tokyo"}
	for i := range 3000 {
		p := Policy{
			Soak:     time.Duration(r.IntN(4)) * 20 * time.Minute,
			MinAge:   time.Duration(r.IntN(3)) * time.Hour,
			Notify:   r.IntN(5) == 0,
			Approval: r.IntN(2) == 0,
		}
		if ws := wins[r.IntN(len(wins))]; ws != "" {
			p.Window = windows(t, ws)
		}
		var created time.Time
		if r.IntN(4) > 0 {
			created = t0.Add(-time.Duration(r.IntN(180)) * time.Minute)
		}
		approved := []string{"", dB, dC}[r.IntN(3)]
		now := t0.Add(time.Duration(r.IntN(14*24*60)) * time.Minute)
		if r.IntN(2) == 0 {
			now = t0.Add(time.Duration(r.IntN(120)) * time.Minute)
		}
		in, tg := movedInput(t, p, t0, created, now)
		in.Watches[tg.ID].Approved = approved
		d := Decide(in, &Memory{})

		open := now.Sub(t0) >= p.Soak &&
			(p.MinAge == 0 || (!created.IsZero() && now.Sub(created) >= p.MinAge)) &&
			!p.Notify &&
			(!p.Approval || approved == dB) &&
			p.Window.Open(now)
		require.Equal(t, open, len(d.Rolls) == 1, "case %d: %+v created %s approved %q now %s", i, p, created, approved, now)
		if p.Notify {
			require.Empty(t, d.Rolls)
		}
		if open {
			rolled++
		} else {
			require.Len(t, d.Waiting, 1)
			held[d.Waiting[0].Reason]++
			if u := d.Waiting[0].Until; !u.IsZero() {
				require.True(t, u.After(now))
				require.False(t, d.NextWake.After(u), "case %d", i)
			}
		}
	}
	// The sample reaches every outcome.
	require.Greater(t, rolled, 50)
	for _, r := range []string{WaitSoak, WaitMinAge, WaitNotify, WaitApproval, WaitWindow} {
		require.Greater(t, held[r], 20, r)
	}
}
