package dockertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/drover-project/drover/testutil/images"
)

// Label marks containers and images created by tests.
const (
	LabelKey   = images.LabelKey
	LabelValue = images.LabelValue
)

// Labels returns a fresh {drover.test: 1} map for container configs.
func Labels() map[string]string { return map[string]string{LabelKey: LabelValue} }

// RequireEnv, when set to 1, turns the skip of Client into a failure.
const RequireEnv = "DROVER_REQUIRE_DOCKER"

// New returns a client for the engine named by the environment (DOCKER_HOST
// etc., default the local socket) with API version negotiation, after a
// successful Ping.
func New(ctx context.Context) (*client.Client, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := cli.Ping(pctx); err != nil {
		cli.Close()
		return nil, err
	}
	return cli, nil
}

// Client returns a client for the local Docker engine, closed in
// t.Cleanup. If no engine answers, it skips the test with a loud message on
// the test log and on stderr (or fails it when DROVER_REQUIRE_DOCKER=1).
func Client(t testing.TB) *client.Client {
	t.Helper()
	cli, err := New(context.Background())
	if err != nil {
		msg := fmt.Sprintf("DOCKER NOT AVAILABLE: skipping %s: %v", t.Name(), err)
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("%s (and %s=1)", msg, RequireEnv)
		}
		fmt.Fprintf(os.Stderr, "\n!!!!!!!! %s !!!!!!!!\n\n", msg)
		t.Log(msg)
		t.Skip(msg)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// PullMessage is one message of dockerd's pull progress stream.
type PullMessage struct {
	Status   string `json:"status,omitempty"`
	ID       string `json:"id,omitempty"`
	Progress *struct {
		Current int64 `json:"current,omitempty"`
		Total   int64 `json:"total,omitempty"`
	} `json:"progressDetail,omitempty"`
	ErrorDetail *struct {
		Message string `json:"message,omitempty"`
	} `json:"errorDetail,omitempty"`
	Error string `json:"error,omitempty"`
}

// Pull pulls ref and waits for the pull to finish. An error reported inside
// the progress stream (dockerd answers 200 and then streams the failure) is
// returned as an error. progress, if not nil, sees every message.
func Pull(ctx context.Context, cli client.APIClient, ref string, progress func(PullMessage)) error {
	rc, err := cli.ImagePull(ctx, ref, image.PullOptions{})
	if err != nil {
		return fmt.Errorf("pull %s: %w", ref, err)
	}
	defer rc.Close()
	dec := json.NewDecoder(rc)
	for {
		var m PullMessage
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("pull %s: reading progress: %w", ref, err)
		}
		if progress != nil {
			progress(m)
		}
		switch {
		case m.ErrorDetail != nil && m.ErrorDetail.Message != "":
			return fmt.Errorf("pull %s: %s", ref, m.ErrorDetail.Message)
		case m.Error != "":
			return fmt.Errorf("pull %s: %s", ref, m.Error)
		}
	}
}

// RemoveImageOnCleanup removes the image ref (forced, with untagged
// parents) when the test ends; a missing image is not an error.
func RemoveImageOnCleanup(t testing.TB, cli client.APIClient, ref string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := cli.ImageRemove(ctx, ref, image.RemoveOptions{Force: true, PruneChildren: true})
		if err != nil && !client.IsErrNotFound(err) {
			t.Logf("cleanup: remove image %s: %v", ref, err)
		}
	})
}

// RemoveContainerOnCleanup force-removes the container (and its anonymous
// volumes) when the test ends.
func RemoveContainerOnCleanup(t testing.TB, cli client.APIClient, id string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !client.IsErrNotFound(err) {
			t.Logf("cleanup: remove container %s: %v", id, err)
		}
	})
}
