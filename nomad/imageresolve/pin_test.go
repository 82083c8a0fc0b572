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
	pinned, err := PinJob(context.Background(), r, job)
	require.NoError(t, err)
	require.Equal(t, reg.Ref("app", "stable")+"@"+stable, image(pinned, 0))
	require.Equal(t, byDigest, image(pinned, 1), "an image given by digest is kept as written")
	require.Equal(t, reg.Ref("app", "stable")+"@"+stable, image(pinned, 2))
	require.Equal(t, reg.Ref("app", "stable"), image(job, 0), "the submitted job is not modified")
	require.Equal(t, 1, reg.ManifestHeads(reg.Ref("app", "stable")), "one HEAD per distinct reference")

	again, err := PinJob(context.Background(), r, pinned)
	require.NoError(t, err)
	require.Same(t, pinned, again, "a pinned job needs no resolution")
	require.False(t, pinned.SpecChanged(again))
}

func TestPinJob_OptOutAndErrors(t *testing.T) {
	reg := registry.Start(t, registry.Options{})
	r := New(Options{Timeout: 5 * time.Second})

	local := dockerJob(map[string]any{"image": "only-on-nodes:dev", "pin_digest": false})
	out, err := PinJob(context.Background(), r, local)
	require.NoError(t, err)
	require.Equal(t, "only-on-nodes:dev", image(out, 0))

	missing := dockerJob(map[string]any{"image": reg.Ref("app", "missing")})
	_, err = PinJob(context.Background(), r, missing)
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
		_, err := PinJob(context.Background(), r, dockerJob(tc.cfg))
		require.ErrorAs(t, err, &re, tc.want)
		require.Contains(t, re.Msg, `task "a": `+tc.want)
	}
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
