package agent

import (
	"context"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/wire"
)

// auto_update = "notify": the moved tag is reported (status, an
// ImageUpdate event, the pending metric) and never rolled.
func TestContractAutoUpdateNotify(t *testing.T) {
	ta, _, stable := autoUpdateAgent(t)
	c := ta.client
	d1 := pushRandom(t, stable)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := c.EventStream().Stream(ctx, map[api.Topic][]string{"ImageUpdate": {"web"}}, 0, nil)
	require.NoError(t, err)

	notify := map[string]any{"auto_update": "notify", "auto_update_interval": "10m"}
	st := registerWatched(t, c, stable, notify)
	require.Equal(t, "notify", st.Tasks[0].Mode)

	d2 := pushRandom(t, stable)
	st = checkNow(t, c)
	task := st.Tasks[0]
	require.Equal(t, d2, task.Pending)
	require.Equal(t, "notify", task.Waiting)
	require.Contains(t, task.WaitingFor, `auto_update = "notify"`)

	// The event names the held digest.
	deadline := time.After(20 * time.Second)
	for held := false; !held; {
		select {
		case ev := <-events:
			require.NoError(t, ev.Err)
			for _, e := range ev.Events {
				require.Equal(t, "ImageUpdate", string(e.Topic))
				w, _ := e.Payload["ImageWatch"].(map[string]any)
				held = held || (w["Held"] == d2 && w["HeldReason"] == "notify")
			}
		case <-deadline:
			t.Fatal("no ImageUpdate event naming the held digest")
		}
	}
	require.Contains(t, metricsText(t, ta), `drover_image_updates_pending{reason="notify"} 1`)

	job, _, err := c.Jobs().Info("web", nil)
	require.NoError(t, err)
	require.EqualValues(t, 0, *job.Version, "notify never rolls")
	require.Equal(t, stable+"@"+d1, taskImage(job))
	_, err = c.Raw().Write("/v1/job/web/image-updates/approve", nil, &st, nil)
	requireStatus(t, err, 400, "no new image digest pending approval")
}

// auto_update_approval: the moved tag waits, pending approval, until PUT
// .../approve; a guard digest that is not the pending one is refused.
func TestContractAutoUpdateApproval(t *testing.T) {
	ta, _, stable := autoUpdateAgent(t)
	c := ta.client
	d1 := pushRandom(t, stable)

	cfg := map[string]any{"auto_update": true, "auto_update_interval": "10m", "auto_update_approval": true}
	registerWatched(t, c, stable, cfg)

	d2 := pushRandom(t, stable)
	st := checkNow(t, c)
	task := st.Tasks[0]
	require.Equal(t, d2, task.Pending)
	require.Equal(t, "approval", task.Waiting)
	require.True(t, task.PendingApproval)
	require.Equal(t, stable+"@"+d2, task.Prepared)
	job, _, err := c.Jobs().Info("web", nil)
	require.NoError(t, err)
	require.EqualValues(t, 0, *job.Version, "nothing rolls before the approval")

	_, err = c.Raw().Write("/v1/job/web/image-updates/approve", &wire.ImageApproveRequest{Digest: d1}, &st, nil)
	requireStatus(t, err, 400, "is not pending approval")
	_, err = c.Raw().Write("/v1/job/nosuch/image-updates/approve", nil, &st, nil)
	requireStatus(t, err, 404, "job not found")

	_, err = c.Raw().Write("/v1/job/web/image-updates/approve", &wire.ImageApproveRequest{Digest: d2}, &st, nil)
	require.NoError(t, err)
	require.Equal(t, d2, st.Tasks[0].Approved)
	job = waitJobVersion(t, c, 1, "the approved digest rolls")
	require.Equal(t, stable+"@"+d2, taskImage(job))
}

// The new keys are refused at registration, naming the key.
func TestContractAutoUpdateGateRefusals(t *testing.T) {
	ta, _, stable := autoUpdateAgent(t)
	c := ta.client
	pushRandom(t, stable)
	for _, tc := range []struct {
		cfg  map[string]any
		want string
	}{
		{map[string]any{"auto_update": "sometimes"}, `auto_update must be true, false or "notify"`},
		{map[string]any{"auto_update": true, "auto_update_window": "Sat 2am"}, "auto_update_window"},
		{map[string]any{"auto_update": true, "auto_update_window": "Sat 02:00-04:00 Mars/Base"}, `unknown time zone`},
		{map[string]any{"auto_update": true, "auto_update_min_age": "old"}, "auto_update_min_age must be a duration"},
		{map[string]any{"auto_update": true, "auto_update_approval": "perhaps"}, "auto_update_approval must be a bool"},
		{map[string]any{"auto_update_approval": true}, "auto_update_approval is set but auto_update is not"},
	} {
		_, _, err := c.Jobs().Register(dockerJob("web", stable, tc.cfg), nil)
		requireStatus(t, err, 400, tc.want)
	}
	_, _, err := c.Jobs().Register(dockerJob("web", stable, map[string]any{"auto_update": "true",
		"auto_update_window": []any{"Sat 02:00-04:00 Europe/Berlin", "Sun 02:00-04:00 Europe/Berlin"}}), nil)
	require.NoError(t, err)
}

// pushCreated pushes a random image whose config says it was created at
// created, and returns its digest.
func pushCreated(t *testing.T, ref string, created time.Time) string {
	t.Helper()
	img, err := random.Image(64, 1)
	require.NoError(t, err)
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	cf.Created = v1.Time{Time: created}
	img, err = mutate.ConfigFile(img, cf)
	require.NoError(t, err)
	return pushImage(t, ref, img)
}

// auto_update_min_age: the server reads the image config's created time
// from the registry; a young image waits, an old one rolls.
func TestContractAutoUpdateMinAge(t *testing.T) {
	ta, _, stable := autoUpdateAgent(t)
	c := ta.client
	pushCreated(t, stable, time.Now().Add(-48*time.Hour))

	cfg := map[string]any{"auto_update": true, "auto_update_interval": "10m", "auto_update_min_age": "1h"}
	registerWatched(t, c, stable, cfg)

	youngAt := time.Now().Add(-10 * time.Minute).Truncate(time.Second)
	young := pushCreated(t, stable, youngAt)
	task := checkNow(t, c).Tasks[0]
	require.Equal(t, young, task.Pending)
	require.True(t, youngAt.Equal(task.ImageCreated), "created %s, want %s", task.ImageCreated, youngAt)
	require.Equal(t, "min_age", task.Waiting)
	require.True(t, youngAt.Add(time.Hour).Equal(task.WaitingUntil))
	job, _, err := c.Jobs().Info("web", nil)
	require.NoError(t, err)
	require.EqualValues(t, 0, *job.Version, "a young image waits")

	old := pushCreated(t, stable, time.Now().Add(-3*time.Hour))
	checkNow(t, c)
	job = waitJobVersion(t, c, 1, "an old enough image rolls")
	require.Equal(t, stable+"@"+old, taskImage(job))
}
