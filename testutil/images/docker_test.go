package images_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/go-connections/nat"

	"github.com/drover-project/drover/testutil/dockertest"
	"github.com/drover-project/drover/testutil/images"
	"github.com/drover-project/drover/testutil/registry"
)

// TestDockerPullAndRun builds an image, pushes it to the in-process
// registry, has the real Docker engine pull it over plain HTTP from
// 127.0.0.1, runs it with a published port and talks to it.
func TestDockerPullAndRun(t *testing.T) {
	cli := dockertest.Client(t) // skips loudly without a Docker engine
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	reg := registry.Start(t, registry.Options{})
	repo := fmt.Sprintf("drover-test/web-%d", time.Now().UnixNano())
	const pad = 1 << 20

	// v1 and v2 share the padding layer (same Seed).
	img1, err := images.Build(images.BuildOptions{Version: "1", PaddingBytes: pad, Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	img2, err := images.Build(images.BuildOptions{Version: "2", PaddingBytes: pad, Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	ref1, ref2 := reg.Ref(repo, "v1"), reg.Ref(repo, "v2")
	d1, err := images.Push(img1, ref1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := images.Push(img2, ref2); err != nil {
		t.Fatal(err)
	}
	layers, _ := img1.Layers()
	padDigest, _ := layers[1].Digest()

	dockertest.RemoveImageOnCleanup(t, cli, ref1)
	dockertest.RemoveImageOnCleanup(t, cli, ref2)
	start := time.Now()
	if err := dockertest.Pull(ctx, cli, ref1, nil); err != nil {
		t.Fatal(err)
	}
	t.Logf("docker pulled %s (%s) in %v, %d blob bytes", ref1, d1, time.Since(start), reg.TotalBlobBytes())
	if got := reg.BlobPulls(padDigest.String()); got != 1 {
		t.Errorf("padding layer pulled %d times, want 1", got)
	}
	if reg.ManifestHeads(repo+":v1")+reg.ManifestGets(repo+":v1") == 0 {
		t.Error("no manifest request for v1 recorded")
	}
	if got := reg.ManifestGets(repo + "@" + d1); got == 0 {
		t.Logf("note: dockerd did not GET the manifest by digest (%d)", got)
	}
	inspect, err := cli.ImageInspect(ctx, ref1)
	if err != nil {
		t.Fatal(err)
	}
	if inspect.Config == nil || inspect.Config.Labels[images.LabelKey] != images.LabelValue {
		t.Errorf("image labels: %+v", inspect.Config)
	}

	// v2 shares the server and padding layers: only its config is new.
	before := reg.TotalBlobBytes()
	if err := dockertest.Pull(ctx, cli, ref2, nil); err != nil {
		t.Fatal(err)
	}
	if got := reg.BlobPulls(padDigest.String()); got != 1 {
		t.Errorf("after v2: padding layer pulled %d times, want 1", got)
	}
	if delta := reg.TotalBlobBytes() - before; delta >= pad {
		t.Errorf("v2 pull downloaded %d blob bytes; the shared layers should not be fetched again", delta)
	}

	// The bandwidth limit applies to what dockerd downloads: 1 MiB of new
	// padding at 512 KiB/s takes about 2s.
	img3, err := images.Build(images.BuildOptions{Version: "3", PaddingBytes: pad, Seed: 43})
	if err != nil {
		t.Fatal(err)
	}
	ref3 := reg.Ref(repo, "v3")
	if _, err := images.Push(img3, ref3); err != nil {
		t.Fatal(err)
	}
	dockertest.RemoveImageOnCleanup(t, cli, ref3)
	reg.SetBandwidth(512 << 10)
	start = time.Now()
	if err := dockertest.Pull(ctx, cli, ref3, nil); err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	reg.SetBandwidth(0)
	t.Logf("docker pull of 1 MiB new layer at 512 KiB/s: %v", el)
	if el < 1500*time.Millisecond {
		t.Errorf("throttled docker pull took %v, want >= 1.5s", el)
	}

	// Run v1 with 8080/tcp published on a Docker-chosen free loopback port.
	port := nat.Port(fmt.Sprintf("%d/tcp", images.Port))
	created, err := cli.ContainerCreate(ctx,
		&container.Config{
			Image:        ref1,
			Labels:       dockertest.Labels(),
			ExposedPorts: nat.PortSet{port: {}},
		},
		&container.HostConfig{
			PortBindings: nat.PortMap{port: {{HostIP: "127.0.0.1", HostPort: ""}}},
		},
		nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	dockertest.RemoveContainerOnCleanup(t, cli, created.ID)
	if err := cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	info, err := cli.ContainerInspect(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	bindings := info.NetworkSettings.Ports[port]
	if len(bindings) == 0 || bindings[0].HostPort == "" {
		t.Fatalf("no host port bound for %s: %+v", port, info.NetworkSettings.Ports)
	}
	base := "http://127.0.0.1:" + bindings[0].HostPort
	if body := waitBody(t, base+"/", 30*time.Second); body != "version 1\n" {
		t.Fatalf("GET / = %q, want %q", body, "version 1\n")
	}
	if body := waitBody(t, base+"/health", 5*time.Second); strings.TrimSpace(body) != "ok" {
		t.Errorf("GET /health = %q", body)
	}

	// The server handles SIGTERM as PID 1: docker stop is quick.
	timeout := 10
	start = time.Now()
	if err := cli.ContainerStop(ctx, created.ID, container.StopOptions{Timeout: &timeout}); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("docker stop took %v; SIGTERM not handled?", el)
	}
	info, err = cli.ContainerInspect(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.ExitCode != 0 {
		t.Errorf("container exit code %d, want 0", info.State.ExitCode)
	}
}

// waitBody polls url until it answers 200 and returns the body.
func waitBody(t *testing.T, url string, timeout time.Duration) string {
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
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("GET %s: no answer within %v: %v", url, timeout, last)
	return ""
}
