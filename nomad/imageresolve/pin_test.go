package imageresolve

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/testutil/registry"
)

func dockerJob(images ...map[string]any) *structs.Job {
	tg := &structs.TaskGroup{Name: "web"}
	for i, cfg := range images {
		tg.Tasks = append(tg.Tasks, &structs.Task{Name: []string{"a", "b", "c"}[i], Driver: "docker", Config: cfg})
	}
	tg.Tasks = append(tg.Tasks, &structs.Task{Name: "raw", Driver: "raw_exec", Config: map[string]any{"command": "/bin/true"}})
	return &structs.Job{ID: "web", Namespace: "default", TaskGroups: []*structs.TaskGroup{tg}}
}

func image(j *structs.Job, i int) string { return j.TaskGroups[0].Tasks[i].Config["image"].(string) }

func TestPinJob(t *testing.T) {
	reg := registry.Start(t, registry.Options{})
	stable := push(t, reg.Ref("app", "stable"))
	other := push(t, reg.Ref("other", "v1"))
	reg.ResetCounters()
	r := New(Options{})

	byDigest := reg.Ref("app", "old") + "@" + other
	job := dockerJob(
		map[string]any{"image": reg.Ref("app", "stable")},
		map[string]any{"image": byDigest},
		map[string]any{"image": reg.Ref("app", "stable"), "auto_update": true},
	)
	res, err := PinJob(context.Background(), r, job, PinOptions{})
	require.NoError(t, err)
	pinned := res.Job
	require.Empty(t, res.Unpinned)
	require.Len(t, res.Resolutions, 1)
	require.Equal(t, stable, res.Resolutions[0].Digest)
	require.True(t, res.Resolutions[0].AutoUpdate, "a task of the reference has auto_update")
	require.Equal(t, reg.Ref("app", "stable")+"@"+stable, image(pinned, 0))
	require.Equal(t, byDigest, image(pinned, 1), "an image given by digest is kept as written")
	require.Equal(t, reg.Ref("app", "stable")+"@"+stable, image(pinned, 2))
	require.Equal(t, reg.Ref("app", "stable"), image(job, 0), "the submitted job is not modified")
	require.Equal(t, 1, reg.ManifestHeads(reg.Ref("app", "stable")), "one HEAD per distinct reference")

	again, err := PinJob(context.Background(), r, pinned, PinOptions{})
	require.NoError(t, err)
	require.Same(t, pinned, again.Job, "a pinned job needs no resolution")
	require.Empty(t, again.Resolutions)
	require.False(t, pinned.SpecChanged(again.Job))
}

func TestPinJob_OptOutAndErrors(t *testing.T) {
	reg := registry.Start(t, registry.Options{})
	r := New(Options{Timeout: 5 * time.Second})

	local := dockerJob(map[string]any{"image": "only-on-nodes:dev", "pin_digest": false})
	out, err := PinJob(context.Background(), r, local, PinOptions{})
	require.NoError(t, err)
	require.Equal(t, "only-on-nodes:dev", image(out.Job, 0))

	missing := dockerJob(map[string]any{"image": reg.Ref("app", "missing")})
	_, err = PinJob(context.Background(), r, missing, PinOptions{})
	var re *structs.RequestError
	require.ErrorAs(t, err, &re)
	require.True(t, errors.Is(err, structs.ErrBadRequest))
	require.Contains(t, re.Msg, `group "web": task "a": image "`+reg.Ref("app", "missing")+`" could not be resolved`)
	require.Contains(t, re.Msg, "404", "the registry's answer")

	for _, tc := range []struct {
		cfg  map[string]any
		want string
	}{
		{map[string]any{"image": "a:1", "pin_digest": "maybe"}, "pin_digest must be a bool"},
		{map[string]any{"image": "a:1", "auto_update": true, "pin_digest": false}, "auto_update requires pin_digest"},
		{map[string]any{"image": "a:1", "auto_update_interval": "10ms"}, "auto_update_interval must be at least 1s"},
		{map[string]any{"image": "a:1", "auto_update_soak": "soon"}, "auto_update_soak must be a duration"},
		{map[string]any{"image": "a@sha256:" + sha64("c"), "auto_update": true}, "auto_update needs an image with a tag"},
	} {
		_, err := PinJob(context.Background(), r, dockerJob(tc.cfg), PinOptions{})
		require.ErrorAs(t, err, &re, tc.want)
		require.Contains(t, re.Msg, `task "a": `+tc.want)
	}
}

// A registry that cannot be reached does not block the registration: the
// task keeps its tag, with a warning naming the image and why.
func TestPinJob_UnreachableRegistryIsStoredUnpinned(t *testing.T) {
	reg := registry.Start(t, registry.Options{})
	good := push(t, reg.Ref("app", "v1"))
	r := New(Options{Timeout: 5 * time.Second})
	job := dockerJob(
		map[string]any{"image": "127.0.0.1:1/app:v1"},
		map[string]any{"image": "127.0.0.1:1/app:v1", "auto_update": true},
		map[string]any{"image": reg.Ref("app", "v1")},
	)
	res, err := PinJob(context.Background(), r, job, PinOptions{})
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:1/app:v1", image(res.Job, 0), "stored unpinned")
	require.Equal(t, "127.0.0.1:1/app:v1", image(res.Job, 1))
	require.Equal(t, reg.Ref("app", "v1")+"@"+good, image(res.Job, 2), "the reachable registry is pinned")
	require.Len(t, res.Unpinned, 2)
	w := res.Warnings()
	require.Contains(t, w[0], `group "web": task "a": image "127.0.0.1:1/app:v1" was not pinned to a digest: its registry could not be reached (`)
	require.Contains(t, w[0], "connection refused")
	require.Contains(t, w[0], "the nodes pull it")
	require.NotContains(t, w[0], "image watcher")
	require.Contains(t, w[1], `task "b"`)
	require.Contains(t, w[1], "the image watcher takes its next good check")
	require.Len(t, res.Resolutions, 2, "both answers are returned, to be recorded")

	// With a current version that pins the same tag, the pin is kept: an
	// unchanged jobspec re-run while the registry is down is no change.
	current := dockerJob(
		map[string]any{"image": "127.0.0.1:1/app:v1@sha256:" + sha64("d")},
		map[string]any{"image": "127.0.0.1:1/app:v0@sha256:" + sha64("e"), "auto_update": true},
	)
	res, err = PinJob(context.Background(), r, job, PinOptions{Current: current})
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:1/app:v1@sha256:"+sha64("d"), image(res.Job, 0), "the current pin of the same tag is kept")
	require.Equal(t, "127.0.0.1:1/app:v1", image(res.Job, 1), "another tag's pin is not")
	require.Equal(t, "sha256:"+sha64("d"), res.Unpinned[0].Kept)
	w = res.Warnings()
	require.Contains(t, w[0], `group "web": task "a": image "127.0.0.1:1/app:v1" could not be resolved: its registry could not be reached (`)
	require.Contains(t, w[0], "the current version's pin sha256:"+sha64("d")+" is kept")
	require.Contains(t, w[1], "was not pinned to a digest")
}

// image_pinning = "off": nothing is resolved (no registry is asked), and
// auto_update, which needs pinning, is refused.
func TestPinJob_PinningOff(t *testing.T) {
	reg := registry.Start(t, registry.Options{})
	push(t, reg.Ref("app", "v1"))
	reg.ResetCounters()
	job := dockerJob(map[string]any{"image": reg.Ref("app", "v1")})
	res, err := PinJob(context.Background(), New(Options{}), job, PinOptions{Off: true})
	require.NoError(t, err)
	require.Same(t, job, res.Job)
	require.Empty(t, res.Unpinned, "no warning: the operator chose it")
	require.Zero(t, reg.ManifestHeads(reg.Ref("app", "v1")), "no registry asked")

	_, err = PinJob(context.Background(), New(Options{}), dockerJob(map[string]any{"image": reg.Ref("app", "v1"), "auto_update": true}), PinOptions{Off: true})
	var re *structs.RequestError
	require.ErrorAs(t, err, &re)
	require.Contains(t, re.Msg, `group "web": task "a": auto_update = true needs image pinning, and the servers run with image_pinning = "off"`)
}

func sha64(c string) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c[0]
	}
	return string(b)
}

func TestParseSettings(t *testing.T) {
	s, err := ParseSettings(map[string]any{"image": "x"})
	require.NoError(t, err)
	require.Equal(t, Settings{PinDigest: true, Interval: DefaultAutoUpdateInterval}, s)

	s, err = ParseSettings(map[string]any{"auto_update": true, "auto_update_interval": "1s", "auto_update_soak": "3s",
		"auth": []any{map[string]any{"username": "u", "password": "p"}}})
	require.NoError(t, err)
	require.True(t, s.AutoUpdate)
	require.Equal(t, time.Second, s.Interval)
	require.Equal(t, 3*time.Second, s.Soak)
	require.Equal(t, "u", s.Auth.Username)
	require.NotEmpty(t, s.Auth.Key())
	require.NotContains(t, s.Auth.Key(), "p")

	s, err = ParseSettings(map[string]any{"auto_update_interval": int64(2 * time.Second)})
	require.NoError(t, err, "a number of nanoseconds, as a raft round trip gives")
	require.Equal(t, 2*time.Second, s.Interval)
}
