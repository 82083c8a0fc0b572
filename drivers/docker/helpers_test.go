package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/client"
	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/testutil/dockertest"
	"github.com/drover-project/drover/testutil/images"
	"github.com/drover-project/drover/testutil/registry"
)

// Docker-backed tests run one after the other (pull counters and layer
// sharing between images make parallel runs flaky) and keep short timeouts.

// testEnv is a driver, a docker client and a registry for one test.
type testEnv struct {
	t   *testing.T
	d   *Driver
	cli *client.Client
	reg *registry.Registry
}

// newEnv skips the test loudly when no Docker engine answers.
func newEnv(t *testing.T) *testEnv {
	t.Helper()
	cli := dockertest.Client(t)
	w := &testWriter{t: t}
	t.Cleanup(w.close) // runs last: goroutines that outlive the test log nowhere
	return &testEnv{
		t:   t,
		d:   New(hclog.New(&hclog.LoggerOptions{Name: "docker", Level: hclog.Debug, Output: w})),
		cli: cli,
		reg: registry.Start(t, registry.Options{}),
	}
}

// testWriter sends log lines to the test log until the test ends.
type testWriter struct {
	t      *testing.T
	mu     sync.Mutex
	closed bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testWriter) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
}

// randomHex returns n random bytes in hex, for unique names and seeds.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// push builds the test web server image (with padding bytes of a fresh
// random seed, so its layer is new to the engine), pushes it as repo:tag
// and removes the local copy when the test ends. It returns the reference
// and the manifest digest.
func (e *testEnv) push(repo, tag, version string, padding int64) (string, string) {
	e.t.Helper()
	seed, _ := strconv.ParseInt(randomHex(7), 16, 64)
	img, err := images.Build(images.BuildOptions{Version: version, PaddingBytes: padding, Seed: seed + 1})
	require.NoError(e.t, err)
	ref := e.reg.Ref(repo, tag)
	digest, err := images.Push(img, ref)
	require.NoError(e.t, err)
	dockertest.RemoveImageOnCleanup(e.t, e.cli, ref)
	dockertest.RemoveImageOnCleanup(e.t, e.cli, ref[:strings.LastIndex(ref, ":")]+"@"+digest)
	return ref, digest
}

// freePort returns a free TCP port on 127.0.0.1.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// taskConfig returns a task config running image with its port "http"
// published on a free host port (returned), labelled drover.test=1.
func (e *testEnv) taskConfig(image string, extra map[string]any) (*drivers.TaskConfig, int) {
	e.t.Helper()
	root := e.t.TempDir()
	allocID := "test" + randomHex(8)
	port := freePort(e.t)
	cfg := &drivers.TaskConfig{
		ID: allocID + "/web", AllocID: allocID, TaskName: "web", TaskGroup: "g", JobName: "job", Namespace: "default",
		Config: map[string]any{"image": image, "ports": []any{"http"}, "labels": map[string]any{dockertest.LabelKey: dockertest.LabelValue}},
		Env: map[string]string{
			"NOMAD_PORT_http": strconv.Itoa(images.Port), "NOMAD_HOST_PORT_http": strconv.Itoa(port), "NOMAD_IP_http": "127.0.0.1",
			"NOMAD_ALLOC_ID": allocID,
		},
		AllocDir:   filepath.Join(root, "alloc"),
		TaskDir:    filepath.Join(root, "web"),
		PrivateDir: filepath.Join(root, ".private", "web"),
		StdoutPath: filepath.Join(root, "alloc", "logs", "web.stdout.0"),
		StderrPath: filepath.Join(root, "alloc", "logs", "web.stderr.0"),
		MemoryMB:   64,
		CPU:        100,
	}
	for k, v := range extra {
		cfg.Config[k] = v
	}
	require.NoError(e.t, os.MkdirAll(cfg.PrivateDir, 0o700)) // the alloc dir builds it
	// Whatever happens, the container goes when the test ends.
	e.t.Cleanup(func() {
		dockertest.RemoveContainerOnCleanup(e.t, e.cli, containerName(cfg))
	})
	return cfg, port
}

// start starts cfg and destroys the task when the test ends.
func (e *testEnv) start(cfg *drivers.TaskConfig) *drivers.TaskHandle {
	e.t.Helper()
	h, err := e.d.StartTask(cfg)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { _ = e.d.DestroyTask(cfg.ID, true) })
	return h
}

// get GETs http://127.0.0.1:port/ until it answers (up to 15s).
func get(t *testing.T, port int) string {
	t.Helper()
	var last error
	c := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
		if err == nil {
			b, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr == nil && resp.StatusCode == http.StatusOK {
				return string(b)
			}
			err = fmt.Errorf("status %d, read error %v", resp.StatusCode, rerr)
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("GET on port %d never answered: %v", port, last)
	return ""
}

// wait waits up to 30s for the task's exit result.
func (e *testEnv) wait(taskID string) *drivers.ExitResult {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch, err := e.d.WaitTask(ctx, taskID)
	require.NoError(e.t, err)
	res, ok := <-ch
	require.True(e.t, ok, "no exit result within 30s")
	return res
}

// eventually waits up to 10s for a file to contain s.
func eventuallyContains(t *testing.T, path, s string) string {
	t.Helper()
	var got string
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(path)
		got = string(b)
		return strings.Contains(got, s)
	}, 10*time.Second, 50*time.Millisecond, "%s never contained %q", path, s)
	return got
}

func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
