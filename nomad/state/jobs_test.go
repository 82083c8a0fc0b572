package state

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

func TestUpsertJob_Versions(t *testing.T) {
	image := func(img string) func(j *structs.Job) {
		return func(j *structs.Job) {
			tg := *j.TaskGroups[0]
			task := *tg.Tasks[0]
			task.Config = map[string]any{"image": img}
			tg.Tasks = []*structs.Task{&task}
			j.TaskGroups = []*structs.TaskGroup{&tg}
		}
	}
	tests := []struct {
		name       string
		change     func(j *structs.Job)
		stableBf   bool
		wantVer    uint64
		wantStable bool
	}{
		{"same spec keeps version", func(*structs.Job) {}, false, 0, false},
		{"same spec keeps stability", func(*structs.Job) {}, true, 0, true},
		{"server fields ignored", func(j *structs.Job) { j.Status, j.SubmitTime, j.Version = "dead", 99, 7 }, true, 0, true},
		{"image change bumps", image("nginx:2"), true, 1, false},
		{"priority change bumps", func(j *structs.Job) { j.Priority = 70 }, false, 1, false},
		{"stop bumps", func(j *structs.Job) { j.Stop = true }, false, 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStateStore()
			first := mustJob(t, s, 10, testJob("web"))
			require.Equal(t, uint64(0), first.Version)
			require.Equal(t, uint64(10), first.CreateIndex)
			if tc.stableBf {
				require.NoError(t, s.UpdateJobStability(11, "", "web", 0, true))
			}
			in := testJob("web")
			tc.change(in)
			got := mustJob(t, s, 20, in)
			require.Equal(t, tc.wantVer, got.Version)
			require.Equal(t, tc.wantStable, got.Stable)
			require.Equal(t, uint64(10), got.CreateIndex)
			require.Equal(t, uint64(20), got.ModifyIndex)
			require.Equal(t, uint64(20), got.JobModifyIndex)
			vs, err := s.JobVersionsByID(nil, "", "web")
			require.NoError(t, err)
			require.Len(t, vs, int(tc.wantVer)+1)
			require.Equal(t, tc.wantVer, vs[0].Version, "newest first")
			require.Equal(t, uint64(20), s.Index(TableJobs))
			require.Equal(t, uint64(20), s.Index(TableJobVersions))
		})
	}
}

func TestUpsertJob_CapsVersionsKeepingStable(t *testing.T) {
	s := NewStateStore()
	for i := 0; i < 10; i++ {
		j := testJob("web")
		j.Priority = 10 + i
		require.NoError(t, s.UpsertJob(uint64(100+i), &structs.JobSubmission{Source: "v", Format: "hcl2"}, j))
		if i == 1 {
			require.NoError(t, s.UpdateJobStability(uint64(100+i), "", "web", 1, true))
		}
	}
	vs, err := s.JobVersionsByID(nil, "", "web")
	require.NoError(t, err)
	var got []uint64
	for _, v := range vs {
		got = append(got, v.Version)
	}
	// Newest five plus the newest stable version (1).
	require.Equal(t, []uint64{9, 8, 7, 6, 5, 1}, got)
	sub, err := s.SubmissionByVersion(nil, "", "web", 1)
	require.NoError(t, err)
	require.NotNil(t, sub)
	require.Equal(t, uint64(101), sub.JobModifyIndex)
	sub, err = s.SubmissionByVersion(nil, "", "web", 2)
	require.NoError(t, err)
	require.Nil(t, sub, "pruned with its version")
	old, err := s.JobByIDAndVersion(nil, "", "web", 4)
	require.NoError(t, err)
	require.Nil(t, old)

	// Without a stable version only the newest six remain.
	s = NewStateStore()
	for i := 0; i < 8; i++ {
		j := testJob("api")
		j.Priority = 10 + i
		mustJob(t, s, uint64(10+i), j)
	}
	vs, err = s.JobVersionsByID(nil, "", "api")
	require.NoError(t, err)
	require.Len(t, vs, JobTrackedVersions)
	require.Equal(t, uint64(2), vs[len(vs)-1].Version)
}

func TestUpsertJob_DoesNotMutateInput(t *testing.T) {
	s := NewStateStore()
	in := testJob("web")
	require.NoError(t, s.UpsertJob(5, nil, in))
	require.Zero(t, in.CreateIndex)
	require.Empty(t, in.Status)
}

func TestJobReads(t *testing.T) {
	s := NewStateStore()
	for i, id := range []string{"web", "web2", "api"} {
		mustJob(t, s, uint64(i+1), testJob(id))
	}
	other := testJob("web")
	other.Namespace = "prod"
	mustJob(t, s, 4, other)

	ids := func(js []*structs.Job) []string {
		out := []string{}
		for _, j := range js {
			out = append(out, j.Namespace+"/"+j.ID)
		}
		return out
	}
	all, err := s.Jobs(nil, "*")
	require.NoError(t, err)
	require.Equal(t, []string{"default/api", "default/web", "default/web2", "prod/web"}, ids(all))
	def, err := s.Jobs(nil, "")
	require.NoError(t, err)
	require.Equal(t, []string{"default/api", "default/web", "default/web2"}, ids(def))
	pre, err := s.JobsByIDPrefix(nil, "default", "we")
	require.NoError(t, err)
	require.Equal(t, []string{"default/web", "default/web2"}, ids(pre))
	pre, err = s.JobsByIDPrefix(nil, "*", "web")
	require.NoError(t, err)
	require.Equal(t, []string{"default/web", "default/web2", "prod/web"}, ids(pre))
	vs, err := s.JobVersionsByID(nil, "default", "web")
	require.NoError(t, err)
	require.Len(t, vs, 1, "web2 must not match web's versions")
	missing, err := s.JobByID(nil, "default", "nope")
	require.NoError(t, err)
	require.Nil(t, missing)
}

func TestDeleteJob(t *testing.T) {
	s := NewStateStore()
	job := mustJob(t, s, 1, testJob("web"))
	require.NoError(t, s.UpsertJob(2, &structs.JobSubmission{Source: "x"}, testJob("web")))
	a := testAlloc(job, "n1")
	require.NoError(t, s.UpsertAllocs(3, []*structs.Allocation{a}))

	require.NoError(t, s.DeleteJob(4, "", "web"))
	j, err := s.JobByID(nil, "", "web")
	require.NoError(t, err)
	require.Nil(t, j)
	vs, err := s.JobVersionsByID(nil, "", "web")
	require.NoError(t, err)
	require.Empty(t, vs)
	subs, err := s.Submissions(nil)
	require.NoError(t, err)
	require.Empty(t, subs)
	mustAlloc(t, s, a.ID)
	require.Equal(t, uint64(4), s.Index(TableJobs))

	err = s.DeleteJob(5, "", "web")
	require.True(t, errors.Is(err, ErrNotFound), "got %v", err)
}

func TestJobStatus_Transitions(t *testing.T) {
	s := NewStateStore()
	job := mustJob(t, s, 1, testJob("web"))
	require.Equal(t, structs.JobStatusPending, job.Status)

	a := testAlloc(job, "n1")
	require.NoError(t, s.UpsertAllocs(2, []*structs.Allocation{a}))
	require.Equal(t, structs.JobStatusRunning, jobStatus(t, s, "web"))
	j, _ := s.JobByID(nil, "", "web")
	require.Equal(t, uint64(2), j.ModifyIndex, "status change bumps ModifyIndex")
	require.Equal(t, uint64(1), j.JobModifyIndex)

	stop := testJob("web")
	stop.Stop = true
	require.NoError(t, s.UpsertJob(3, nil, stop))
	require.Equal(t, structs.JobStatusRunning, jobStatus(t, s, "web"), "live alloc keeps it running")

	require.NoError(t, s.UpdateAllocsDesiredStatus(4, []string{a.ID}, structs.AllocDesiredStatusStop, "job stopped"))
	require.Equal(t, structs.JobStatusDead, jobStatus(t, s, "web"))
}

func TestJobStatus_SysBatch(t *testing.T) {
	s := NewStateStore()
	in := testJob("batch")
	in.Type = structs.JobTypeSysBatch
	job := mustJob(t, s, 1, in)
	ev := testEval(job)
	require.NoError(t, s.UpsertEvals(2, []*structs.Evaluation{ev}))
	a := testAlloc(job, "n1")
	require.NoError(t, s.UpsertAllocs(3, []*structs.Allocation{a}))
	require.Equal(t, structs.JobStatusRunning, jobStatus(t, s, "batch"))

	done := a.Copy()
	done.ClientStatus = structs.AllocClientStatusComplete
	require.NoError(t, s.UpdateAllocsFromClient(4, []*structs.Allocation{done}, 100))
	require.Equal(t, structs.JobStatusPending, jobStatus(t, s, "batch"), "eval still pending")

	ev2 := ev.Copy()
	ev2.Status = structs.EvalStatusComplete
	require.NoError(t, s.UpsertEvals(5, []*structs.Evaluation{ev2}))
	require.Equal(t, structs.JobStatusDead, jobStatus(t, s, "batch"))
}

func TestJobSummary(t *testing.T) {
	s := NewStateStore()
	in := testJob("web")
	in.TaskGroups = append(in.TaskGroups, &structs.TaskGroup{Name: "idle"})
	job := mustJob(t, s, 1, in)
	statuses := []string{
		structs.AllocClientStatusPending, structs.AllocClientStatusRunning, structs.AllocClientStatusRunning,
		structs.AllocClientStatusComplete, structs.AllocClientStatusFailed, structs.AllocClientStatusLost,
		structs.AllocClientStatusUnknown,
	}
	var allocs []*structs.Allocation
	for _, st := range statuses {
		a := testAlloc(job, "n1")
		a.ClientStatus = st
		allocs = append(allocs, a)
	}
	require.NoError(t, s.UpsertAllocs(2, allocs))

	sum, err := s.JobSummaryByID(nil, "", "web")
	require.NoError(t, err)
	require.Equal(t, map[string]structs.TaskGroupSummary{
		"web":  {Starting: 1, Running: 2, Complete: 1, Failed: 1, Lost: 1, Unknown: 1},
		"idle": {},
	}, sum.Summary)
	require.Equal(t, uint64(1), sum.CreateIndex)
	require.Equal(t, uint64(2), sum.ModifyIndex)

	none, err := s.JobSummaryByID(nil, "", "nope")
	require.NoError(t, err)
	require.Nil(t, none)
}

func TestUpdateJobStability(t *testing.T) {
	s := NewStateStore()
	mustJob(t, s, 1, testJob("web"))
	next := testJob("web")
	next.Priority = 99
	mustJob(t, s, 2, next)

	require.NoError(t, s.UpdateJobStability(3, "", "web", 0, true))
	v0, err := s.JobByIDAndVersion(nil, "", "web", 0)
	require.NoError(t, err)
	require.True(t, v0.Stable)
	cur, _ := s.JobByID(nil, "", "web")
	require.False(t, cur.Stable, "current is version 1")

	require.NoError(t, s.UpdateJobStability(4, "", "web", 1, true))
	cur, _ = s.JobByID(nil, "", "web")
	require.True(t, cur.Stable)
	require.Equal(t, uint64(4), cur.ModifyIndex)

	err = s.UpdateJobStability(5, "", "web", 7, true)
	require.True(t, errors.Is(err, ErrNotFound), "got %v", err)
}

func TestUpsertJob_VersionTagSurvivesUnchangedResubmission(t *testing.T) {
	s := NewStateStore()
	tagged := testJob("web")
	tagged.VersionTag = &structs.JobVersionTag{Name: "auto-update", Description: "why"}
	require.Equal(t, "auto-update", mustJob(t, s, 10, tagged).VersionTag.Name)

	again := mustJob(t, s, 20, testJob("web"))
	require.Equal(t, uint64(0), again.Version)
	require.NotNil(t, again.VersionTag, "an unchanged resubmission keeps the version's tag")
	require.Equal(t, "why", again.VersionTag.Description)

	changed := testJob("web")
	changed.Priority = 70
	next := mustJob(t, s, 30, changed)
	require.Equal(t, uint64(1), next.Version)
	require.Nil(t, next.VersionTag, "a new version starts untagged")
}

func TestUpsertImageWatch(t *testing.T) {
	s := NewStateStore()
	w := &structs.ImageWatch{JobID: "web", Group: "g", Task: "t", Key: "r:1|", Assumed: "sha256:x"}
	require.NoError(t, s.UpsertImageWatch(10, &structs.ImageWatchUpdateRequest{
		Checks:  []*structs.ImageCheck{{Key: "r:1|", Digest: "sha256:a"}},
		Watches: []*structs.ImageWatch{w},
	}))
	w.Assumed, w.AssumedVersion = "sha256:y", 2
	require.NoError(t, s.UpsertImageWatch(20, &structs.ImageWatchUpdateRequest{Watches: []*structs.ImageWatch{w},
		Checks: []*structs.ImageCheck{{Key: "r:1|", Digest: "sha256:b"}}}))
	ws, err := s.ImageWatchesByJob(nil, "", "web")
	require.NoError(t, err)
	require.Len(t, ws, 1)
	require.Equal(t, "default", ws[0].Namespace)
	require.Equal(t, "sha256:y", ws[0].Assumed)
	require.EqualValues(t, 2, ws[0].AssumedVersion)
	require.Equal(t, uint64(10), ws[0].CreateIndex)
	require.Equal(t, uint64(20), ws[0].ModifyIndex)
	cs, err := s.ImageChecks(nil)
	require.NoError(t, err)
	require.Equal(t, "sha256:b", cs[0].Digest)
	require.Equal(t, uint64(10), cs[0].CreateIndex)
	require.Equal(t, uint64(20), s.Index(TableImageWatches))

	require.NoError(t, s.UpsertImageWatch(30, &structs.ImageWatchUpdateRequest{
		DeleteChecks: []string{"r:1|", "missing"}, DeleteWatches: []structs.ImageWatchID{ws[0].ID()}}))
	ws, _ = s.ImageWatches(nil)
	cs, _ = s.ImageChecks(nil)
	require.Empty(t, ws)
	require.Empty(t, cs)
}

// Observations fold into the check record in commit order, but an answer
// older than the record changes nothing; only the watcher's own answers
// start a soak.
func TestUpsertImageWatch_Observations(t *testing.T) {
	s := NewStateStore()
	obs := func(index uint64, at int64, digest string, byWatcher bool) *structs.ImageCheck {
		t.Helper()
		require.NoError(t, s.UpsertImageWatch(index, &structs.ImageWatchUpdateRequest{Observations: []*structs.ImageObservation{
			{Key: "r:1|", Reference: "r:1", Registry: "docker.io", Time: at, Digest: digest, ByWatcher: byWatcher}}}))
		cs, err := s.ImageChecks(nil)
		require.NoError(t, err)
		require.Len(t, cs, 1)
		return cs[0]
	}
	c := obs(10, 100, "sha256:a", true)
	require.Equal(t, "sha256:a", c.Digest)
	require.EqualValues(t, 100, c.DigestSince)
	require.EqualValues(t, 10, c.CreateIndex)

	c = obs(11, 200, "sha256:b", false) // a registration saw a new digest
	require.Equal(t, "sha256:b", c.Digest)
	require.Zero(t, c.DigestSince, "a registration starts no soak")
	require.EqualValues(t, 200, c.LastCheck)

	c = obs(12, 150, "sha256:a", true) // a slow watcher check committed late
	require.Equal(t, "sha256:b", c.Digest, "an older answer changes nothing")
	require.EqualValues(t, 11, c.ModifyIndex)

	c = obs(13, 300, "sha256:b", true)
	require.EqualValues(t, 300, c.DigestSince, "the soak runs from the watcher's first sight")
	require.EqualValues(t, 3, c.Checks)
	require.EqualValues(t, 10, c.CreateIndex)
}

// A bad digest's newest failure wins, and a clear is never undone by a
// write the watcher prepared before it.
func TestUpsertImageWatch_BadDigests(t *testing.T) {
	s := NewStateStore()
	apply := func(index uint64, req *structs.ImageWatchUpdateRequest) *structs.ImageBadDigest {
		t.Helper()
		require.NoError(t, s.UpsertImageWatch(index, req))
		bs, err := s.ImageBadDigests(nil)
		require.NoError(t, err)
		require.Len(t, bs, 1)
		return bs[0]
	}
	mark := func(job, dep string, failed uint64) *structs.ImageWatchUpdateRequest {
		return &structs.ImageWatchUpdateRequest{BadDigests: []*structs.ImageBadDigest{
			{Reference: "r:1", Digest: "sha256:x", JobID: job, DeploymentID: dep, FailedIndex: failed}}}
	}
	b := apply(10, mark("auto", "d1", 8))
	require.True(t, b.IsBad())
	require.Equal(t, "auto", b.JobID)

	b = apply(11, mark("other", "d0", 5))
	require.Equal(t, "auto", b.JobID, "an older failure does not replace a newer one")

	b = apply(12, &structs.ImageWatchUpdateRequest{ClearBad: []structs.ImageBadDigestID{{Reference: "r:1", Digest: "sha256:x"}, {Reference: "r:1", Digest: "sha256:none"}}})
	require.False(t, b.IsBad())
	require.EqualValues(t, 12, b.ClearedIndex)

	b = apply(13, mark("auto", "d1", 9)) // prepared before the clear
	require.False(t, b.IsBad(), "the clear is kept")
	b = apply(14, mark("third", "d2", 13))
	require.True(t, b.IsBad(), "a failure after the clear marks it bad again")
	require.Equal(t, "third", b.JobID)
	require.EqualValues(t, 10, b.CreateIndex)
}

// Only Approvals set a watch's Approved: a whole-record upsert (the
// watcher's, read before the approval was committed) keeps it.
func TestUpsertImageWatch_ApprovalsSurviveWatcherUpserts(t *testing.T) {
	s := NewStateStore()
	w := &structs.ImageWatch{JobID: "web", Group: "g", Task: "t", Key: "r:1|"}
	require.NoError(t, s.UpsertImageWatch(10, &structs.ImageWatchUpdateRequest{Watches: []*structs.ImageWatch{w}}))
	id := structs.ImageWatchID{Namespace: "default", JobID: "web", Group: "g", Task: "t"}
	require.NoError(t, s.UpsertImageWatch(11, &structs.ImageWatchUpdateRequest{Approvals: []structs.ImageApproval{
		{ID: id, Digest: "sha256:b"}, {ID: structs.ImageWatchID{Namespace: "default", JobID: "gone", Group: "g", Task: "t"}, Digest: "sha256:b"}}}))
	stale := w.Copy()
	stale.Held, stale.HeldReason = "sha256:b", "approval"
	require.NoError(t, s.UpsertImageWatch(12, &structs.ImageWatchUpdateRequest{Watches: []*structs.ImageWatch{stale}}))
	ws, err := s.ImageWatches(nil)
	require.NoError(t, err)
	require.Len(t, ws, 1, "an approval of a missing watch creates none")
	require.Equal(t, "sha256:b", ws[0].Approved)
	require.Equal(t, "sha256:b", ws[0].Held)
	require.Equal(t, uint64(12), ws[0].ModifyIndex)
}
