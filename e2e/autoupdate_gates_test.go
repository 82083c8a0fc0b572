package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// autoJobHCLWith is autoJobHCL with auto_update = true replaced by lines
// (other auto_update settings, one per line).
func autoJobHCLWith(t testing.TB, name, image, interval, soak string, lines ...string) string {
	t.Helper()
	const on = "        auto_update          = true\n"
	hcl := autoJobHCL(name, image, interval, soak)
	require.Contains(t, hcl, on)
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("        " + l + "\n")
	}
	return strings.Replace(hcl, on, b.String(), 1)
}

// waitChecksAfter waits until the watcher has checked the job's tag n
// more times than in st (so that several passes have decided on what it
// saw) and returns the status then.
func waitChecksAfter(t testing.TB, c *api.Client, job string, st structs.ImageTaskStatus, n uint64) structs.ImageTaskStatus {
	t.Helper()
	var now structs.ImageTaskStatus
	require.Eventually(t, func() bool { now = imageStatus(t, c, job); return now.Checks >= st.Checks+n },
		30*time.Second, 100*time.Millisecond, "the watcher keeps checking %s", job)
	return now
}

// TestAutoUpdateNotifyRollsNothing: with auto_update = "notify" a moved
// tag is reported (job image-updates, the API) and never rolled: the
// node keeps answering the old version through many checks.
func TestAutoUpdateNotifyRollsNothing(t *testing.T) {
	dc := newDockerClusterN(t, 1, autoPortBase)
	stable := dc.reg.Ref("drover-e2e/auto", "stable")
	d1 := dc.pushTag(t, "1", "stable", false)
	dc.runAutoHCL(t, "auto", autoJobHCLWith(t, "auto", stable, "1s", "0s", `auto_update = "notify"`))
	dc.waitJobAnswers(t, "auto", "version 1", 1, 30*time.Second)

	d2 := dc.pushTag(t, "2", "stable", false)
	var st structs.ImageTaskStatus
	require.Eventually(t, func() bool { st = imageStatus(t, dc.api, "auto"); return st.Pending == d2 },
		10*time.Second, 100*time.Millisecond, "the watcher sees the moved tag")
	st = waitChecksAfter(t, dc.api, "auto", st, 4)
	require.Equal(t, d2, st.Pending)
	require.Equal(t, "notify", st.Waiting)
	v, image := jobVersion(t, dc.api, "auto")
	require.EqualValues(t, 0, v, "notify never rolls")
	require.Equal(t, stable+"@"+d1, image)
	dc.waitJobAnswers(t, "auto", "version 1", 1, 10*time.Second)

	code, out := drover(t, dc.srv.httpAddr(), "job", "image-updates", "auto")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "notify (reported, never rolled)")
	require.Contains(t, out, d2)
}

// TestAutoUpdateApprovalRollsOnlyAfterApprove: with auto_update_approval
// the moved tag waits, shown pending approval, through many checks; after
// `job image-updates -approve` the new version rolls through the update
// block and the node answers the new image.
func TestAutoUpdateApprovalRollsOnlyAfterApprove(t *testing.T) {
	dc := newDockerClusterN(t, 1, autoPortBase)
	stable := dc.reg.Ref("drover-e2e/auto", "stable")
	d1 := dc.pushTag(t, "1", "stable", false)
	dc.runAutoHCL(t, "auto", autoJobHCLWith(t, "auto", stable, "1s", "0s", "auto_update = true", "auto_update_approval = true"))
	dc.waitJobAnswers(t, "auto", "version 1", 1, 30*time.Second)

	d2 := dc.pushTag(t, "2", "stable", false)
	var st structs.ImageTaskStatus
	require.Eventually(t, func() bool { st = imageStatus(t, dc.api, "auto"); return st.Pending == d2 },
		10*time.Second, 100*time.Millisecond, "the watcher sees the moved tag")
	st = waitChecksAfter(t, dc.api, "auto", st, 4)
	require.True(t, st.PendingApproval)
	require.Equal(t, stable+"@"+d2, st.Prepared)
	v, image := jobVersion(t, dc.api, "auto")
	require.EqualValues(t, 0, v, "nothing rolls before the approval")
	require.Equal(t, stable+"@"+d1, image)
	code, out := drover(t, dc.srv.httpAddr(), "job", "image-updates", "auto")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "pending approval")

	code, out = drover(t, dc.srv.httpAddr(), "job", "image-updates", "-approve", "-digest", d2, "auto")
	require.Equal(t, 0, code, out)
	require.Eventually(t, func() bool { v, _ = jobVersion(t, dc.api, "auto"); return v == 1 },
		30*time.Second, 200*time.Millisecond, "the approved digest rolls")
	_, image = jobVersion(t, dc.api, "auto")
	require.Equal(t, stable+"@"+d2, image)
	waitJobDeployment(t, dc.api, "auto", 1, "successful")
	dc.waitJobAnswers(t, "auto", "version 2", 1, 30*time.Second)
}

// TestAutoUpdateApprovalSurvivesLeaderChange: three servers; a digest is
// approved while its soak still runs, then the leader is killed. The
// approval is in raft: the new leader's watcher rolls the digest when the
// soak ends, with no second approval.
func TestAutoUpdateApprovalSurvivesLeaderChange(t *testing.T) {
	const soak = 15 * time.Second
	leader, followers, c, stable, _ := autoLeaderChange(t, soak, map[string]any{"auto_update_approval": true})
	var v uint64
	var image string

	d2 := pushRandom(t, stable)
	var before structs.ImageTaskStatus
	require.Eventually(t, func() bool {
		before = imageStatus(t, c, "auto")
		return before.Pending == d2 && before.Waiting == "soak"
	},
		10*time.Second, 100*time.Millisecond, "the watcher sees the moved tag")
	require.Greater(t, before.SoakLeft, 8*time.Second)
	// Approved through a follower, while the soak runs.
	code, out := drover(t, followers[0].httpAddr(), "job", "image-updates", "-approve", "auto")
	require.Equal(t, 0, code, out)

	leader.kill()
	waitNewLeader(t, leader.rpcAddr(), followers...)
	after := imageStatus(t, c, "auto")
	require.Equal(t, d2, after.Approved, "the approval survived the leader change")
	require.Eventually(t, func() bool { v, _ = jobVersion(t, c, "auto"); return v == 1 },
		40*time.Second, 100*time.Millisecond, "the new leader rolls the approved digest")
	rolled := time.Now()
	_, image = jobVersion(t, c, "auto")
	require.Equal(t, stable+"@"+d2, image)
	require.GreaterOrEqual(t, rolled.Sub(before.PendingSince), soak, "not before the soak")
}
