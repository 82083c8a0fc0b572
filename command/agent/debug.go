package agent

import (
	"net/http"
	"net/http/pprof"
	"strings"
)

// withDebug serves Go's profiler under /debug/pprof/ in front of next when
// the agent has enable_debug = true; otherwise it returns next unchanged
// (and /debug/pprof/ is a 404).
func withDebug(enabled bool, next http.Handler) http.Handler {
	if !enabled {
		return next
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/debug/pprof/") {
			mux.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}
