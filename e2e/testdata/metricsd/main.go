// Command metricsd is the service of the e2e gate tests: it serves
// Prometheus text format on /metrics, on -addr, until SIGTERM or SIGINT:
//
//	app_error_ratio{nomad_job="<-job>",version="<-version>"} <-errors>
//	app_requests_total{nomad_job="<-job>",version="<-version>"} <scrapes>
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

func main() {
	addr := flag.String("addr", "", "listen address, host:port")
	job := flag.String("job", "", "the nomad_job label")
	version := flag.String("version", "", "the version label")
	errors := flag.Float64("errors", 0, "the error ratio reported")
	flag.Parse()
	var requests atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# TYPE app_error_ratio gauge\napp_error_ratio{nomad_job=%q,version=%q} %g\n", *job, *version, *errors)
		fmt.Fprintf(w, "# TYPE app_requests_total counter\napp_requests_total{nomad_job=%q,version=%q} %d\n", *job, *version, requests.Add(1))
	})
	srv := &http.Server{Addr: *addr, Handler: mux}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown(context.Background())
	}()
	log.Printf("metricsd: version %s errors %g on %s", *version, *errors, *addr)
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		log.Fatal(err)
	}
}
