package agent

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/uuid"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/command/agent/config"
	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/testutil/registry"
	"github.com/drover-project/drover/wire"
)

// registerDockerNode registers a ready node with the docker driver, so
// that Docker jobs are placed (and get deployments).
func (ta *testAgent) registerDockerNode(t *testing.T, name string) {
	t.Helper()
	node := &api.Node{
		ID: uuid.NewString(), Name: name, Datacenter: "dc1", NodePool: "default", Status: "ready",
		SchedulingEligibility: "eligible",
		Attributes:            map[string]string{"kernel.name": "linux", "os.name": "debian"},
		NodeResources: &api.NodeResources{
			Cpu:    api.NodeCpuResources{CpuShares: 4000, TotalCpuCores: 4},
			Memory: api.NodeMemoryResources{MemoryMB: 8192},
			Disk:   api.NodeDiskResources{DiskMB: 100000},
		},
		ReservedResources: &api.NodeReservedResources{},
		Drivers:           map[string]*api.DriverInfo{"docker": {Detected: true, Healthy: true}},
	}
	var out wire.NodeRegisterResponse
	_, err := ta.client.Raw().Write("/v1/internal/node/register", &wire.NodeRegisterRequest{Node: node, SecretID: uuid.NewString()}, &out, nil)
	require.NoError(t, err)
}

// pushImage writes img to ref (moving the tag to it) and returns its digest.
func pushImage(t *testing.T, ref string, img v1.Image) string {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	require.NoError(t, err)
	require.NoError(t, remote.Write(r, img))
	d, err := img.Digest()
	require.NoError(t, err)
	return d.String()
}

// mustImage fetches the image at ref.
func mustImage(t *testing.T, ref string) v1.Image {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	require.NoError(t, err)
	img, err := remote.Image(r)
	require.NoError(t, err)
	return img
}

func jobImageStatus(t *testing.T, c *api.Client, job string) structs.ImageTaskStatus {
	t.Helper()
	var st wire.ImageUpdates
	_, err := c.Raw().Query("/v1/job/"+job+"/image-updates", &st, nil)
	require.NoError(t, err)
	require.Len(t, st.Tasks, 1)
	return st.Tasks[0]
}

func jobAt(t *testing.T, c *api.Client, job string) (uint64, string) {
	t.Helper()
	j, _, err := c.Jobs().Info(job, nil)
	require.NoError(t, err)
	return *j.Version, taskImage(j)
}

func metricsText(t *testing.T, ta *testAgent) string {
	t.Helper()
	resp, err := http.Get("http://" + ta.HTTPAddr() + "/v1/metrics?format=prometheus")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}

// The reported scenario: job auto on app:stable; the tag moves to D3, its
// deployment fails and reverts to D2; the tag moves back to D2. Two new
// jobs on app:stable are pinned to D2 at registration and must stay there:
// the watcher's record (D3, from before) is older than their pin, and D3
// is bad for the image reference, not only for job auto.
func TestContractAutoUpdate_NewJobsAreNotRolledToADigestTheTagLeft(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	ta.registerDockerNode(t, "node-1")
	reg := registry.Start(t, registry.Options{})
	stable := reg.Ref("app", "stable")
	img2, err := random.Image(64, 1)
	require.NoError(t, err)
	d2 := pushImage(t, stable, img2)
	barrierRef := reg.Ref("barrier", "v1")
	pushRandom(t, barrierRef)

	// Only "check now" (and each task's first check) look at the tags.
	auto := map[string]any{"auto_update": true, "auto_update_interval": "10m", "auto_update_soak": "0s"}
	registerAndWait(t, c, dockerJob("auto", stable, auto))
	registerAndWait(t, c, dockerJob("barrier", barrierRef, auto))
	_, _, err = c.Jobs().Stable("auto", 0, true, nil)
	require.NoError(t, err)

	// The tag moves to D3: the watcher rolls auto to it; that deployment
	// fails and reverts auto to D2.
	d3 := pushRandom(t, stable)
	var st wire.ImageUpdates
	_, err = c.Raw().Write("/v1/job/auto/image-updates/check", nil, &st, nil)
	require.NoError(t, err)
	require.Equal(t, d3, st.Tasks[0].TagDigest)
	var dep *api.Deployment
	require.Eventually(t, func() bool {
		ds, _, err := c.Jobs().Deployments("auto", true, nil)
		require.NoError(t, err)
		for _, d := range ds {
			if d.JobVersion == 1 {
				dep = d
				return true
			}
		}
		return false
	}, 10*time.Second, 20*time.Millisecond, "the watcher rolls auto to D3")
	_, image := jobAt(t, c, "auto")
	require.Equal(t, stable+"@"+d3, image)
	failed, _, err := c.Deployments().Fail(dep.ID, nil)
	require.NoError(t, err)
	require.NotNil(t, failed.RevertedJobVersion)
	require.Eventually(t, func() bool { return len(jobImageStatus(t, c, "auto").Bad) == 1 },
		10*time.Second, 20*time.Millisecond, "D3 is marked bad")
	require.Equal(t, []string{d3}, jobImageStatus(t, c, "auto").Bad)
	v, image := jobAt(t, c, "auto")
	require.EqualValues(t, 2, v)
	require.Equal(t, stable+"@"+d2, image, "reverted to D2")

	// The tag moves back to D2 (no check), and two new jobs come.
	require.Equal(t, d2, pushImage(t, stable, img2))
	for _, id := range []string{"fresh-1", "fresh-2"} {
		_, _, err = c.Jobs().Register(dockerJob(id, stable, auto), nil)
		require.NoError(t, err)
		v, image := jobAt(t, c, id)
		require.EqualValues(t, 0, v)
		require.Equal(t, stable+"@"+d2, image, "pinned to D2 at registration")
	}
	// A watcher pass that starts after both registrations (a "check now"
	// of another image returns when it is over) rolls nothing.
	_, err = c.Raw().Write("/v1/job/barrier/image-updates/check", nil, &st, nil)
	require.NoError(t, err)
	for _, id := range []string{"fresh-1", "fresh-2"} {
		v, image := jobAt(t, c, id)
		require.EqualValues(t, 0, v, "%s is not rolled", id)
		require.Equal(t, stable+"@"+d2, image)
		ts := jobImageStatus(t, c, id)
		require.Equal(t, []string{d3}, ts.Bad, "D3 is bad for every job on the image")
		require.Equal(t, d2, ts.TagDigest, "the registration's resolution is recorded as a check")
		require.Empty(t, ts.Pending)
	}

	// A registration that pins the bad digest says so (it runs: the
	// operator asked for this tag now).
	pushImage(t, stable, mustImage(t, stable+"@"+d3))
	resp, _, err := c.Jobs().Register(dockerJob("pinned-bad", stable, nil), nil)
	require.NoError(t, err)
	require.Contains(t, resp.Warnings, `image "`+stable+`" is pinned to `+d3+`, which failed a deployment of job "auto" (version 1)`)
	require.Equal(t, d2, pushImage(t, stable, img2))

	// The operator clears D3: it is bad for no job any more.
	_, err = c.Raw().Write("/v1/job/fresh-1/image-updates/clear-bad", map[string]string{"Digest": d3}, &st, nil)
	require.NoError(t, err)
	require.Empty(t, st.Tasks[0].Bad)
	require.Empty(t, jobImageStatus(t, c, "auto").Bad)
	_, err = c.Raw().Write("/v1/job/fresh-1/image-updates/clear-bad", map[string]string{"Digest": d3}, &st, nil)
	requireStatus(t, err, 400, `digest "`+d3+`" is not a bad digest of any image of job "fresh-1"`)
	_, err = c.Raw().Write("/v1/job/fresh-1/image-updates/clear-bad", map[string]string{}, &st, nil)
	requireStatus(t, err, 400, "Digest: the bad digest to clear is required")
	_, err = c.Raw().Write("/v1/job/nosuch/image-updates/clear-bad", map[string]string{"Digest": d3}, &st, nil)
	requireStatus(t, err, 404, "job not found")
}

// A registry the servers cannot reach does not block a registration: the
// version stores the tag, the answer's Warnings say which image and why,
// job image-updates shows it unpinned, a metric counts it; a plan says the
// same. An unknown tag still refuses (TestContractPinning).
func TestContractPinning_UnreachableRegistryRegistersUnpinned(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	const image = "127.0.0.1:1/app:v1"

	plan, _, err := c.Jobs().Plan(dockerJob("web", image, nil), true, nil)
	require.NoError(t, err)
	require.Contains(t, plan.Warnings, `task "server": image "`+image+`" was not pinned to a digest: its registry could not be reached (`)

	resp, _, err := c.Jobs().Register(dockerJob("web", image, nil), nil)
	require.NoError(t, err)
	require.NotEmpty(t, resp.EvalID)
	require.Contains(t, resp.Warnings, `group "web": task "server": image "`+image+`" was not pinned to a digest: its registry could not be reached (`)
	require.Contains(t, resp.Warnings, "connection refused")
	require.Contains(t, resp.Warnings, "this version stores the tag and the nodes pull it")
	v, stored := jobAt(t, c, "web")
	require.EqualValues(t, 0, v)
	require.Equal(t, image, stored, "stored unpinned")
	ts := jobImageStatus(t, c, "web")
	require.Empty(t, ts.Pinned)
	require.Equal(t, "the tag was not resolved when this version was registered (its registry could not be reached, or image_pinning was off)", ts.Unpinned)
	require.Contains(t, metricsText(t, ta), `drover_image_unresolved_total{registry="127.0.0.1:1"} 1`)

	// With auto_update, the registration's failed answer is recorded as a
	// check of the tag, and the warning says what the watcher will do.
	resp, _, err = c.Jobs().Register(dockerJob("auto", image, map[string]any{"auto_update": true, "auto_update_interval": "10m"}), nil)
	require.NoError(t, err)
	require.Contains(t, resp.Warnings, "the image watcher takes its next good check as the digest the nodes run")
	require.Eventually(t, func() bool { return jobImageStatus(t, c, "auto").LastError != "" },
		10*time.Second, 20*time.Millisecond, "the failed check is recorded")
	_, stored = jobAt(t, c, "auto")
	require.Equal(t, image, stored)
	require.Contains(t, metricsText(t, ta), `drover_image_unresolved_total{registry="127.0.0.1:1"} 2`)

	// A registry that fails (500) while a pinned job is re-run: the
	// current pin is kept, so an unchanged jobspec is no change, and a
	// changed one keeps running the same bytes.
	reg := registry.Start(t, registry.Options{})
	stable := reg.Ref("app", "stable")
	d1 := pushRandom(t, stable)
	registerAndWait(t, c, dockerJob("pinned", stable, nil))
	reg.FailManifests(true)
	plan, _, err = c.Jobs().Plan(dockerJob("pinned", stable, nil), true, nil)
	require.NoError(t, err)
	require.Equal(t, "None", plan.Diff.Type)
	require.Contains(t, plan.Warnings, "the current version's pin "+d1+" is kept")
	resp, _, err = c.Jobs().Register(dockerJob("pinned", stable, nil), nil)
	require.NoError(t, err)
	require.Contains(t, resp.Warnings, `image "`+stable+`" could not be resolved: its registry could not be reached (`)
	require.Contains(t, resp.Warnings, "500")
	v, stored = jobAt(t, c, "pinned")
	require.EqualValues(t, 0, v, "no change")
	require.Equal(t, stable+"@"+d1, stored)
	changed := dockerJob("pinned", stable, nil)
	changed.Meta = map[string]string{"fix": "1"}
	_, _, err = c.Jobs().Register(changed, nil)
	require.NoError(t, err)
	v, stored = jobAt(t, c, "pinned")
	require.EqualValues(t, 1, v)
	require.Equal(t, stable+"@"+d1, stored, "the pin is kept in the new version")
	require.Contains(t, metricsText(t, ta), `drover_image_unresolved_total{registry="`+reg.Addr()+`"} 2`)
}

// image_pinning = "off": no registry is asked, images are stored by tag
// without a warning, and auto_update, which needs pinning, is refused.
func TestContractPinning_Off(t *testing.T) {
	ta := newTestAgentWith(t, func(cfg *config.Config) { cfg.Server.ImagePinning = config.ImagePinningOff })
	c := ta.client
	reg := registry.Start(t, registry.Options{})
	stable := reg.Ref("app", "stable")
	pushRandom(t, stable)
	reg.ResetCounters()

	resp, _, err := c.Jobs().Register(dockerJob("web", stable, nil), nil)
	require.NoError(t, err)
	require.Empty(t, resp.Warnings)
	_, stored := jobAt(t, c, "web")
	require.Equal(t, stable, stored)
	plan, _, err := c.Jobs().Plan(dockerJob("web", stable, nil), true, nil)
	require.NoError(t, err)
	require.Equal(t, "None", plan.Diff.Type, "the plan resolves nothing either")
	require.Zero(t, reg.ManifestHeads(stable), "no registry asked")
	require.Equal(t, `the servers run with image_pinning = "off"`, jobImageStatus(t, c, "web").Unpinned)

	_, _, err = c.Jobs().Register(dockerJob("auto", stable, map[string]any{"auto_update": true}), nil)
	requireStatus(t, err, 400, `task "server": auto_update = true needs image pinning, and the servers run with image_pinning = "off"`)
	_, err = c.Raw().Write("/v1/job/web/image-updates/check", nil, nil, nil)
	requireStatus(t, err, 400, "image_pinning")
	require.False(t, strings.Contains(metricsText(t, ta), "drover_image_unresolved_total{"), "not counted: nothing failed")
}

// An auto-updated task registered while its registry failed is stored
// unpinned; the watcher's first good check is taken as what the nodes
// pulled (no new version), and the tag's next move rolls a pinned version.
func TestContractAutoUpdate_UnpinnedTaskIsPinnedWhenTheTagMoves(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client
	reg := registry.Start(t, registry.Options{})
	stable := reg.Ref("app", "stable")
	d1 := pushRandom(t, stable)
	reg.FailManifests(true)
	auto := map[string]any{"auto_update": true, "auto_update_interval": "10m", "auto_update_soak": "0s"}
	resp, _, err := c.Jobs().Register(dockerJob("auto", stable, auto), nil)
	require.NoError(t, err)
	require.Contains(t, resp.Warnings, "was not pinned to a digest")
	_, stored := jobAt(t, c, "auto")
	require.Equal(t, stable, stored)

	reg.FailManifests(false)
	var st wire.ImageUpdates
	_, err = c.Raw().Write("/v1/job/auto/image-updates/check", nil, &st, nil)
	require.NoError(t, err)
	require.Equal(t, d1, st.Tasks[0].TagDigest)
	require.Eventually(t, func() bool { return jobImageStatus(t, c, "auto").Assumed == d1 },
		10*time.Second, 20*time.Millisecond, "the first good check is taken as what the nodes run")
	ts := jobImageStatus(t, c, "auto")
	require.Empty(t, ts.Pending)
	require.NotEmpty(t, ts.Unpinned)
	v, _ := jobAt(t, c, "auto")
	require.EqualValues(t, 0, v, "no new version for the same digest")

	d2 := pushRandom(t, stable)
	_, err = c.Raw().Write("/v1/job/auto/image-updates/check", nil, &st, nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool { v, _ := jobAt(t, c, "auto"); return v == 1 },
		10*time.Second, 20*time.Millisecond, "the tag's move rolls a pinned version")
	_, stored = jobAt(t, c, "auto")
	require.Equal(t, stable+"@"+d2, stored)
	versions, _, _, err := c.Jobs().Versions("auto", false, nil)
	require.NoError(t, err)
	require.Contains(t, versions[0].VersionTag.Description, stable+" moved from (unpinned) to "+d2)
}

// Clearing a bad digest is a write: submit-job, like "check now".
func TestContractACL_ClearBadNeedsSubmitJob(t *testing.T) {
	ta := newACLTestAgent(t)
	_, _, err := ta.client.Jobs().Register(dockerJob("web", "only-on-nodes:dev", map[string]any{"pin_digest": false}), nil)
	require.NoError(t, err)
	body := map[string]string{"Digest": "sha256:" + strings.Repeat("a", 64)}
	read := ta.clientWith(t, ta.tokenFor(t, "read", `namespace "default" { policy = "read" }`).SecretID)
	_, err = read.Raw().Write("/v1/job/web/image-updates/clear-bad", body, nil, nil)
	requireStatus(t, err, http.StatusForbidden, "Permission denied")
	write := ta.clientWith(t, ta.tokenFor(t, "write", `namespace "default" { capabilities = ["read-job", "submit-job"] }`).SecretID)
	_, err = write.Raw().Write("/v1/job/web/image-updates/clear-bad", body, nil, nil)
	requireStatus(t, err, http.StatusBadRequest, "is not a bad digest of any image of job")
}
