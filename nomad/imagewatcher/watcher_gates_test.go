package imagewatcher

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/helper/metrics"
	"github.com/drover-project/drover/nomad/structs"
)

// The watcher reads the image's created time only for tasks with a min
// age, once per digest, and rolls once the image is old enough.
func TestWatcher_MinAgeReadsCreatedAndWaits(t *testing.T) {
	b := newFakeBackend()
	ref := "reg:5000/app:stable"
	b.setTag(ref, dA)
	job := autoJob("web", ref+"@"+dA)
	job.TaskGroups[0].Tasks[0].Config["auto_update_soak"] = "0s"
	job.TaskGroups[0].Tasks[0].Config["auto_update_min_age"] = "1m"
	require.NoError(t, b.st.UpsertJob(b.next(), nil, job))
	b.created = map[string]time.Time{dB: t0.Add(-30 * time.Second)} // pushed 30s before t0
	reg := metrics.NewRegistry()
	w := New(b, hclog.NewNullLogger(), NewMetrics(reg), 0)
	pass := func() {
		for {
			if _, worked := w.pass(context.Background(), memdb.NewWatchSet()); !worked {
				return
			}
		}
	}
	pass()
	b.setTag(ref, dB)
	b.advance(1200 * time.Millisecond)
	pass()
	c, err := b.st.ImageCheck(nil, ref+"|")
	require.NoError(t, err)
	require.Equal(t, dB, c.Digest)
	require.Equal(t, b.created[dB].UnixNano(), c.Created, "created time recorded with the digest")
	cur, _ := b.st.JobByID(nil, "default", "web")
	require.EqualValues(t, 0, cur.Version, "the image is 31s old: it waits")
	require.EqualValues(t, 1, w.metrics.Pending.WithLabels(WaitMinAge).Value())

	st := Status(cur, Records{Checks: map[string]*structs.ImageCheck{c.Key: c}}, b.Now())
	require.Equal(t, WaitMinAge, st[0].Waiting)
	require.True(t, st[0].WaitingUntil.Equal(b.created[dB].Add(time.Minute)))

	for range 30 {
		b.advance(time.Second)
		pass()
	}
	cur, _ = b.st.JobByID(nil, "default", "web")
	require.EqualValues(t, 1, cur.Version, "old enough: rolled")
	require.Equal(t, ref+"@"+dB, cur.TaskGroups[0].Tasks[0].Config["image"])
	require.EqualValues(t, 0, w.metrics.Pending.WithLabels(WaitMinAge).Value())
}

// Approval: nothing rolls until the digest is approved (through the
// state's Approvals, as the server endpoint commits it); then it rolls,
// and a later move of the tag waits for its own approval.
func TestWatcher_ApprovalHoldsUntilApproved(t *testing.T) {
	b := newFakeBackend()
	ref := "reg:5000/app:stable"
	b.setTag(ref, dA)
	job := autoJob("web", ref+"@"+dA)
	job.TaskGroups[0].Tasks[0].Config["auto_update_soak"] = "0s"
	job.TaskGroups[0].Tasks[0].Config["auto_update_approval"] = true
	require.NoError(t, b.st.UpsertJob(b.next(), nil, job))
	w := New(b, hclog.NewNullLogger(), nil, 0)
	pass := func() {
		for {
			if _, worked := w.pass(context.Background(), memdb.NewWatchSet()); !worked {
				return
			}
		}
	}
	pass()
	b.setTag(ref, dB)
	for range 5 {
		b.advance(1200 * time.Millisecond)
		pass()
	}
	cur, _ := b.st.JobByID(nil, "default", "web")
	require.EqualValues(t, 0, cur.Version, "waits for approval")
	ws, _ := b.st.ImageWatchesByJob(nil, "default", "web")
	require.Equal(t, dB, ws[0].Held)
	require.Equal(t, WaitApproval, ws[0].HeldReason)
	c, _ := b.st.ImageCheck(nil, ref+"|")
	st := Status(cur, Records{Checks: map[string]*structs.ImageCheck{c.Key: c}, Watches: map[structs.ImageWatchID]*structs.ImageWatch{ws[0].ID(): ws[0]}}, b.Now())
	require.True(t, st[0].PendingApproval)
	require.Equal(t, ref+"@"+dB, st[0].Prepared)

	require.NoError(t, b.st.UpsertImageWatch(b.next(), &structs.ImageWatchUpdateRequest{Approvals: []structs.ImageApproval{{ID: ws[0].ID(), Digest: dB}}}))
	pass()
	cur, _ = b.st.JobByID(nil, "default", "web")
	require.EqualValues(t, 1, cur.Version, "approved: rolled")
	require.Equal(t, ref+"@"+dB, cur.TaskGroups[0].Tasks[0].Config["image"])

	b.setTag(ref, dC)
	for range 5 {
		b.advance(1200 * time.Millisecond)
		pass()
	}
	cur, _ = b.st.JobByID(nil, "default", "web")
	require.EqualValues(t, 1, cur.Version, "the next digest needs its own approval")
}
