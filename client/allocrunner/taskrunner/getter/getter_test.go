package getter

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dirs is an allocation directory with one task directory "web".
type dirs struct{ alloc, task string }

func newDirs(t *testing.T) dirs {
	t.Helper()
	alloc := filepath.Join(t.TempDir(), "a1")
	task := filepath.Join(alloc, "web")
	require.NoError(t, os.MkdirAll(filepath.Join(task, "local"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(alloc, "alloc"), 0o755))
	return dirs{alloc: alloc, task: task}
}

func (d dirs) req(src, dest string) Request {
	return Request{Source: src, Dest: dest, AllocDir: d.alloc, TaskDir: d.task}
}

// server serves files by path and records the requests' headers.
type server struct {
	*httptest.Server
	mu      sync.Mutex
	headers []http.Header
}

func newServer(t *testing.T, files map[string][]byte) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.headers = append(s.headers, r.Header.Clone())
		s.mu.Unlock()
		body, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if r.URL.Query().Get("chunked") != "" {
			w.(http.Flusher).Flush() // no Content-Length
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) lastHeader() http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.headers[len(s.headers)-1]
}

type tarEntry struct {
	name, body string
	dir        bool
}

func tgz(t *testing.T, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Typeflag: tar.TypeReg}
		if e.dir {
			h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
		}
		require.NoError(t, tw.WriteHeader(h))
		_, err := tw.Write([]byte(e.body))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	return buf.Bytes()
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func TestFetch_FileWithChecksumAndHeaders(t *testing.T) {
	body := []byte("hello artifact\n")
	srv := newServer(t, map[string][]byte{"/app.conf": body})
	d := newDirs(t)
	r := d.req(srv.URL+"/app.conf", "local/")
	r.Options = map[string]string{"checksum": sha(body)}
	r.Headers = map[string]string{"X-Token": "s3cr3t"}
	require.NoError(t, Fetch(context.Background(), nil, r))
	assert.Equal(t, string(body), readFile(t, filepath.Join(d.task, "local", "app.conf")))
	assert.Equal(t, "s3cr3t", srv.lastHeader().Get("X-Token"))
	assert.Empty(t, srv.lastHeader().Get("Range"), "no resumed download")
}

func TestFetch_BadChecksumFails(t *testing.T) {
	srv := newServer(t, map[string][]byte{"/app.conf": []byte("tampered")})
	d := newDirs(t)
	r := d.req(srv.URL+"/app.conf", "local/")
	r.Options = map[string]string{"checksum": sha([]byte("original"))}
	err := Fetch(context.Background(), nil, r)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Checksums did not match")

	// The next attempt downloads afresh: a shorter good file is not
	// padded with the tail of the bad one.
	srv2 := newServer(t, map[string][]byte{"/app.conf": []byte("ok")})
	r = d.req(srv2.URL+"/app.conf", "local/")
	r.Options = map[string]string{"checksum": sha([]byte("ok"))}
	require.NoError(t, Fetch(context.Background(), nil, r))
	assert.Equal(t, "ok", readFile(t, filepath.Join(d.task, "local", "app.conf")))
}

func TestFetch_ArchiveUnpackedOrKept(t *testing.T) {
	archive := tgz(t, tarEntry{name: "bin/", dir: true}, tarEntry{name: "bin/run.sh", body: "#!/bin/sh\necho hi\n"}, tarEntry{name: "VERSION", body: "1.2.3"})
	srv := newServer(t, map[string][]byte{"/app.tar.gz": archive})
	d := newDirs(t)
	r := d.req(srv.URL+"/app.tar.gz", "local/app")
	r.Options = map[string]string{"checksum": sha(archive)}
	require.NoError(t, Fetch(context.Background(), nil, r))
	assert.Equal(t, "1.2.3", readFile(t, filepath.Join(d.task, "local", "app", "VERSION")))
	assert.Equal(t, "#!/bin/sh\necho hi\n", readFile(t, filepath.Join(d.task, "local", "app", "bin", "run.sh")))

	r = d.req(srv.URL+"/app.tar.gz", "local/raw")
	r.Options = map[string]string{"archive": "false"}
	require.NoError(t, Fetch(context.Background(), nil, r))
	assert.Equal(t, string(archive), readFile(t, filepath.Join(d.task, "local", "raw", "app.tar.gz")), "archive = false keeps the archive")
}

func TestFetch_ArchiveWithDotDotEntryFails(t *testing.T) {
	srv := newServer(t, map[string][]byte{"/evil.tar.gz": tgz(t, tarEntry{name: "../../../escaped", body: "x"})})
	d := newDirs(t)
	err := Fetch(context.Background(), nil, d.req(srv.URL+"/evil.tar.gz", "local/"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "entry contains '..'")
	_, statErr := os.Stat(filepath.Join(filepath.Dir(d.alloc), "escaped"))
	assert.True(t, os.IsNotExist(statErr), "nothing was written outside")
}

func TestFetch_DecompressionLimits(t *testing.T) {
	archive := tgz(t, tarEntry{name: "a", body: "1"}, tarEntry{name: "b", body: "2"}, tarEntry{name: "c", body: "3"})
	srv := newServer(t, map[string][]byte{"/many.tar.gz": archive})
	d := newDirs(t)
	cfg := DefaultConfig()
	cfg.DecompressionFileCountLimit = 2
	err := Fetch(context.Background(), cfg, d.req(srv.URL+"/many.tar.gz", "local/"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "too many files")
}

func TestFetch_DestinationThroughSymlinkRefused(t *testing.T) {
	srv := newServer(t, map[string][]byte{"/app.conf": []byte("x")})
	d := newDirs(t)
	outside := t.TempDir()
	require.NoError(t, os.Symlink(outside, filepath.Join(d.task, "local", "out")))
	err := Fetch(context.Background(), nil, d.req(srv.URL+"/app.conf", "local/out/conf"))
	require.ErrorIs(t, err, ErrDestEscapes)
	entries, _ := os.ReadDir(outside)
	assert.Empty(t, entries, "nothing was written through the link")

	// A link that stays inside the allocation is followed.
	require.NoError(t, os.Symlink(filepath.Join(d.alloc, "alloc"), filepath.Join(d.task, "local", "shared")))
	require.NoError(t, Fetch(context.Background(), nil, d.req(srv.URL+"/app.conf", "local/shared/")))
	assert.Equal(t, "x", readFile(t, filepath.Join(d.alloc, "alloc", "app.conf")))
}

func TestFetch_AbsoluteDestinations(t *testing.T) {
	srv := newServer(t, map[string][]byte{"/app.conf": []byte("x")})
	d := newDirs(t)
	require.NoError(t, Fetch(context.Background(), nil, d.req(srv.URL+"/app.conf", filepath.Join(d.alloc, "alloc", "conf")+"/")))
	assert.Equal(t, "x", readFile(t, filepath.Join(d.alloc, "alloc", "conf", "app.conf")), "an interpolated host path inside the allocation")
	require.NoError(t, Fetch(context.Background(), nil, d.req(srv.URL+"/app.conf", "/etc/app/")))
	assert.Equal(t, "x", readFile(t, filepath.Join(d.task, "etc", "app", "app.conf")), "any other absolute path is taken from the task dir")
}

func TestFetch_HTTPMaxSize(t *testing.T) {
	big := bytes.Repeat([]byte("z"), 4096)
	srv := newServer(t, map[string][]byte{"/big.bin": big})
	d := newDirs(t)
	cfg := DefaultConfig()
	cfg.HTTPMaxSize = 1024
	for _, src := range []string{srv.URL + "/big.bin", srv.URL + "/big.bin?chunked=1"} {
		err := Fetch(context.Background(), cfg, d.req(src, "local/"))
		var tl *TooLargeError
		require.ErrorAs(t, err, &tl, src)
		assert.Contains(t, err.Error(), "http_max_size of 1024 bytes")
	}
	cfg.HTTPMaxSize = 4096
	require.NoError(t, Fetch(context.Background(), cfg, d.req(srv.URL+"/big.bin", "local/")), "a body of exactly the limit is fine")
	assert.Len(t, readFile(t, filepath.Join(d.task, "local", "big.bin")), 4096)
}

func TestFetch_FileSourceConfinedToAlloc(t *testing.T) {
	d := newDirs(t)
	host := filepath.Join(t.TempDir(), "host.txt")
	require.NoError(t, os.WriteFile(host, []byte("host secret"), 0o600))
	err := Fetch(context.Background(), nil, d.req("file://"+host, "local/"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "outside the allocation directory")

	inside := filepath.Join(d.alloc, "alloc", "shared.txt")
	require.NoError(t, os.WriteFile(inside, []byte("shared"), 0o644))
	require.NoError(t, Fetch(context.Background(), nil, d.req("file://"+inside, "local/")))
	assert.Equal(t, "shared", readFile(t, filepath.Join(d.task, "local", "shared.txt")))
	fi, err := os.Lstat(filepath.Join(d.task, "local", "shared.txt"))
	require.NoError(t, err)
	assert.True(t, fi.Mode().IsRegular(), "copied, not linked")

	cfg := DefaultConfig()
	cfg.DisableFilesystemIsolation = true
	require.NoError(t, Fetch(context.Background(), cfg, d.req("file://"+host, "local/")))
	assert.Equal(t, "host secret", readFile(t, filepath.Join(d.task, "local", "host.txt")))
}

func TestCheckLinks(t *testing.T) {
	d := newDirs(t)
	dest := filepath.Join(d.task, "local", "repo")
	require.NoError(t, os.MkdirAll(dest, 0o755))
	require.NoError(t, os.Symlink("../../../alloc", filepath.Join(dest, "ok")))
	require.NoError(t, checkLinks(d.alloc, dest))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dest, "bad")))
	err := checkLinks(d.alloc, dest)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "symlink that escapes the alloc directory")
}

func TestSourceURL(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"https://h/a.tgz", "https://h/a.tgz?checksum=sha256%3Aab"},
		{"https://h/a.tgz?x=1", "https://h/a.tgz?checksum=sha256%3Aab&x=1"},
		{"git::https://h/r.git", "git::https://h/r.git?checksum=sha256%3Aab"},
		{"git@github.com:org/repo.git", "git@github.com:org/repo.git?checksum=sha256%3Aab"},
		{"example.com/a.tgz", "example.com/a.tgz?checksum=sha256%3Aab"},
	} {
		got, err := sourceURL(tc.src, map[string]string{"checksum": "sha256:ab"})
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, tc.src)
	}
	got, _ := sourceURL("https://h/a", nil)
	assert.Equal(t, "https://h/a", got)
}

func TestFetch_UnofferedGetter(t *testing.T) {
	d := newDirs(t)
	err := Fetch(context.Background(), nil, d.req("s3::https://s3.amazonaws.com/b/k", "local/"))
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "download not supported for scheme 's3'"), err.Error())
}
