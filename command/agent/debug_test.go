package agent

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWithDebug(t *testing.T) {
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	get := func(h http.Handler, path string) int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code
	}
	off := withDebug(false, next)
	require.Equal(t, http.StatusTeapot, get(off, "/debug/pprof/"), "without enable_debug the API handles the path (404 there)")
	on := withDebug(true, next)
	require.Equal(t, http.StatusOK, get(on, "/debug/pprof/"))
	require.Equal(t, http.StatusOK, get(on, "/debug/pprof/goroutine?debug=1"))
	require.Equal(t, http.StatusTeapot, get(on, "/v1/jobs"))
}

func TestSystemGCEndpoint(t *testing.T) {
	ta := newTestAgent(t, "")
	require.NoError(t, ta.client.System().GarbageCollect())
	req, err := http.NewRequest(http.MethodGet, "http://"+ta.HTTPAddr()+"/v1/system/gc", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.NotEqual(t, http.StatusOK, resp.StatusCode, "only PUT and POST collect")
}
