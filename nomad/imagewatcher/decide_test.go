package imagewatcher

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/imageresolve"
	"github.com/drover-project/drover/nomad/structs"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

const (
	dA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	dB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	dC = "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
)

func target(t *testing.T, job, image string, interval, soak time.Duration) Target {
	t.Helper()
	ref, err := imageresolve.Parse(image)
	require.NoError(t, err)
	return Target{ID: structs.ImageWatchID{Namespace: "default", JobID: job, Group: "web", Task: "server"},
		JobModifyIndex: 7, Ref: ref, Pinned: ref.Digest, Interval: interval, Policy: Policy{Soak: soak}}
}

func input(now time.Time, ts ...Target) Input {
	return Input{Now: now, Targets: ts, Checks: map[string]*structs.ImageCheck{},
		Watches: map[structs.ImageWatchID]*structs.ImageWatch{}}
}

// checked returns the record of a successful check of tg answering digest at at.
func checked(tg Target, prev *structs.ImageCheck, digest string, at time.Time) *structs.ImageCheck {
	return Observe(prev, Check{Key: tg.Key(), Ref: tg.Ref, Registry: tg.Ref.Registry}, digest, nil, at)
}

func TestDecide_FirstCheckAndNewWatch(t *testing.T) {
	tg := target(t, "web", "reg:5000/app:stable@"+dA, time.Minute, 0)
	d := Decide(input(t0, tg), &Memory{})
	require.Len(t, d.Checks, 1)
	require.Equal(t, "reg:5000/app:stable|", d.Checks[0].Key)
	require.Equal(t, "reg:5000", d.Checks[0].Registry)
	require.NotNil(t, d.Update)
	require.Len(t, d.Update.Watches, 1)
	require.Equal(t, tg.Key(), d.Update.Watches[0].Key)
	require.Empty(t, d.Rolls)
}

func TestDecide_OneCheckPerReferenceWhateverTheJobs(t *testing.T) {
	in := input(t0,
		target(t, "a", "reg:5000/app:stable@"+dA, time.Minute, 0),
		target(t, "b", "reg:5000/app:stable@"+dA, 30*time.Second, 0),
		target(t, "c", "reg:5000/app:stable@"+dA, time.Minute, 0),
		target(t, "d", "reg:5000/other:1@"+dA, time.Minute, 0),
	)
	mem := &Memory{}
	d := Decide(in, mem)
	require.Len(t, d.Checks, 2, "one check per distinct reference")

	// After the check, the shared reference is next due after the
	// shortest interval among its users (plus jitter), not before.
	for _, c := range d.Checks {
		in.Checks[c.Key] = checked(in.Targets[0], nil, dA, t0)
		in.Checks[c.Key].Key = c.Key
	}
	in.Now = t0.Add(29 * time.Second)
	d = Decide(in, mem)
	require.Empty(t, d.Checks)
	due := NextDue(in.Checks["reg:5000/app:stable|"], 30*time.Second)
	require.Equal(t, due, d.NextWake)
	in.Now = due
	d = Decide(in, mem)
	require.Len(t, d.Checks, 1)
	require.Equal(t, "reg:5000/app:stable|", d.Checks[0].Key)
}

func TestJitterBounds(t *testing.T) {
	seen := map[time.Duration]bool{}
	for i := range 1000 {
		j := Jitter(fmt.Sprintf("reg/app%d:tag|", i), int64(i)*7919, 10*time.Minute)
		require.GreaterOrEqual(t, j, time.Duration(0))
		require.Less(t, j, time.Minute, "at most 10% of the interval")
		seen[j/time.Second] = true
	}
	require.Greater(t, len(seen), 30, "jitter spreads checks")
	require.Equal(t, Jitter("k", 1, time.Minute), Jitter("k", 1, time.Minute), "deterministic")
}

func TestDecide_SoakThenRoll(t *testing.T) {
	tg := target(t, "web", "reg:5000/app:stable@"+dA, time.Second, 30*time.Second)
	in := input(t0, tg)
	in.Checks[tg.Key()] = checked(tg, nil, dA, t0)
	// The tag moves at t0+5s.
	moved := t0.Add(5 * time.Second)
	in.Checks[tg.Key()] = checked(tg, in.Checks[tg.Key()], dB, moved)
	// Re-checks that answer the same digest do not restart the soak.
	in.Checks[tg.Key()] = checked(tg, in.Checks[tg.Key()], dB, moved.Add(10*time.Second))
	require.Equal(t, moved.UnixNano(), in.Checks[tg.Key()].DigestSince)

	in.Now = moved.Add(20 * time.Second)
	d := Decide(in, &Memory{})
	require.Empty(t, d.Rolls, "still soaking")
	require.False(t, d.NextWake.After(moved.Add(30*time.Second)), "wakes when the soak ends")

	in.Now = moved.Add(30 * time.Second)
	d = Decide(in, &Memory{})
	require.Len(t, d.Rolls, 1)
	r := d.Rolls[0]
	require.Equal(t, "web", r.JobID)
	require.Equal(t, uint64(7), r.JobModifyIndex, "the job's modify index is enforced")
	require.Equal(t, []Change{{Group: "web", Task: "server", Key: tg.Key(), Ref: tg.Ref, From: dA, To: dB}}, r.Changes)

	// A tag that moves again during the soak restarts it.
	in.Checks[tg.Key()] = checked(tg, in.Checks[tg.Key()], dC, moved.Add(29*time.Second))
	in.Now = moved.Add(40 * time.Second)
	require.Empty(t, Decide(in, &Memory{}).Rolls)
}

func TestDecide_FailedCheckChangesNothing(t *testing.T) {
	tg := target(t, "web", "reg:5000/app:stable@"+dA, time.Second, 0)
	in := input(t0, tg)
	c := checked(tg, nil, dB, t0)
	c = Observe(c, Check{Key: tg.Key(), Ref: tg.Ref, Registry: "reg:5000"}, "", errors.New("connection refused"), t0.Add(time.Second))
	require.Equal(t, dB, c.Digest, "an error keeps the last digest")
	require.Equal(t, "connection refused", c.LastError)
	require.EqualValues(t, 2, c.Checks)
	require.EqualValues(t, 1, c.Errors)
	in.Checks[tg.Key()] = c
	in.Now = t0.Add(time.Minute)
	require.Empty(t, Decide(in, &Memory{}).Rolls, "no roll on a registry that is down")
}

func TestDecide_BadDigestsAreNotRolledUntilTheTagMoves(t *testing.T) {
	tg := target(t, "web", "reg:5000/app:stable@"+dA, time.Second, 0)
	tg.Failed = []Failure{{Digest: dB, JobVersion: 1, DeploymentID: "dep-1", Index: 40}}
	in := input(t0, tg)
	in.Watches[tg.ID] = &structs.ImageWatch{Namespace: "default", JobID: "web", Group: "web", Task: "server", Key: tg.Key()}
	in.Checks[tg.Key()] = checked(tg, nil, dB, t0)
	d := Decide(in, &Memory{})
	require.Empty(t, d.Rolls)
	require.NotNil(t, d.Update)
	require.Equal(t, []*structs.ImageBadDigest{{Reference: "reg:5000/app:stable", Digest: dB, Namespace: "default", JobID: "web",
		JobVersion: 1, DeploymentID: "dep-1", FailedIndex: 40, FailedTime: t0.UnixNano()}}, d.Update.BadDigests, "recorded in raft, for the reference")

	// Several intervals later, still not rolled, and nothing more to record.
	in.Bad = BadByReference(d.Update.BadDigests)
	tg.Failed = nil // the failed version was pruned from history
	in.Targets = []Target{tg}
	for i := 1; i <= 5; i++ {
		in.Now = t0.Add(time.Duration(i) * time.Second)
		in.Checks[tg.Key()] = checked(tg, in.Checks[tg.Key()], dB, in.Now)
		d = Decide(in, &Memory{})
		require.Empty(t, d.Rolls)
		require.Nil(t, d.Update)
	}
	// The tag moves on: the new digest rolls.
	in.Checks[tg.Key()] = checked(tg, in.Checks[tg.Key()], dC, in.Now)
	d = Decide(in, &Memory{})
	require.Len(t, d.Rolls, 1)
	require.Equal(t, dC, d.Rolls[0].Changes[0].To)
}

func TestDecide_RegistryBudget(t *testing.T) {
	var ts []Target
	for i := range 5 {
		ts = append(ts, target(t, fmt.Sprintf("j%d", i), fmt.Sprintf("reg:5000/app%d:1@%s", i, dA), time.Second, 0))
	}
	ts = append(ts, target(t, "other", "ghcr.io/o/app:1@"+dA, time.Second, 0))
	mem := &Memory{Budget: 3}
	in := input(t0, ts...)
	d := Decide(in, mem)
	perReg := map[string]int{}
	for _, c := range d.Checks {
		perReg[c.Registry]++
	}
	require.Equal(t, map[string]int{"reg:5000": 3, "ghcr.io": 1}, perReg, "the budget is per registry")
	require.Equal(t, t0.Add(time.Minute), d.NextWake, "wakes when the budget frees up")

	in.Now = t0.Add(30 * time.Second)
	for _, c := range Decide(in, mem).Checks {
		require.NotEqual(t, "reg:5000", c.Registry, "budget spent for the minute")
	}
	in.Now = t0.Add(time.Minute + time.Nanosecond)
	d = Decide(in, mem)
	perReg = map[string]int{}
	for _, c := range d.Checks {
		perReg[c.Registry]++
	}
	require.Equal(t, 3, perReg["reg:5000"], "a new minute, a new budget")
}

func TestDecide_RetryAfterHoldsTheRegistry(t *testing.T) {
	a := target(t, "a", "reg:5000/app:1@"+dA, time.Second, 0)
	b := target(t, "b", "ghcr.io/o/app:1@"+dA, time.Second, 0)
	mem := &Memory{}
	mem.HoldRegistry("reg:5000", t0, 90*time.Second)
	d := Decide(input(t0, a, b), mem)
	require.Len(t, d.Checks, 1)
	require.Equal(t, "ghcr.io", d.Checks[0].Registry)
	require.Empty(t, Decide(input(t0.Add(89*time.Second), a), mem).Checks, "held until Retry-After has passed")
	d = Decide(input(t0.Add(90*time.Second), a), mem)
	require.Len(t, d.Checks, 1, "checked again once Retry-After has passed")

	// A 429 without Retry-After holds for the default backoff.
	mem.HoldRegistry("ghcr.io", t0, 0)
	require.Empty(t, Decide(input(t0.Add(time.Second), b), mem).Checks)
}

func TestDecide_ForcedCheck(t *testing.T) {
	tg := target(t, "web", "reg:5000/app:stable@"+dA, 10*time.Minute, 0)
	in := input(t0.Add(time.Second), tg)
	in.Checks[tg.Key()] = checked(tg, nil, dA, t0)
	require.Empty(t, Decide(in, &Memory{}).Checks)
	in.Forced = map[string]bool{tg.Key(): true}
	require.Len(t, Decide(in, &Memory{}).Checks, 1)
}

func TestDecide_OneRollPerJobAndOrphans(t *testing.T) {
	a := target(t, "web", "reg:5000/app:1@"+dA, time.Second, 0)
	b := target(t, "web", "reg:5000/side:1@"+dA, time.Second, 0)
	b.ID.Task = "sidecar"
	in := input(t0, a, b)
	in.Checks[a.Key()] = checked(a, nil, dB, t0)
	in.Checks[b.Key()] = checked(b, nil, dC, t0)
	gone := structs.ImageWatchID{Namespace: "default", JobID: "gone", Group: "g", Task: "t"}
	stopped := structs.ImageWatchID{Namespace: "default", JobID: "stopped", Group: "g", Task: "t"}
	in.Watches[gone] = &structs.ImageWatch{Namespace: "default", JobID: "gone", Group: "g", Task: "t", Key: "reg:5000/gone:1|"}
	in.Watches[stopped] = &structs.ImageWatch{Namespace: "default", JobID: "stopped", Group: "g", Task: "t", Key: "reg:5000/kept:1|"}
	in.Checks["reg:5000/gone:1|"] = &structs.ImageCheck{Key: "reg:5000/gone:1|"}
	in.Checks["reg:5000/kept:1|"] = &structs.ImageCheck{Key: "reg:5000/kept:1|"}
	in.Keep = map[structs.NamespacedID]bool{{Namespace: "default", ID: "stopped"}: true}
	d := Decide(in, &Memory{})
	require.Len(t, d.Rolls, 1, "one new version for both tasks")
	require.Len(t, d.Rolls[0].Changes, 2)
	require.Equal(t, []structs.ImageWatchID{gone}, d.Update.DeleteWatches)
	require.Equal(t, []string{"reg:5000/gone:1|"}, d.Update.DeleteChecks)
}

func TestDecide_HeldJobIsNotRolled(t *testing.T) {
	tg := target(t, "web", "reg:5000/app:stable@"+dA, time.Second, 0)
	in := input(t0, tg)
	in.Checks[tg.Key()] = checked(tg, nil, dB, t0)
	mem := &Memory{}
	mem.HoldJob(structs.NamespacedID{Namespace: "default", ID: "web"}, t0)
	require.Empty(t, Decide(in, mem).Rolls)
	in.Now = t0.Add(defaultBackoff)
	require.Len(t, Decide(in, mem).Rolls, 1)
}

func TestFailedDigests(t *testing.T) {
	ver := func(v uint64, image string) *structs.Job {
		return &structs.Job{ID: "web", Namespace: "default", Version: v, TaskGroups: []*structs.TaskGroup{{Name: "web",
			Tasks: []*structs.Task{{Name: "server", Driver: "docker", Config: map[string]any{"image": image}}}}}}
	}
	digests := func(fs []Failure) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.Digest)
		}
		return out
	}
	id := structs.ImageWatchID{Namespace: "default", JobID: "web", Group: "web", Task: "server"}
	h := JobHistory{
		Versions: []*structs.Job{ver(3, "r/app:s@"+dA), ver(2, "r/app:s@"+dA), ver(1, "r/app:s@"+dB), ver(0, "r/app:s@"+dA)},
		Deployments: []*structs.Deployment{
			{ID: "d1", JobVersion: 1, Status: structs.DeploymentStatusFailed, ModifyIndex: 11},     // dB rolled and failed
			{ID: "d2", JobVersion: 2, Status: structs.DeploymentStatusSuccessful, ModifyIndex: 12}, // the revert
			{ID: "d3", JobVersion: 3, Status: structs.DeploymentStatusFailed, ModifyIndex: 13},     // failed for another reason, same digest
		},
	}
	require.Equal(t, []Failure{{Digest: dB, JobVersion: 1, DeploymentID: "d1", Index: 11}}, FailedDigests(id, "r/app:s", h))
	h.Versions = append(h.Versions, ver(4, "r/app:s@"+dC), ver(5, "r/app:s@"+dB))
	h.Deployments = append([]*structs.Deployment{{ID: "d5", JobVersion: 5, Status: structs.DeploymentStatusFailed, ModifyIndex: 15}},
		append(h.Deployments, &structs.Deployment{ID: "d4", JobVersion: 4, Status: structs.DeploymentStatusFailed, ModifyIndex: 14})...)
	got := FailedDigests(id, "r/app:s", h)
	require.Equal(t, []string{dB, dC}, digests(got), "in version order, each once")
	require.Equal(t, "d5", got[0].DeploymentID, "a digest's newest failure")
	require.Empty(t, FailedDigests(id, "r/app:other", h), "per tag")
}

func TestDecide_LongFailureHistoryIsStable(t *testing.T) {
	tg := target(t, "web", "reg:5000/app:stable@"+dA, time.Second, 0)
	for i := range 40 {
		tg.Failed = append(tg.Failed, Failure{Digest: fmt.Sprintf("sha256:%064d", i), DeploymentID: fmt.Sprint(i), Index: uint64(i + 1)})
	}
	in := input(t0, tg)
	d := Decide(in, &Memory{})
	require.NotNil(t, d.Update)
	require.Len(t, d.Update.BadDigests, maxBad)
	in.Watches[tg.ID] = d.Update.Watches[0]
	in.Bad = BadByReference(d.Update.BadDigests)
	require.Nil(t, Decide(in, &Memory{}).Update, "nothing more to record")
}
