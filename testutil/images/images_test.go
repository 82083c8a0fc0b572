package images

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func digest(t *testing.T, img v1.Image) string {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

func layerDigests(t *testing.T, img v1.Image) []string {
	t.Helper()
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range ls {
		d, err := l.Digest()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d.String())
	}
	return out
}

func build(t *testing.T, o BuildOptions) v1.Image {
	t.Helper()
	img, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func TestBuildDeterministic(t *testing.T) {
	a := build(t, BuildOptions{Version: "1", PaddingBytes: 64 << 10})
	b := build(t, BuildOptions{Version: "1", PaddingBytes: 64 << 10})
	if digest(t, a) != digest(t, b) {
		t.Fatal("two builds of the same options differ")
	}
	c := build(t, BuildOptions{Version: "2", PaddingBytes: 64 << 10})
	if digest(t, a) == digest(t, c) {
		t.Fatal("versions 1 and 2 have the same digest")
	}
	la, lc := layerDigests(t, a), layerDigests(t, c)
	if len(la) != 2 || len(lc) != 2 {
		t.Fatalf("layers: %d and %d, want 2", len(la), len(lc))
	}
	if la[0] != lc[0] {
		t.Error("server layer differs between versions")
	}
	if la[1] == lc[1] {
		t.Error("seed 0: padding should differ between versions")
	}

	// Same explicit seed: the padding layer is shared.
	s1 := build(t, BuildOptions{Version: "1", PaddingBytes: 64 << 10, Seed: 42})
	s2 := build(t, BuildOptions{Version: "2", PaddingBytes: 64 << 10, Seed: 42})
	if layerDigests(t, s1)[1] != layerDigests(t, s2)[1] {
		t.Error("same seed: padding layers differ")
	}
	if digest(t, s1) == digest(t, s2) {
		t.Error("same seed, different versions: same image digest")
	}

	if n := len(layerDigests(t, build(t, BuildOptions{Version: "1"}))); n != 1 {
		t.Errorf("no padding: %d layers, want 1", n)
	}
}

func TestBuildContents(t *testing.T) {
	const pad = 256 << 10
	img := build(t, BuildOptions{Version: "7", PaddingBytes: pad, Seed: 3})
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s", cf.OS, cf.Architecture)
	}
	if !slices.Equal(cf.Config.Entrypoint, []string{"/server"}) {
		t.Errorf("Entrypoint %v", cf.Config.Entrypoint)
	}
	if !slices.Equal(cf.Config.Env, []string{"VERSION=7", "PORT=8080"}) {
		t.Errorf("Env %v", cf.Config.Env)
	}
	if _, ok := cf.Config.ExposedPorts["8080/tcp"]; !ok {
		t.Errorf("ExposedPorts %v", cf.Config.ExposedPorts)
	}
	if cf.Config.Labels[LabelKey] != LabelValue {
		t.Errorf("Labels %v", cf.Config.Labels)
	}

	ls, _ := img.Layers()
	files := map[string]*tar.Header{}
	for _, l := range ls {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = h
		}
		rc.Close()
	}
	if h := files["server"]; h == nil || h.Mode&0o111 == 0 {
		t.Errorf("server entry: %+v", h)
	}
	if h := files["padding"]; h == nil || h.Size != pad {
		t.Errorf("padding entry: %+v", h)
	}
	// Incompressible: the compressed padding layer is not smaller.
	if sz, _ := ls[1].Size(); sz < pad {
		t.Errorf("compressed padding layer %d bytes < %d", sz, pad)
	}
}

// TestServerBinary runs the server on the host (it is a static linux
// binary) to check its answers and that SIGTERM stops it promptly.
func TestServerBinary(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the server binary is built for linux")
	}
	bin, err := ServerBinary()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(bin, []byte("\x7fELF")) {
		t.Fatal("server is not an ELF binary")
	}
	path := filepath.Join(t.TempDir(), "server")
	if err := os.WriteFile(path, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()

	cmd := exec.Command(path)
	cmd.Env = []string{"VERSION=3", fmt.Sprintf("PORT=%d", port)}
	var logs syncBuffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		t.Logf("server output:\n%s", logs.String())
	})

	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	body := waitGet(t, base+"/", 10*time.Second)
	if body != "version 3\n" {
		t.Fatalf("GET / = %q", body)
	}
	resp, err := http.Get(base + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /health: %v %v", resp, err)
	}
	resp.Body.Close()
	resp, err = http.Get(base + "/nope")
	if err != nil || resp.StatusCode != 404 {
		t.Fatalf("GET /nope: %v %v", resp, err)
	}
	resp.Body.Close()

	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Fatalf("server exit: %v", waitErr)
		}
		t.Logf("server stopped %v after SIGTERM", time.Since(start))
	case <-time.After(3 * time.Second):
		t.Fatal("server did not stop within 3s of SIGTERM")
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitGet polls url until it answers 200 and returns the body.
func waitGet(t testing.TB, url string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			b, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && rerr == nil {
				return string(b)
			}
			err = fmt.Errorf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("GET %s: no answer within %v: %v", url, timeout, last)
	return ""
}
