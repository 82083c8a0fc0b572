package ui

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func get(t *testing.T, h http.Handler, path string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	resp := rec.Result()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

func TestPages(t *testing.T) {
	h := New()
	for _, tc := range []struct {
		path, kind string
		attrs      []string
	}{
		{"/ui/", "jobs", nil},
		{"/ui/jobs", "jobs", nil},
		{"/ui/jobs/web", "job", []string{`data-job="web"`, `data-namespace="default"`}},
		{"/ui/jobs/web@prod", "job", []string{`data-job="web"`, `data-namespace="prod"`}},
		{"/ui/jobs/web?namespace=prod", "job", []string{`data-namespace="prod"`}},
		{"/ui/jobs/web@prod/rollout?deployment=d1", "rollout", []string{`data-job="web"`, `data-namespace="prod"`, `data-deployment="d1"`, `<canvas id="grid"`}},
		{"/ui/allocations/0123456789", "alloc", []string{`data-alloc="0123456789"`, "Allocation 01234567"}},
		{"/ui/nodes", "nodes", nil},
		{"/ui/clients/abc", "node", []string{`data-node="abc"`}},
		{"/ui/nodes/abc", "node", []string{`data-node="abc"`}},
	} {
		resp, body := get(t, h, tc.path)
		require.Equal(t, http.StatusOK, resp.StatusCode, tc.path)
		require.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
		require.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'self'")
		require.Contains(t, body, `data-page="`+tc.kind+`"`, tc.path)
		for _, a := range tc.attrs {
			require.Contains(t, body, a, tc.path)
		}
	}
}

func TestUnknownPathIs404(t *testing.T) {
	resp, body := get(t, New(), "/ui/nothing/here")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Contains(t, body, "/ui/nothing/here")
}

// A job ID is data, never markup: the template escapes it everywhere.
func TestJobIDIsEscaped(t *testing.T) {
	_, body := get(t, New(), "/ui/jobs/%3Cscript%3Ealert(1)%3C%2Fscript%3E")
	require.NotContains(t, body, "<script>alert(1)")
	require.Contains(t, body, "&lt;script&gt;alert(1)")
}

func TestStaticFilesAndCaching(t *testing.T) {
	h := New()
	_, page := get(t, h, "/ui/")
	for _, name := range []string{"app.js", "api.js", "model.js", "rollout.js", "util.js", "boot.js", "app.css"} {
		resp, body := get(t, h, "/ui/static/"+name+"?v="+h.asset)
		require.Equal(t, http.StatusOK, resp.StatusCode, name)
		require.NotEmpty(t, body)
		require.Contains(t, resp.Header.Get("Cache-Control"), "immutable", name)
		if strings.HasSuffix(name, ".js") {
			require.Contains(t, resp.Header.Get("Content-Type"), "javascript", name)
		}
	}
	require.Contains(t, page, "/ui/static/app.js?v="+h.asset, "pages name the current asset version")
	_, app := get(t, h, "/ui/static/app.js?v="+h.asset)
	require.Contains(t, app, "from './api.js?v="+h.asset+"'", "modules import the current version of each other")
	require.NotContains(t, app, "from './api.js'")
	_, rollout := get(t, h, "/ui/jobs/a%2Fb@ns1/rollout")
	require.Contains(t, rollout, `data-first="/v1/job/a%2Fb/rollout?namespace=ns1"`, "the rollout page names its first read")
	resp, _ := get(t, h, "/ui/static/app.js?v=old")
	require.Equal(t, "no-cache", resp.Header.Get("Cache-Control"), "an old version's URL is revalidated")
	resp, _ = get(t, h, "/ui/static/missing.js")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}
