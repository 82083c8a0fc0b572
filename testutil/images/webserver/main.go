// Command webserver is the payload of the test images built by
// testutil/images: a static HTTP server meant to run as PID 1 in a FROM-scratch
// container. It listens on $PORT (default 8080) and answers
//
//	GET /        "version $VERSION\n"
//	GET /health  200 "ok\n"
//
// It shuts down promptly on SIGTERM or SIGINT (as PID 1 it must handle them
// itself). It uses only the standard library so that it builds anywhere.
package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	version := os.Getenv("VERSION")

	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "version %s\n", version)
	})
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	srv := &http.Server{Addr: ":" + port, Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Printf("webserver: version %s listening on :%s", version, port)

	select {
	case err := <-errc:
		log.Fatalf("webserver: %v", err)
	case <-ctx.Done():
	}
	log.Printf("webserver: signal received, shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
}
