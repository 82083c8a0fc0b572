package docker

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/registry"
	"github.com/docker/go-connections/nat"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/drivers"
)

func TestValidateTaskConfig(t *testing.T) {
	d := New(nil)
	good := map[string]any{
		"image":                 "127.0.0.1:5000/web@sha256:" + sha("a"),
		"command":               "/server",
		"args":                  []any{"-v"},
		"entrypoint":            []string{"/bin/sh", "-c"},
		"ports":                 []any{"http"},
		"labels":                []any{map[string]any{"team": "web"}},
		"volumes":               []any{"data:/data", "local/conf:/etc/conf:ro"},
		"mount":                 []any{map[string]any{"type": "tmpfs", "target": "/tmp"}},
		"network_mode":          "bridge",
		"force_pull":            true,
		"auth":                  []any{map[string]any{"username": "u", "password": "p"}},
		"image_pull_timeout":    "10m",
		"pull_activity_timeout": "30s",
		"prefetch":              false,
		"prefetch_parallel":     2,
		"pin_digest":            false,
		"auto_update":           true,
		"auto_update_interval":  "1s",
		"auto_update_soak":      "0s",
		"work_dir":              "/srv",
	}
	require.NoError(t, d.ValidateTaskConfig(good))

	cases := []struct {
		name   string
		config map[string]any
		want   []string
	}{
		{"missing image", map[string]any{}, []string{"image is required"}},
		{"bad image", map[string]any{"image": "web:bad tag!"}, []string{"image is not a valid image reference"}},
		{"unknown key", map[string]any{"image": "web", "privileges": true}, []string{"privileges is not a known option"}},
		{"types", map[string]any{"image": "web", "args": "x", "force_pull": "maybe", "ports": []any{1}},
			[]string{"args must be a list of strings", "force_pull must be a bool", "ports[0] must be a string"}},
		{"durations", map[string]any{"image": "web", "image_pull_timeout": "soon", "pull_activity_timeout": "0s"},
			[]string{"image_pull_timeout must be a duration", "pull_activity_timeout must be positive"}},
		{"volumes", map[string]any{"image": "web", "volumes": []any{"/a", "/a:rel", "/a:/b:rw:x", "/a:/b:rx"}},
			[]string{"volumes[0] must be", "volumes[1] container path \"rel\" must be absolute", "volumes[2] must be", "volumes[3] mode must be"}},
		{"mounts", map[string]any{"image": "web", "mount": []any{
			map[string]any{"type": "bind", "target": "/x"},
			map[string]any{"type": "nfs", "source": "a", "target": "/y"},
			map[string]any{"type": "tmpfs", "source": "a", "target": "rel"},
			map[string]any{"type": "volume", "source": "v", "target": "/z", "bogus": 1},
		}}, []string{"mount[0].source is required for a bind mount", "mount[1].type must be bind, volume or tmpfs",
			"mount[2].source must be empty", "mount[2].target is required and must be an absolute path", "mount[3]: bogus is not a known option"}},
		{"labels", map[string]any{"image": "web", "labels": map[string]any{"a": 1, LabelAllocID: "x"}},
			[]string{"labels.a must be a string", "labels.drover.alloc_id is set by the driver"}},
		{"auth", map[string]any{"image": "web", "auth": map[string]any{"user": "x", "password": 3}},
			[]string{"auth: user is not a known option", "auth: password must be a string"}},
		{"work_dir", map[string]any{"image": "web", "work_dir": "rel"}, []string{"work_dir must be an absolute path"}},
		{"prefetch_parallel negative", map[string]any{"image": "web", "prefetch_parallel": -1}, []string{"prefetch_parallel must not be negative"}},
		{"prefetch_parallel not a number", map[string]any{"image": "web", "prefetch_parallel": "4"}, []string{"prefetch_parallel must be an integer"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := d.ValidateTaskConfig(tc.config)
			require.Error(t, err)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}

func sha(s string) string {
	out := make([]byte, 64)
	for i := range out {
		out[i] = s[0]
	}
	return string(out)
}

func TestPluginConfig(t *testing.T) {
	d := New(nil)
	require.Equal(t, DefaultImageDelay, d.ImageDelay())
	require.True(t, d.ImageGCEnabled())

	require.NoError(t, d.SetConfig(map[string]any{"image_delay": "10m"}))
	require.Equal(t, 10*time.Minute, d.ImageDelay())
	require.NoError(t, d.SetConfig(map[string]any{"gc": []any{map[string]any{"image": false, "image_delay": "1h"}}}))
	require.Equal(t, time.Hour, d.ImageDelay())
	require.False(t, d.ImageGCEnabled())

	require.NoError(t, d.SetConfig(map[string]any{"pull_activity_timeout": "7s"}))
	tc, err := parseTaskConfig(map[string]any{"image": "web"}, d.config())
	require.NoError(t, err)
	require.Equal(t, 7*time.Second, tc.PullActivityTimeout)
	require.Equal(t, DefaultImagePullTimeout, tc.ImagePullTimeout)

	err = d.SetConfig(map[string]any{"enabled": "perhaps", "gc": map[string]any{"image_delay": "x", "volumes": true}, "nope": 1})
	require.ErrorContains(t, err, "enabled must be a bool")
	require.ErrorContains(t, err, "gc.image_delay must be a duration")
	require.ErrorContains(t, err, "gc: volumes is not a known option")
	require.ErrorContains(t, err, "nope is not a known option")
	require.Equal(t, DefaultImageDelay, d.ImageDelay(), "a rejected config changes nothing")

	require.NoError(t, d.SetConfig(map[string]any{"enabled": false}))
	fp := d.Fingerprint(t.Context())
	require.False(t, fp.Healthy)
	_, err = d.StartTask(&drivers.TaskConfig{ID: "a/b", Config: map[string]any{"image": "web"}})
	require.ErrorIs(t, err, drivers.ErrDisabled)
}

func TestPullRef(t *testing.T) {
	dg := "sha256:" + sha("b")
	for in, want := range map[string]string{
		"web":                                "web:latest",
		"127.0.0.1:5000/web":                 "127.0.0.1:5000/web:latest",
		"127.0.0.1:5000/web:v2":              "127.0.0.1:5000/web:v2",
		"127.0.0.1:5000/web@" + dg:           "127.0.0.1:5000/web@" + dg,
		"127.0.0.1:5000/web:v2@" + dg:        "127.0.0.1:5000/web@" + dg,
		"docker.io/library/busybox:1.36":     "busybox:1.36",
		"ghcr.io/org/app:1@" + dg:            "ghcr.io/org/app@" + dg,
		"registry.example.com/a/b/c:2.0-rc1": "registry.example.com/a/b/c:2.0-rc1",
	} {
		got, err := pullRef(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
}

func TestPullTracker(t *testing.T) {
	p := newPullTracker("web:v1")
	msg := func(id, status string, cur, total int64) pullMessage {
		m := pullMessage{ID: id, Status: status}
		m.ProgressDetail.Current, m.ProgressDetail.Total = cur, total
		return m
	}
	require.True(t, p.apply(pullMessage{ID: "v1", Status: "Pulling from web"}))
	require.True(t, p.apply(msg("a", "Pulling fs layer", 0, 0)))
	require.True(t, p.apply(msg("b", "Pulling fs layer", 0, 0)))
	require.True(t, p.apply(msg("c", "Already exists", 0, 0)))
	require.True(t, p.apply(msg("a", "Downloading", 100, 1000)))
	require.False(t, p.apply(msg("a", "Downloading", 100, 1000)), "a repeat is no progress")
	require.True(t, p.apply(msg("b", "Downloading", 50, 500)))
	got := p.progress(false)
	require.Equal(t, int64(150), got.BytesDone)
	require.Equal(t, int64(1500), got.BytesTotal)
	require.Contains(t, got.Message, "1/3 layers")
	p.apply(msg("a", "Download complete", 0, 0))
	p.apply(msg("a", "Extracting", 10, 1000))
	got = p.progress(false)
	require.Equal(t, int64(1050), got.BytesDone)
	got = p.progress(true)
	require.Equal(t, got.BytesTotal, got.BytesDone)
	require.Equal(t, int64(1500), got.BytesTotal)
	require.Equal(t, "Pulled image web:v1: 3 layers, 1.5 kB", got.Message)
}

func TestRegistryAuth(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dir)
	decode := func(s string) registry.AuthConfig {
		t.Helper()
		ac, err := registry.DecodeAuthConfig(s)
		require.NoError(t, err)
		return *ac
	}

	// No config.json: anonymous.
	got, err := registryAuth("127.0.0.1:5000/web:v1", nil, "")
	require.NoError(t, err)
	require.Empty(t, got)

	cfg := `{"auths": {
		"127.0.0.1:5000": {"auth": "` + base64.StdEncoding.EncodeToString([]byte("alice:s3cret")) + `"},
		"https://index.docker.io/v1/": {"auth": "` + base64.StdEncoding.EncodeToString([]byte("bob:hub")) + `"}
	}}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600))
	got, err = registryAuth("127.0.0.1:5000/web:v1", nil, "")
	require.NoError(t, err)
	ac := decode(got)
	require.Equal(t, "alice", ac.Username)
	require.Equal(t, "s3cret", ac.Password)

	got, err = registryAuth("busybox", nil, "")
	require.NoError(t, err)
	require.Equal(t, "bob", decode(got).Username)

	got, err = registryAuth("ghcr.io/x/y", nil, "")
	require.NoError(t, err)
	require.Empty(t, got)

	// The task's auth block wins.
	got, err = registryAuth("127.0.0.1:5000/web:v1", &authConfig{Username: "carol", Password: "pw"}, "")
	require.NoError(t, err)
	ac = decode(got)
	require.Equal(t, "carol", ac.Username)
	require.Equal(t, "127.0.0.1:5000", ac.ServerAddress)

	// An explicit config path that is missing is an error.
	_, err = registryAuth("web", nil, filepath.Join(dir, "missing.json"))
	require.ErrorContains(t, err, "reading registry credentials")
}

func TestContainerSpec(t *testing.T) {
	root := t.TempDir()
	cfg := &drivers.TaskConfig{
		ID: "alloc1/web", AllocID: "alloc1", TaskName: "web", JobName: "j", Namespace: "default",
		AllocDir: filepath.Join(root, "alloc"), TaskDir: filepath.Join(root, "web"),
		Env: map[string]string{
			"NOMAD_PORT_http_api": "8080", "NOMAD_HOST_PORT_http_api": "25000", "NOMAD_IP_http_api": "10.1.2.3",
			"NOMAD_ALLOC_DIR": "/host/alloc", "FOO": "bar",
		},
		MemoryMB: 64, CPU: 1,
	}
	for _, d := range []string{"web/local/conf", "web/rel"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	srv := t.TempDir() // a host path outside the allocation
	tc, err := parseTaskConfig(map[string]any{
		"image": "web:v1", "args": []any{"-x"}, "ports": []any{"http-api"},
		"labels":  map[string]any{"drover.test": "1"},
		"volumes": []any{"data:/data", "local/conf:/etc/conf:ro", srv + ":/srv"},
		"mount":   []any{map[string]any{"type": "bind", "source": "rel", "target": "/rel", "readonly": true}},
	}, defaultPluginConfig())
	require.NoError(t, err)
	open := defaultSecurityOptions()
	open.VolumesEnabled = true // named volumes and /srv
	cc, hc, err := containerSpec(cfg, tc, open, "web:v1")
	require.NoError(t, err)
	require.Equal(t, []string{"-x"}, []string(cc.Cmd))
	require.Empty(t, cc.Entrypoint)
	require.Contains(t, cc.Env, "NOMAD_ALLOC_DIR=/alloc")
	require.Contains(t, cc.Env, "FOO=bar")
	require.Equal(t, map[string]string{"drover.test": "1", LabelAllocID: "alloc1", LabelTaskName: "web", LabelJobName: "j", LabelNamespace: "default"}, cc.Labels)
	require.Equal(t, int64(64<<20), hc.Memory)
	require.Equal(t, int64(2), hc.CPUShares)
	require.Equal(t, []nat.PortBinding{{HostIP: "10.1.2.3", HostPort: "25000"}}, hc.PortBindings["8080/tcp"])
	require.Contains(t, hc.PortBindings, nat.Port("8080/udp"))
	require.Equal(t, []mount.Mount{
		{Type: mount.TypeBind, Source: cfg.AllocDir, Target: "/alloc"},
		{Type: mount.TypeBind, Source: filepath.Join(cfg.TaskDir, "local"), Target: "/local"},
		{Type: mount.TypeBind, Source: filepath.Join(cfg.TaskDir, "secrets"), Target: "/secrets"},
		{Type: mount.TypeVolume, Source: "data", Target: "/data"},
		{Type: mount.TypeBind, Source: filepath.Join(cfg.TaskDir, "local/conf"), Target: "/etc/conf", ReadOnly: true},
		{Type: mount.TypeBind, Source: srv, Target: "/srv"},
		{Type: mount.TypeBind, Source: filepath.Join(cfg.TaskDir, "rel"), Target: "/rel", ReadOnly: true},
	}, hc.Mounts)
	require.DirExists(t, filepath.Join(cfg.TaskDir, "secrets"))
	require.Equal(t, "web-alloc1", containerName(cfg))

	tc.Command = "/server"
	tc.Ports = []string{"nope"}
	_, _, err = containerSpec(cfg, tc, open, "web:v1")
	require.ErrorContains(t, err, `ports names port "nope", which is not a port of the group's network block`)
	tc.NetworkMode = "host"
	cc, hc, err = containerSpec(cfg, tc, open, "web:v1")
	require.NoError(t, err)
	require.Equal(t, []string{"/server", "-x"}, []string(cc.Cmd))
	require.Empty(t, hc.PortBindings, "host networking publishes nothing")
}

// A volumes entry takes Docker's bind options: a mode and one propagation,
// comma-separated ("/:/host:ro,rslave", node-exporter's usual mount), and
// the propagation reaches the bind.
func TestVolumePropagation(t *testing.T) {
	for _, tc := range []struct {
		entry       string
		readOnly    bool
		propagation string
		err         string
	}{
		{entry: "/:/host:ro,rslave", readOnly: true, propagation: "rslave"},
		{entry: "local/x:/x:rshared", propagation: "rshared"},
		{entry: "local/x:/x:rw", propagation: ""},
		{entry: "/a:/b:ro,rslave,shared", err: "mode must be"},
		{entry: "/a:/b:ro,z", err: "mode must be"},
		{entry: "data:/d:rslave", err: `propagation "rslave" applies to a bind of a host path, not to the named volume "data"`},
	} {
		v, err := parseVolume(tc.entry)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.entry)
			continue
		}
		require.NoError(t, err, tc.entry)
		require.Equal(t, tc.readOnly, v.ReadOnly, tc.entry)
		require.Equal(t, tc.propagation, v.Propagation, tc.entry)
	}

	alloc := t.TempDir()
	task := filepath.Join(alloc, "web")
	require.NoError(t, os.MkdirAll(filepath.Join(task, "local", "x"), 0o755))
	cfg := &drivers.TaskConfig{AllocDir: filepath.Join(alloc, "alloc"), TaskDir: task}
	require.NoError(t, os.MkdirAll(cfg.AllocDir, 0o755))
	tc, err := parseTaskConfig(map[string]any{"image": "web", "volumes": []any{"local/x:/x:ro,rslave"}}, defaultPluginConfig())
	require.NoError(t, err)
	mounts, _, err := taskMounts(cfg, tc, securityOptions{})
	require.NoError(t, err)
	var found bool
	for _, m := range mounts {
		if m.Target == "/x" {
			found = true
			require.True(t, m.ReadOnly)
			require.NotNil(t, m.BindOptions)
			require.Equal(t, "rslave", string(m.BindOptions.Propagation))
		}
	}
	require.True(t, found, "the volume's bind is mounted: %+v", mounts)
}

// gc { container = false } would keep containers Drover removes anyway:
// refused rather than accepted and not done; true (Nomad's default) is fine.
func TestPluginGCContainerFalseRefused(t *testing.T) {
	d := New(nil)
	require.NoError(t, d.SetConfig(map[string]any{"gc": map[string]any{"container": true}}))
	err := New(nil).SetConfig(map[string]any{"gc": map[string]any{"container": false}})
	require.ErrorContains(t, err, "gc.container = false is not supported by Drover")
}

// TestContainerEnvTaskAPI: the task API socket's host path in the task's
// secrets dir becomes its path in the container; a NOMAD_UNIX_ADDR the job
// set itself is kept.
func TestContainerEnvTaskAPI(t *testing.T) {
	env := containerEnv(map[string]string{"NOMAD_UNIX_ADDR": "unix:///data/alloc/a1/web/secrets/api.sock"})
	require.Contains(t, env, "NOMAD_UNIX_ADDR=unix:///secrets/api.sock")
	require.Contains(t, env, "NOMAD_SECRETS_DIR=/secrets")
	env = containerEnv(map[string]string{"NOMAD_UNIX_ADDR": "unix:///run/custom.sock"})
	require.Contains(t, env, "NOMAD_UNIX_ADDR=unix:///run/custom.sock")
	require.NotContains(t, containerEnv(map[string]string{}), "NOMAD_UNIX_ADDR=unix:///secrets/api.sock")
}
