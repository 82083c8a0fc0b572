package imagewatcher

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// registered returns the record after a registration's (or plan's)
// resolution of tg answering digest at at.
func registered(tg Target, prev *structs.ImageCheck, digest string, at time.Time) *structs.ImageCheck {
	return structs.Observe(prev, Observation(Check{Key: tg.Key(), Ref: tg.Ref, Registry: tg.Ref.Registry}, digest, nil, at, false))
}

// The reported scenario: the watcher's record says the tag is at D3 (seen
// long ago), the tag has since moved back to D2, and a new job is
// registered pinned to D2. Whatever the record, the new job is not rolled
// to D3 without a newer check, and its registration's answer starts no
// soak.
func TestDecide_NewJobIsNotRolledFromAnOlderRecord(t *testing.T) {
	const d2, d3 = dB, dC
	old := target(t, "auto", "reg:5000/app:stable@"+d2, 2*time.Second, 10*time.Second)
	stale := checked(old, nil, d3, t0) // the watcher saw D3 at t0
	reg := t0.Add(time.Minute)         // D2 again; the new job is pinned then

	cases := []struct {
		name   string
		record *structs.ImageCheck
		// pinnedAt is the new job's submission.
		pinnedAt time.Time
		now      time.Time
		wantRoll bool
	}{
		{"record older than the pin", stale, reg, reg.Add(time.Second), false},
		{"the registration's answer recorded", registered(old, stale, d2, reg), reg, reg.Add(time.Second), false},
		{"the watcher's next check finds D2", checked(old, registered(old, stale, d2, reg), d2, reg.Add(2*time.Second)), reg,
			reg.Add(3 * time.Second), false},
		{"the tag moves to D3 again: a fresh soak", checked(old, registered(old, stale, d2, reg), d3, reg.Add(2*time.Second)), reg,
			reg.Add(3 * time.Second), false},
		{"after that soak", checked(old, registered(old, stale, d2, reg), d3, reg.Add(2*time.Second)), reg,
			reg.Add(12 * time.Second), true},
		{"a check after the pin that still answers D3 rolls", checked(old, stale, d3, reg.Add(2*time.Second)), reg,
			reg.Add(3 * time.Second), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fresh := target(t, "fresh", "reg:5000/app:stable@"+d2, 2*time.Second, 10*time.Second)
			fresh.PinnedAt = tc.pinnedAt.UnixNano()
			in := input(tc.now, fresh)
			in.Checks[fresh.Key()] = tc.record
			d := Decide(in, &Memory{})
			if !tc.wantRoll {
				require.Empty(t, d.Rolls)
				return
			}
			require.Len(t, d.Rolls, 1)
			require.Equal(t, d3, d.Rolls[0].Changes[0].To)
		})
	}
}

// Only the watcher's own sight of a digest starts its soak: a digest a
// registration saw first waits a whole soak from the watcher's next check.
func TestDecide_SoakRunsFromTheWatchersFirstSight(t *testing.T) {
	tg := target(t, "web", "reg:5000/app:stable@"+dA, time.Second, 30*time.Second)
	c := checked(tg, nil, dA, t0)
	c = registered(tg, c, dB, t0.Add(time.Minute)) // another job's registration saw dB
	require.Zero(t, c.DigestSince)
	in := input(t0.Add(2*time.Minute), tg)
	in.Checks[tg.Key()] = c
	require.Empty(t, Decide(in, &Memory{}).Rolls, "no soak has started")

	seen := t0.Add(2 * time.Minute)
	in.Checks[tg.Key()] = checked(tg, c, dB, seen)
	require.Equal(t, seen.UnixNano(), in.Checks[tg.Key()].DigestSince)
	in.Now = seen.Add(29 * time.Second)
	d := Decide(in, &Memory{})
	require.Empty(t, d.Rolls)
	require.True(t, seen.Add(30*time.Second).Equal(d.NextWake), "wakes when the soak ends")
	in.Now = seen.Add(30 * time.Second)
	require.Len(t, Decide(in, &Memory{}).Rolls, 1)

	// A registration answering the digest the record has changes nothing
	// but the last check.
	again := registered(tg, in.Checks[tg.Key()], dB, seen.Add(time.Second))
	require.Equal(t, seen.UnixNano(), again.DigestSince)
	require.Equal(t, seen.Add(time.Second).UnixNano(), again.LastCheck)
}

// A digest that failed a deployment of one job is bad for every job on the
// same reference, until an operator clears it; a failure after the clear
// marks it bad again.
func TestDecide_BadDigestIsBadForTheReference(t *testing.T) {
	const ref = "reg:5000/app:stable"
	auto := target(t, "auto", ref+"@"+dA, time.Second, 0)
	auto.Failed = []Failure{{Digest: dB, JobVersion: 1, DeploymentID: "dep-1", Index: 40}}
	other := target(t, "other", ref+"@"+dA, time.Second, 0)
	elsewhere := target(t, "elsewhere", "reg:5000/app:canary@"+dA, time.Second, 0)
	in := input(t0, auto, other, elsewhere)
	in.Checks[auto.Key()] = checked(auto, nil, dB, t0)
	in.Checks[elsewhere.Key()] = checked(elsewhere, nil, dB, t0)

	d := Decide(in, &Memory{})
	require.Len(t, d.Update.BadDigests, 1, "one record for the reference")
	require.Len(t, d.Rolls, 1, "only the job on another tag rolls")
	require.Equal(t, "elsewhere", d.Rolls[0].JobID)

	// Marked: nothing more to record, still not rolled.
	in.Bad = BadByReference(d.Update.BadDigests)
	in.Targets = []Target{auto, other}
	delete(in.Checks, elsewhere.Key())
	for _, w := range d.Update.Watches {
		if w.JobID != "elsewhere" {
			in.Watches[w.ID()] = w
		}
	}
	d = Decide(in, &Memory{})
	require.Nil(t, d.Update)
	require.Empty(t, d.Rolls)
	st := Status(&structs.Job{Namespace: "default", ID: "other", TaskGroups: []*structs.TaskGroup{{Name: "web", Tasks: []*structs.Task{
		{Name: "server", Driver: "docker", Config: map[string]any{"image": ref + "@" + dA, "auto_update": true}}}}}},
		Records{Checks: in.Checks, Watches: in.Watches, Bad: in.Bad}, t0)
	require.Equal(t, []string{dB}, st[0].Bad, "shown for every job on the reference")
	require.Empty(t, st[0].Pending)

	// Cleared: both jobs roll to it; the old failure does not mark it again.
	cleared := *in.Bad[ref][dB]
	cleared.ClearedIndex = 50
	in.Bad = BadByReference([]*structs.ImageBadDigest{&cleared})
	d = Decide(in, &Memory{})
	require.Nil(t, d.Update)
	require.Len(t, d.Rolls, 2)

	// A new failure after the clear marks it bad again.
	auto.Failed = append(auto.Failed, Failure{Digest: dB, JobVersion: 3, DeploymentID: "dep-3", Index: 60})
	in.Targets = []Target{auto, other}
	d = Decide(in, &Memory{})
	require.Len(t, d.Update.BadDigests, 1)
	require.EqualValues(t, 60, d.Update.BadDigests[0].FailedIndex)
	require.Empty(t, d.Rolls)
}

// An auto-updated task stored unpinned (its registry was unreachable at
// registration) is not rolled at the first good check: that digest is
// taken as what the nodes pulled. A later move of the tag rolls as usual.
func TestDecide_UnpinnedTaskAssumesTheFirstGoodCheck(t *testing.T) {
	tg := target(t, "web", "reg:5000/app:stable", time.Second, 10*time.Second)
	tg.JobVersion, tg.PinnedAt = 3, t0.UnixNano()
	in := input(t0, tg)
	in.Checks[tg.Key()] = checked(tg, nil, dA, t0.Add(-time.Minute)) // before the version
	d := Decide(in, &Memory{})
	require.Empty(t, d.Rolls)
	require.Empty(t, d.Update.Watches[0].Assumed, "a check before the version says nothing of what the nodes pulled")
	in.Watches[tg.ID] = d.Update.Watches[0]

	// The registration's own answer was an error; then the registry is
	// still down at the watcher's check.
	down := Observe(in.Checks[tg.Key()], Check{Key: tg.Key(), Ref: tg.Ref, Registry: "reg:5000"}, "", errors.New("connection refused"), t0.Add(time.Second))
	in.Checks[tg.Key()] = down
	in.Now = t0.Add(2 * time.Second)
	d = Decide(in, &Memory{})
	require.Empty(t, d.Rolls)
	require.Nil(t, d.Update)

	// The first good check: recorded, no version.
	in.Now = t0.Add(3 * time.Second)
	in.Checks[tg.Key()] = checked(tg, down, dA, in.Now)
	d = Decide(in, &Memory{})
	require.Empty(t, d.Rolls, "no new version for the digest the nodes run")
	require.Len(t, d.Update.Watches, 1)
	require.Equal(t, dA, d.Update.Watches[0].Assumed)
	require.EqualValues(t, 3, d.Update.Watches[0].AssumedVersion)
	in.Watches[tg.ID] = d.Update.Watches[0]
	in.Now = t0.Add(time.Hour)
	d = Decide(in, &Memory{})
	require.Empty(t, d.Rolls)
	require.Nil(t, d.Update, "recorded once")

	// The tag moves: after the soak, a version pinning the new digest.
	moved := t0.Add(time.Hour)
	in.Checks[tg.Key()] = checked(tg, in.Checks[tg.Key()], dB, moved)
	in.Now = moved.Add(9 * time.Second)
	require.Empty(t, Decide(in, &Memory{}).Rolls)
	in.Now = moved.Add(10 * time.Second)
	d = Decide(in, &Memory{})
	require.Len(t, d.Rolls, 1)
	require.Equal(t, Change{Group: "web", Task: "server", Key: tg.Key(), Ref: tg.Ref, From: "", To: dB}, d.Rolls[0].Changes[0])

	// A new unpinned version (registered during another outage) assumes
	// afresh.
	tg.JobVersion, tg.PinnedAt = 4, moved.Add(time.Minute).UnixNano()
	in.Targets = []Target{tg}
	in.Now = moved.Add(2 * time.Minute)
	in.Checks[tg.Key()] = checked(tg, in.Checks[tg.Key()], dB, in.Now)
	d = Decide(in, &Memory{})
	require.Empty(t, d.Rolls)
	require.Equal(t, dB, d.Update.Watches[0].Assumed)
	require.EqualValues(t, 4, d.Update.Watches[0].AssumedVersion)
}
