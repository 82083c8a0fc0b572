package e2e

import (
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/testutil/registry"
)

// retag points tag of the auto-update fixture's repository at digest
// again, as a registry operator moving a tag back does.
func (dc *dockerCluster) retag(t testing.TB, tag, digest string) {
	t.Helper()
	src, err := name.ParseReference(dc.reg.Addr()+"/drover-e2e/auto@"+digest, name.Insecure)
	require.NoError(t, err)
	desc, err := remote.Get(src)
	require.NoError(t, err)
	dst, err := name.NewTag(dc.reg.Ref("drover-e2e/auto", tag), name.Insecure)
	require.NoError(t, err)
	require.NoError(t, remote.Tag(dst, desc))
}

// TestAutoUpdateNewJobsStayOnTheDigestTheyWerePinnedTo: job auto on
// app:stable; the tag moves to a broken D3, its deployment fails and
// auto-reverts to D2; the tag is moved back to D2. Two new jobs on
// app:stable are pinned to D2 at registration and are never rolled to D3:
// the watcher's record of D3 is older than their pin, and D3 is bad for
// the image, not only for job auto. The operator then clears D3.
func TestAutoUpdateNewJobsStayOnTheDigestTheyWerePinnedTo(t *testing.T) {
	dc := newDockerClusterN(t, 1, autoPortBase)
	stable := dc.reg.Ref("drover-e2e/auto", "stable")
	d2 := dc.pushTag(t, "2", "stable", false)
	dc.runAuto(t, "auto", stable, "2s", "10s")
	dc.waitJobAnswers(t, "auto", "version 2", 1, 30*time.Second)
	waitJobDeployment(t, dc.api, "auto", 0, "successful")

	d3 := dc.pushTag(t, "3", "stable", true)
	waitJobDeployment(t, dc.api, "auto", 1, "failed")
	waitJobDeployment(t, dc.api, "auto", 2, "successful")
	v, image := jobVersion(t, dc.api, "auto")
	require.EqualValues(t, 2, v)
	require.Equal(t, stable+"@"+d2, image, "auto-reverted to D2")
	require.Eventually(t, func() bool { return len(imageStatus(t, dc.api, "auto").Bad) == 1 },
		10*time.Second, 100*time.Millisecond, "D3 is marked bad")
	require.Equal(t, []string{d3}, imageStatus(t, dc.api, "auto").Bad)

	// The tag moves back to D2 and, before the watcher's next check, two
	// new jobs are registered.
	dc.retag(t, "stable", d2)
	registered := time.Now()
	for _, name := range []string{"fresh-1", "fresh-2"} {
		dc.runAuto(t, name, stable, "2s", "10s", "-detach")
	}
	for _, name := range []string{"fresh-1", "fresh-2"} {
		v, image := jobVersion(t, dc.api, name)
		require.EqualValues(t, 0, v)
		require.Equal(t, stable+"@"+d2, image, "%s pinned to D2 at registration", name)
	}

	// The watcher checks the tag for longer than the soak after the
	// registrations: neither job is rolled, and both show D3 as bad.
	require.Eventually(t, func() bool {
		return imageStatus(t, dc.api, "fresh-1").LastCheck.After(registered.Add(12 * time.Second))
	}, 30*time.Second, 200*time.Millisecond, "the watcher keeps checking")
	for _, name := range []string{"fresh-1", "fresh-2"} {
		v, image := jobVersion(t, dc.api, name)
		require.EqualValues(t, 0, v, "%s is not rolled", name)
		require.Equal(t, stable+"@"+d2, image)
		st := imageStatus(t, dc.api, name)
		require.Equal(t, []string{d3}, st.Bad, "%s shows D3 as bad", name)
		require.Equal(t, d2, st.TagDigest)
		require.Empty(t, st.Pending)
		d := waitJobDeployment(t, dc.api, name, 0, "successful")
		require.Equal(t, 1, d.TaskGroups["web"].HealthyAllocs, "%s's first deployment was not cancelled", name)
	}
	dc.waitJobAnswers(t, "fresh-1", "version 2", 1, 30*time.Second)

	// The operator clears D3, from any job on the image.
	code, out := drover(t, dc.srv.httpAddr(), "job", "image-updates", "-clear-bad", d3, "fresh-2")
	require.Equal(t, 0, code, out)
	require.NotContains(t, out, "Bad Digests")
	require.Empty(t, imageStatus(t, dc.api, "auto").Bad)
	code, out = drover(t, dc.srv.httpAddr(), "job", "image-updates", "-clear-bad", d3, "fresh-2")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "is not a bad digest of any image of job")
}

// TestImagePinningOffNodesPullTheTag: a server with image_pinning = "off"
// stores the tag, as Nomad does, and the node pulls and runs it; an
// auto_update job is refused.
func TestImagePinningOffNodesPullTheTag(t *testing.T) {
	requireDocker(t)
	dc := &dockerCluster{reg: registry.Start(t, registry.Options{}), seed: time.Now().UnixNano(), digests: map[string]string{},
		portBase: autoPortBase}
	dc.srv = newServer(t, serverSpec{name: "server", bootstrapExpect: 1, extra: `image_pinning = "off"`})
	waitLeader(t, dc.srv)
	dc.api = dc.srv.client(t)
	dc.addClient(t)
	waitReadyNodes(t, dc.api, 1)
	t.Cleanup(func() { removeImages(t, dc.pushed) })
	stable := dc.reg.Ref("drover-e2e/auto", "stable")
	dc.pushTag(t, "1", "stable", false)

	dc.jobFile = writeJobFile(t, dockerJobHCL)
	t.Cleanup(func() {
		var allocIDs []string
		if stubs, _, err := dc.api.Jobs().Allocations("web", true, nil); err == nil {
			for _, s := range stubs {
				allocIDs = append(allocIDs, s.ID)
			}
		}
		_, _ = drover(t, dc.srv.httpAddr(), "job", "stop", "-purge", "-yes", "web")
		removeAllocContainers(t, allocIDs)
	})
	code, out := dc.run(t, "-var", "image="+stable)
	require.Equal(t, 0, code, out)
	require.NotContains(t, out, "Job Warnings", "the operator chose it: no warning")
	_, image := jobVersion(t, dc.api, "web")
	require.Equal(t, stable, image, "stored by tag")
	dc.waitJobAnswers(t, "web", "version 1", 1, 30*time.Second)
	code, out = drover(t, dc.srv.httpAddr(), "job", "image-updates", "web")
	require.Equal(t, 0, code, out)
	require.Regexp(t, `Not Pinned\s+= the servers run with image_pinning = "off"`, out)

	code, out = drover(t, dc.srv.httpAddr(), "job", "run", writeJobFile(t, autoJobHCL("auto", stable, "1s", "0s")))
	require.NotEqual(t, 0, code, out)
	require.Contains(t, out, `auto_update = true needs image pinning, and the servers run with image_pinning = "off"`)
}

// TestJobRunWarnsOfAnUnpinnedImage: `drover job run` of an image whose
// registry the servers cannot reach registers the job and prints the
// server's warning.
func TestJobRunWarnsOfAnUnpinnedImage(t *testing.T) {
	srv := newServer(t, serverSpec{name: "server", bootstrapExpect: 1})
	waitLeader(t, srv)
	file := writeJobFile(t, autoJobHCL("unpinned", "127.0.0.1:1/app:v1", "1m", "0s"))
	t.Cleanup(func() { _, _ = drover(t, srv.httpAddr(), "job", "stop", "-purge", "-yes", "unpinned") })
	code, out := drover(t, srv.httpAddr(), "job", "run", "-detach", file)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Job Warnings:")
	require.Contains(t, out, `group "web": task "server": image "127.0.0.1:1/app:v1" was not pinned to a digest: its registry could not be reached (`)
	_, image := jobVersion(t, srv.client(t), "unpinned")
	require.Equal(t, "127.0.0.1:1/app:v1", image)
}
