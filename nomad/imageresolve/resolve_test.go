package imageresolve

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/testutil/registry"
)

// push writes a random image to ref and returns its digest.
func push(t *testing.T, ref string) string {
	t.Helper()
	img, err := random.Image(64, 1)
	require.NoError(t, err)
	r, err := name.ParseReference(ref, name.Insecure)
	require.NoError(t, err)
	require.NoError(t, remote.Write(r, img))
	d, err := img.Digest()
	require.NoError(t, err)
	return d.String()
}

func TestParse(t *testing.T) {
	dg := "sha256:" + strings.Repeat("a", 64)
	for _, tc := range []struct {
		in, tagRef, registry, repo, digest string
	}{
		{"nginx", "nginx:latest", "docker.io", "docker.io/library/nginx", ""},
		{" nginx:1 ", "nginx:1", "docker.io", "docker.io/library/nginx", ""},
		{"127.0.0.1:5000/app:stable", "127.0.0.1:5000/app:stable", "127.0.0.1:5000", "127.0.0.1:5000/app", ""},
		{"127.0.0.1:5000/app:stable@" + dg, "127.0.0.1:5000/app:stable", "127.0.0.1:5000", "127.0.0.1:5000/app", dg},
		{"ghcr.io/o/app@" + dg, "ghcr.io/o/app:latest", "ghcr.io", "ghcr.io/o/app", dg},
	} {
		r, err := Parse(tc.in)
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.tagRef, r.TagRef(), tc.in)
		require.Equal(t, tc.registry, r.Registry, tc.in)
		require.Equal(t, tc.repo, r.Repository, tc.in)
		require.Equal(t, tc.digest, r.Digest, tc.in)
		require.Equal(t, tc.tagRef+"@sha256:x", r.Pinned("sha256:x"))
	}
	_, err := Parse("web:bad tag!")
	require.Error(t, err)
}

func TestResolve_LoopbackRegistryOverPlainHTTP(t *testing.T) {
	reg := registry.Start(t, registry.Options{})
	want := push(t, reg.Ref("app", "stable"))
	reg.ResetCounters()
	ref, err := Parse(reg.Ref("app", "stable"))
	require.NoError(t, err)
	got, err := New(Options{}).Resolve(context.Background(), ref, nil)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Equal(t, 1, reg.ManifestHeads(reg.Ref("app", "stable")), "one manifest HEAD per resolution")
	require.Equal(t, 0, reg.ManifestGets(reg.Ref("app", "stable")))

	missing, _ := Parse(reg.Ref("app", "nope"))
	_, err = New(Options{}).Resolve(context.Background(), missing, nil)
	var re *RegistryError
	require.ErrorAs(t, err, &re)
	require.Equal(t, http.StatusNotFound, re.StatusCode)
}

func TestResolve_TooManyRequestsIsNotRetried(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			w.WriteHeader(http.StatusOK)
			return
		}
		hits.Add(1)
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	ref, _ := Parse(strings.TrimPrefix(srv.URL, "http://") + "/app:stable")
	_, err := New(Options{}).Resolve(context.Background(), ref, nil)
	var re *RegistryError
	require.ErrorAs(t, err, &re)
	require.Equal(t, http.StatusTooManyRequests, re.StatusCode)
	require.Equal(t, 7*time.Second, re.RetryAfter)
	require.EqualValues(t, 1, hits.Load(), "a 429 is not retried")
}

func TestResolve_TimeoutBoundsAStalledRegistry(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer srv.Close()
	ref, _ := Parse(strings.TrimPrefix(srv.URL, "http://") + "/app:stable")
	start := time.Now()
	_, err := New(Options{Timeout: 300 * time.Millisecond}).Resolve(context.Background(), ref, nil)
	require.Error(t, err)
	require.Less(t, time.Since(start), 5*time.Second)
}

// basicAuthRegistry answers manifest HEADs only with the right basic auth.
func basicAuthRegistry(t *testing.T, user, pass, digest string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || u != user || p != pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/v2/" {
			return
		}
		w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
		w.Header().Set("Docker-Content-Digest", digest)
		w.Header().Set("Content-Length", "100")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestResolve_Credentials(t *testing.T) {
	dg := "sha256:" + strings.Repeat("b", 64)
	srv := basicAuthRegistry(t, "u", "p", dg)
	host := strings.TrimPrefix(srv.URL, "http://")
	ref, _ := Parse(host + "/app:stable")

	_, err := New(Options{}).Resolve(context.Background(), ref, nil)
	require.Error(t, err, "anonymous is refused")

	got, err := New(Options{}).Resolve(context.Background(), ref, &Auth{Username: "u", Password: "p"})
	require.NoError(t, err, "the task's auth block")
	require.Equal(t, dg, got)

	cfg := filepath.Join(t.TempDir(), "config.json")
	enc := base64.StdEncoding.EncodeToString([]byte("u:p"))
	require.NoError(t, os.WriteFile(cfg, []byte(`{"auths":{"http://`+host+`/v2/":{"auth":"`+enc+`"}}}`), 0o600))
	got, err = New(Options{DockerConfig: cfg}).Resolve(context.Background(), ref, nil)
	require.NoError(t, err, "the server's docker config")
	require.Equal(t, dg, got)
}

func TestInsecure(t *testing.T) {
	r := New(Options{Insecure: []string{"registry.lan:5000"}})
	for host, want := range map[string]bool{
		"127.0.0.1:5000": true, "127.9.9.9": true, "localhost:5000": true, "[::1]:5000": true,
		"registry.lan:5000": true, "registry.lan:5001": false, "ghcr.io": false,
	} {
		require.Equal(t, want, r.insecure(host), host)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	require.Equal(t, 30*time.Second, ParseRetryAfter("30", now))
	require.Equal(t, 90*time.Second, ParseRetryAfter(now.Add(90*time.Second).Format(http.TimeFormat), now))
	require.Zero(t, ParseRetryAfter("soon", now))
	require.Zero(t, ParseRetryAfter("", now))
}

// Which registry errors refuse a registration (an answer: no such tag,
// credentials) and which only leave the image unpinned (no answer now).
func TestUnavailable(t *testing.T) {
	status := func(code int) func(w http.ResponseWriter, r *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v2/" {
				return
			}
			w.WriteHeader(code)
		}
	}
	cases := []struct {
		name        string
		handler     func(w http.ResponseWriter, r *http.Request) // nil: nothing listens
		unavailable bool
	}{
		{"connection refused", nil, true},
		{"timeout", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, true},
		{"500", status(http.StatusInternalServerError), true},
		{"502", status(http.StatusBadGateway), true},
		{"503", status(http.StatusServiceUnavailable), true},
		{"429", status(http.StatusTooManyRequests), true},
		{"408", status(http.StatusRequestTimeout), true},
		{"404 no such tag", status(http.StatusNotFound), false},
		{"401 credentials", status(http.StatusUnauthorized), false},
		{"403 credentials", status(http.StatusForbidden), false},
		{"400", status(http.StatusBadRequest), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			host := "127.0.0.1:1"
			if tc.handler != nil {
				srv := httptest.NewServer(http.HandlerFunc(tc.handler))
				t.Cleanup(srv.Close)
				host = strings.TrimPrefix(srv.URL, "http://")
			}
			ref, err := Parse(host + "/app:v1")
			require.NoError(t, err)
			_, err = New(Options{Timeout: 300 * time.Millisecond}).Resolve(context.Background(), ref, nil)
			require.Error(t, err)
			require.Equal(t, tc.unavailable, Unavailable(err), "%v", err)
		})
	}
	require.False(t, Unavailable(nil))
	require.False(t, Unavailable(&RegistryError{Err: errors.New("invalid image reference"), local: true}), "a local error is not the registry's")
	require.True(t, Unavailable(context.DeadlineExceeded))
}

func TestCreated_ReadsTheImageConfig(t *testing.T) {
	reg := registry.Start(t, registry.Options{})
	ref := reg.Ref("app", "stable")
	img, err := random.Image(64, 1)
	require.NoError(t, err)
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	created := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	cf.Created = v1.Time{Time: created}
	img, err = mutate.ConfigFile(img, cf)
	require.NoError(t, err)
	nr, err := name.ParseReference(ref, name.Insecure)
	require.NoError(t, err)
	require.NoError(t, remote.Write(nr, img))
	d, err := img.Digest()
	require.NoError(t, err)

	r := New(Options{})
	pr, err := Parse(ref)
	require.NoError(t, err)
	got, err := r.Created(context.Background(), pr, d.String(), nil)
	require.NoError(t, err)
	require.True(t, created.Equal(got), "created %s, want %s", got, created)

	_, err = r.Created(context.Background(), pr, "sha256:"+strings.Repeat("0", 64), nil)
	var re *RegistryError
	require.ErrorAs(t, err, &re)
	require.Equal(t, http.StatusNotFound, re.StatusCode)
}
