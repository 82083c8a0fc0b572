package dockertest_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/drover-project/drover/testutil/dockertest"
	"github.com/drover-project/drover/testutil/images"
	"github.com/drover-project/drover/testutil/registry"
)

// engineTestEnv opts in to TestPrivateEngines: it starts two extra Docker
// engines, which the normal suite must not do.
const engineTestEnv = "DROVER_PRIVATE_ENGINES"

// TestPrivateEngines: two private engines pull one image each on their
// own (the registry serves its layer twice, the second engine does not see
// the first's image), a host-network container answers on its port, and
// teardown leaves no process, mount or directory behind.
//
//	DROVER_PRIVATE_ENGINES=1 go test -run TestPrivateEngines ./testutil/dockertest/
func TestPrivateEngines(t *testing.T) {
	if os.Getenv(engineTestEnv) != "1" {
		t.Skipf("starts two extra Docker engines; set %s=1 to run", engineTestEnv)
	}
	// The machine engine's bridge survives private engines (a dockerd
	// started with "--bridge none" would delete it).
	if exec.Command("ip", "link", "show", "docker0").Run() == nil {
		t.Cleanup(func() {
			if err := exec.Command("ip", "link", "show", "docker0").Run(); err != nil {
				t.Errorf("docker0 is gone after private engines ran: %v", err)
			}
		})
	}
	reg := registry.Start(t, registry.Options{})
	img, err := images.Build(images.BuildOptions{Version: "1", PaddingBytes: 1 << 20, Seed: time.Now().UnixNano()})
	if err != nil {
		t.Fatal(err)
	}
	ref := reg.Ref("drover-test/engines", "v1")
	if _, err := images.Push(img, ref); err != nil {
		t.Fatal(err)
	}
	layers, _ := img.Layers()
	padDigest, _ := layers[len(layers)-1].Digest()

	var roots []string
	var pids []int
	t.Run("engines", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		a := dockertest.StartEngine(t, dockertest.EngineOptions{})
		b := dockertest.StartEngine(t, dockertest.EngineOptions{})
		roots = append(roots, a.Root, b.Root)
		for _, e := range []*dockertest.Engine{a, b} {
			raw, err := os.ReadFile(e.Root + "/dockerd.pid")
			if err != nil {
				t.Fatal(err)
			}
			var pid int
			fmt.Sscan(string(raw), &pid)
			pids = append(pids, pid)
		}
		if a.Host == b.Host {
			t.Fatalf("both engines at %s", a.Host)
		}
		ca, cb := a.Client(t), b.Client(t)

		if err := dockertest.Pull(ctx, ca, ref, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := cb.ImageInspect(ctx, ref); err == nil {
			t.Fatal("engine b sees the image engine a pulled")
		}
		if err := dockertest.Pull(ctx, cb, ref, nil); err != nil {
			t.Fatal(err)
		}
		if got := reg.BlobPulls(padDigest.String()); got != 2 {
			t.Errorf("padding layer served %d times, want 2 (once per engine)", got)
		}

		port := freeTCPPort(t)
		created, err := ca.ContainerCreate(ctx,
			&container.Config{Image: ref, Labels: dockertest.Labels(), Env: []string{fmt.Sprintf("PORT=%d", port)}},
			&container.HostConfig{NetworkMode: "host"}, nil, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := ca.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
			t.Fatalf("start: %v\n%s", err, a.LogTail(20))
		}
		if body := getBody(t, fmt.Sprintf("http://127.0.0.1:%d/", port), 30*time.Second); body != "version 1\n" {
			t.Errorf("container answered %q", body)
		}
		// Left running: teardown removes it.
	})
	if len(roots) != 2 {
		t.Fatal("engines did not start")
	}
	for i, root := range roots {
		if _, err := os.Stat(root); !os.IsNotExist(err) {
			t.Errorf("engine dir %s still there after teardown (%v)", root, err)
		}
		if err := syscall.Kill(pids[i], 0); err == nil {
			t.Errorf("dockerd pid %d still runs after teardown", pids[i])
		}
		mounts, _ := os.ReadFile("/proc/self/mountinfo")
		if strings.Contains(string(mounts), root) {
			t.Errorf("a mount under %s remains after teardown", root)
		}
	}
}

func freeTCPPort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func getBody(t *testing.T, url string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return string(b)
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("GET %s: no answer within %v: %v", url, timeout, last)
	return ""
}
