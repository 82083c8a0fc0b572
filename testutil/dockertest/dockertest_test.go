package dockertest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/testutil/dockertest"
	"github.com/drover-project/drover/testutil/images"
	"github.com/drover-project/drover/testutil/registry"
)

// TestPullErrors checks that Pull turns registry failures into errors.
func TestPullErrors(t *testing.T) {
	cli := dockertest.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reg := registry.Start(t, registry.Options{})

	if err := dockertest.Pull(ctx, cli, reg.Ref("drover-test/missing", "v1"), nil); err == nil {
		t.Fatal("pull of a missing tag succeeded")
	} else {
		t.Logf("missing tag: %v", err)
	}

	img, err := images.Build(images.BuildOptions{Version: "1"})
	if err != nil {
		t.Fatal(err)
	}
	ref := reg.Ref("drover-test/failing", "v1")
	if _, err := images.Push(img, ref); err != nil {
		t.Fatal(err)
	}
	dockertest.RemoveImageOnCleanup(t, cli, ref)
	reg.FailManifests(true)
	err = dockertest.Pull(ctx, cli, ref, nil)
	if err == nil {
		t.Fatal("pull succeeded while manifests fail")
	}
	t.Logf("failing manifests: %v", err)
	if !strings.Contains(err.Error(), "500") {
		t.Errorf("error does not mention the 500: %v", err)
	}

	reg.FailManifests(false)
	var msgs int
	if err := dockertest.Pull(ctx, cli, ref, func(dockertest.PullMessage) { msgs++ }); err != nil {
		t.Fatal(err)
	}
	if msgs == 0 {
		t.Error("progress callback never called")
	}
}
