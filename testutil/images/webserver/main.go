// Command webserver is the payload of the test images built by
// testutil/images: a static HTTP server meant to run as PID 1 in a FROM-scratch
// container. It listens on $PORT (default 8080), on address $BIND when set
// (every address when not), and answers
//
//	GET /        "version $VERSION\n"
//	GET /health  200 "ok\n"
//
// It shuts down promptly on SIGTERM or SIGINT (as PID 1 it must handle them
// itself). It uses only the standard library so that it builds anywhere.
//
// "webserver probe STEP..." runs steps instead, for tests of what a task can
// reach (the image has no shell): "ln TARGET LINK" (a symlink), "write PATH"
// (creates PATH holding "written by probe"), "cat PATH" (to stdout), "ls
// DIR" (names to stdout), "readlink PATH" (the target, to stdout), "get
// URL" (retried until it answers 200; the body to stdout), "exit CODE",
// "taskapi PATH" (GET PATH from the task API at $NOMAD_UNIX_ADDR with
// $NOMAD_TOKEN; prints "taskapi <status>" and the body), and "sleep"
// (until SIGTERM). A failed
// step prints "probe: ..." to stderr and exits 3.
//
// "report" and "hold" take every argument after them (a task's config
// args) and print one line "PROBE <json>" describing what the task got: its
// environment, those arguments, its hostname, its open-files limit
// ("soft:hard") and the content of each file named in $PROBE_SHOW
// (colon-separated paths; "" for a missing one). "report" then exits 0,
// "hold" waits for SIGTERM. The server prints the same line at start when
// $PROBE_REPORT is set, and also answers GET /metrics with 200.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "probe" {
		probe(os.Args[2:])
		return
	}
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	version := os.Getenv("VERSION")
	if os.Getenv("PROBE_REPORT") != "" {
		report(os.Args[1:])
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "version %s\n", version)
	})
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "up 1")
	})
	srv := &http.Server{Addr: net.JoinHostPort(os.Getenv("BIND"), port), Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Printf("webserver: version %s listening on %s", version, srv.Addr)

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

// probe runs the steps of "webserver probe" (see the package doc).
func probe(args []string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "probe:", err)
		os.Exit(3)
	}
	need := func(n int) []string {
		if len(args) < n+1 {
			fail(fmt.Errorf("%s needs %d arguments", args[0], n))
		}
		a := args[1 : n+1]
		args = args[n+1:]
		return a
	}
	for len(args) > 0 {
		switch args[0] {
		case "ln":
			a := need(2)
			if err := os.Symlink(a[0], a[1]); err != nil {
				fail(err)
			}
			fmt.Printf("linked %s -> %s\n", a[1], a[0])
		case "write":
			a := need(1)
			if err := os.WriteFile(a[0], []byte("written by probe\n"), 0o644); err != nil {
				fail(err)
			}
			fmt.Printf("wrote %s\n", a[0])
		case "cat":
			b, err := os.ReadFile(need(1)[0])
			if err != nil {
				fail(err)
			}
			os.Stdout.Write(b)
		case "ls":
			ents, err := os.ReadDir(need(1)[0])
			if err != nil {
				fail(err)
			}
			for _, e := range ents {
				fmt.Println(e.Name())
			}
		case "readlink":
			target, err := os.Readlink(need(1)[0])
			if err != nil {
				fail(err)
			}
			fmt.Println(target)
		case "get":
			// get URL: GET it until it answers 200 (at most a minute);
			// print the body.
			url := need(1)[0]
			deadline := time.Now().Add(time.Minute)
			for {
				resp, err := http.Get(url)
				if err == nil {
					b, rerr := io.ReadAll(resp.Body)
					resp.Body.Close()
					if rerr == nil && resp.StatusCode == http.StatusOK {
						fmt.Printf("got %s: %s", url, b)
						break
					}
				}
				if time.Now().After(deadline) {
					fail(fmt.Errorf("get %s: no answer within a minute: %v", url, err))
				}
				time.Sleep(200 * time.Millisecond)
			}
		case "exit":
			var code int
			if _, err := fmt.Sscan(need(1)[0], &code); err != nil {
				fail(err)
			}
			os.Exit(code)
		case "taskapi":
			code, body, err := taskAPIGet(need(1)[0])
			if err != nil {
				fail(err)
			}
			fmt.Printf("taskapi %d\n%s\n", code, body)
		case "sleep":
			need(0)
			untilSignal()
		case "report", "hold":
			report(args[1:])
			if args[0] == "hold" {
				untilSignal()
			}
			args = nil
		default:
			fail(fmt.Errorf("unknown step %q", args[0]))
		}
	}
}

// taskAPIGet GETs path from the task API socket named by NOMAD_UNIX_ADDR
// ("unix:///secrets/api.sock"), authenticated by NOMAD_TOKEN.
func taskAPIGet(path string) (int, string, error) {
	addr := os.Getenv("NOMAD_UNIX_ADDR")
	sock, ok := strings.CutPrefix(addr, "unix://")
	if !ok {
		return 0, "", fmt.Errorf("NOMAD_UNIX_ADDR %q is not a unix:// address", addr)
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
	req, err := http.NewRequest(http.MethodGet, "http://task-api"+path, nil)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("X-Nomad-Token", os.Getenv("NOMAD_TOKEN"))
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func untilSignal() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	<-ctx.Done()
	stop()
}

// report prints the "PROBE <json>" line (see the package doc).
func report(args []string) {
	r := struct {
		Env      map[string]string `json:"env"`
		Args     []string          `json:"args"`
		Hostname string            `json:"hostname"`
		NoFile   string            `json:"nofile"`
		Files    map[string]string `json:"files"`
	}{Env: map[string]string{}, Args: args, Files: map[string]string{}}
	if r.Args == nil {
		r.Args = []string{}
	}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		r.Env[k] = v
	}
	r.Hostname, _ = os.Hostname()
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		r.NoFile = fmt.Sprintf("%d:%d", lim.Cur, lim.Max)
	}
	for _, p := range strings.Split(os.Getenv("PROBE_SHOW"), ":") {
		if p != "" {
			b, _ := os.ReadFile(p)
			r.Files[p] = string(b)
		}
	}
	b, _ := json.Marshal(r)
	fmt.Printf("PROBE %s\n", b)
}
