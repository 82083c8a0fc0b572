package client

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

func fsGet(t *testing.T, h http.Handler, url string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, url, nil))
	return rec.Code, rec.Body.String()
}

// TestAllocFS: ls, stat, cat, readat and stream read inside the
// allocation's directory only; missing files are 404s, escapes and
// directories read as files are 400s.
func TestAllocFS(t *testing.T) {
	c, _, a := runningLogAlloc(t, map[string]any{"stdout_string": "hello\n", "run_for": "10s"})
	h := c.Handler()
	dir := filepath.Join(c.cfg.AllocDir(), a.ID)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "alloc", "data.txt"), []byte("0123456789"), 0o644))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dir, "alloc", "escape")))

	code, body := fsGet(t, h, "/v1/client/fs/ls/"+a.ID+"?path=/")
	require.Equal(t, http.StatusOK, code, body)
	var entries []*api.AllocFileInfo
	require.NoError(t, json.Unmarshal([]byte(body), &entries))
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name] = e.IsDir
	}
	require.True(t, names["alloc"], "the shared alloc dir is listed: %v", names)

	code, body = fsGet(t, h, "/v1/client/fs/stat/"+a.ID+"?path=alloc/data.txt")
	require.Equal(t, http.StatusOK, code, body)
	var fi api.AllocFileInfo
	require.NoError(t, json.Unmarshal([]byte(body), &fi))
	require.Equal(t, int64(10), fi.Size)
	require.Equal(t, "text/plain; charset=utf-8", fi.ContentType)

	code, body = fsGet(t, h, "/v1/client/fs/cat/"+a.ID+"?path=alloc/data.txt")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "0123456789", body)
	code, body = fsGet(t, h, "/v1/client/fs/readat/"+a.ID+"?path=alloc/data.txt&offset=3&limit=4")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "3456", body)

	for url, want := range map[string]int{
		"/v1/client/fs/cat/" + a.ID + "?path=alloc/missing":               http.StatusNotFound,
		"/v1/client/fs/cat/" + a.ID + "?path=alloc":                       http.StatusBadRequest,
		"/v1/client/fs/cat/" + a.ID + "?path=alloc/escape":                http.StatusBadRequest,
		"/v1/client/fs/readat/" + a.ID + "?path=alloc/data.txt&offset=-1": http.StatusBadRequest,
		"/v1/client/fs/ls/nope?path=/":                                    http.StatusNotFound,
	} {
		code, body := fsGet(t, h, url)
		require.Equal(t, want, code, "%s: %s", url, body)
		require.NotContains(t, body, "root:", "nothing outside the alloc dir is read")
	}
	// ".." is cleaned to the allocation's root, never above it.
	code, body = fsGet(t, h, "/v1/client/fs/cat/"+a.ID+"?path=../../../../etc/passwd")
	require.Equal(t, http.StatusNotFound, code, body)

	// stream: the content, then what is appended.
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/v1/client/fs/stream/" + a.ID + "?path=alloc/data.txt&plain=true&offset=5")
	require.NoError(t, err)
	defer resp.Body.Close()
	go func() {
		time.Sleep(100 * time.Millisecond)
		f, _ := os.OpenFile(filepath.Join(dir, "alloc", "data.txt"), os.O_APPEND|os.O_WRONLY, 0)
		_, _ = f.WriteString("abc")
		f.Close()
	}()
	buf := make([]byte, 0, 16)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(string(buf), "56789abc") && time.Now().Before(deadline) {
		chunk := make([]byte, 16)
		n, _ := resp.Body.Read(chunk)
		buf = append(buf, chunk[:n]...)
	}
	require.Equal(t, "56789abc", string(buf))
}
